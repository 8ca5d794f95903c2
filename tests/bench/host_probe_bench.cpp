// Benchmark (not a test): the host probes as a timing takes them, in one process. Host drift compares two processes'
// chase probes (a candidate's timing against its cached baseline's, eval/evaluate.h kHostDriftRatio), so what
// matters is how far apart two processes' medians fall on an idle host: scripts/bench_host_probe.sh runs this many
// times and prints that spread.
// Usage: pkb_bench_host_probe [--table-kib K] [--walks N] [--reps R] [--evict-mib M]
//   (defaults: the probe's own shape, 5 repetitions, 64 MiB written before each like a repetition's input copies).
// Prints: the median chase probe, the median multiply chain (us).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "worker/host_probes.h"
#include "worker/sample_stats.h"

int main(int argc, char** argv) {
  long table_kib = static_cast<long>(pkb::kChaseTableBytes >> 10), evict_mib = 64, walks = pkb::kChaseWalks, reps = 5;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    long* value = a == "--table-kib"   ? &table_kib
                  : a == "--walks"     ? &walks
                  : a == "--reps"      ? &reps
                  : a == "--evict-mib" ? &evict_mib
                                       : nullptr;
    if (!value || i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s\n", a.c_str(), value ? "needs a value" : "unknown option");
      return 2;
    }
    *value = std::atol(argv[i + 1]);
  }
  if (table_kib <= 0 || walks < 1 || reps < 1 || evict_mib < 0) {
    std::fprintf(stderr, "--table-kib, --walks and --reps must be positive, --evict-mib not negative\n");
    return 2;
  }
  const std::vector<uint32_t> table = pkb::single_cycle_permutation(
      static_cast<uint32_t>((static_cast<size_t>(table_kib) << 10) / sizeof(uint32_t)), 0x5eed);
  std::vector<char> copies(static_cast<size_t>(evict_mib) << 20);
  std::vector<double> chase, chain;
  for (int r = 0; r < reps; ++r) {
    std::memset(copies.data(), r + 1, copies.size());  // what a repetition's input copies leave in the caches
    pkb::wake_host_core(pkb::kProbeWakeUs);
    chain.push_back(pkb::host_probe_us());
    chase.push_back(pkb::chase_probe_us(table, static_cast<int>(walks)));
  }
  // The median as host drift takes it (eval/evaluate.cpp host_speed): summarize's.
  std::printf("%.2f %.2f\n", pkb::summarize(chase).median, pkb::summarize(chain).median);
  return 0;
}
