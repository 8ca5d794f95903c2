// The host's speed as a timing's dispatching thread sees it, sampled before every repetition (worker/timing.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace pkb {

// Keeps this thread's core busy for `us` before the host probes: a core that idled (a repetition whose input copies
// the GPU drew while the host waited) runs them at a lower clock than one that just made copies, and on the H200's
// host that difference alone read as host drift (1.8x) and re-timed the baselines of every evaluation.
void wake_host_core(double us);
constexpr double kProbeWakeUs = 2000;

// Microseconds this thread takes for a fixed chain of dependent integer operations (~30 µs on a 3 GHz core):
// the host's speed as the dispatching thread sees it, sampled before every repetition.
double host_probe_us();

// Microseconds this thread takes for a fixed walk of dependent loads through one random cycle of a table half an L2
// (512 KiB, brought into the cache first, untimed), branching on each loaded value, the fastest of three walks: the
// host's speed for branchy, cache-bound code, which an SMT sibling or a tenant sharing the core's caches slows
// (a little over the multiply chain's time on an idle core). Sampled before every repetition beside host_probe_us().
double host_chase_probe_us();
// Its shape. Half a typical L2: 1 MiB filled the CI host's L2 exactly, and which of its lines conflicted then depended
// on each process's physical pages. The fastest of three walks: the first after a repetition's copies still pays for
// the TLB and predictor state they left, while a contended phase (~0.3-1 s) slows all three (docs/design/timing.md
// has the spreads between processes; scripts/bench_host_probe.sh measures them).
constexpr size_t kChaseTableBytes = size_t{512} << 10;
constexpr int kChaseSteps = 1 << 13, kChaseWalks = 3;
// The chase probe over `table` (a single cycle from 0), the fastest of `walks` walks: host_chase_probe_us() at its
// shape, other shapes for the benchmark.
double chase_probe_us(std::span<const uint32_t> table, int walks);

// A single cycle through 0..n-1 (Sattolo's shuffle, seeded): following it from any entry visits all n entries
// before returning. The chase probe's table; exposed for its test.
std::vector<uint32_t> single_cycle_permutation(uint32_t n, uint32_t seed);

}  // namespace pkb
