// The two tolerance policies a check is judged by (docs/metrics.md): both are computed for every output and
// recorded; `robust` decides a sample's status, `pkb` is ParallelKernelBench's allclose, for comparison.
#pragma once

namespace pkb {

enum class Policy { robust, pkb };

}  // namespace pkb
