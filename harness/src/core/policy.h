// The two tolerance policies a check is judged by (docs/metrics.md): both are computed for every output and
// recorded; `robust` decides a sample's status, `paper_allclose` is ParallelKernelBench's allclose, for comparison
// (recorded as `pkb_pass`).
#pragma once

namespace pkb {

enum class Policy { robust, paper_allclose };

}  // namespace pkb
