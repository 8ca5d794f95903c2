// Benchmark (not a test): the host probes as a timing takes them, in one process. Host drift compares two processes'
// chase probes (a candidate's timing against its cached baseline's, eval/evaluate.h kHostDriftRatio), so what
// matters is how far apart two processes' medians fall on an idle host: scripts/bench_host_probe.sh runs this many
// times and prints that spread.
// Usage: pkb_bench_host_probe [--table-kib K] [--walks N] [--reps R] [--evict-mib M] [--huge 1]
//   (defaults: the probe's own shape, 5 repetitions, 64 MiB written before each like a repetition's input copies;
//   --huge 1 puts the table in one 2 MiB-aligned region asked to be a transparent huge page, so that its place in
//   physically indexed caches is the same in every process).
// Prints: the median chase probe, the median multiply chain (us), and with --huge whether the table got a huge page.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "worker/host_probes.h"
#include "worker/sample_stats.h"

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// Whether the mapping holding `p` has huge pages (AnonHugePages in /proc/self/smaps).
bool backed_by_huge_page(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::strtol(line.c_str() + 14, nullptr, 10) > 0;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  long table_kib = static_cast<long>(pkb::kChaseTableBytes >> 10), evict_mib = 64, walks = pkb::kChaseWalks, reps = 5;
  long huge = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    long* value = a == "--table-kib"   ? &table_kib
                  : a == "--walks"     ? &walks
                  : a == "--reps"      ? &reps
                  : a == "--evict-mib" ? &evict_mib
                  : a == "--huge"      ? &huge
                                       : nullptr;
    if (!value || i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s\n", a.c_str(), value ? "needs a value" : "unknown option");
      return 2;
    }
    *value = std::atol(argv[i + 1]);
  }
  if (table_kib <= 0 || walks < 1 || reps < 1 || evict_mib < 0 || (huge && (size_t(table_kib) << 10) > kHugePage)) {
    std::fprintf(stderr,
                 "--table-kib, --walks and --reps must be positive, --evict-mib not negative, and a --huge table"
                 " at most 2048 KiB\n");
    return 2;
  }
  const std::vector<uint32_t> table = pkb::single_cycle_permutation(
      static_cast<uint32_t>((static_cast<size_t>(table_kib) << 10) / sizeof(uint32_t)), 0x5eed);
  std::span<const uint32_t> probed = table;
  void* region = nullptr;
  if (huge) {
    region = std::aligned_alloc(kHugePage, kHugePage);
    if (!region) return 1;
    madvise(region, kHugePage, MADV_HUGEPAGE);
    std::memset(region, 0, kHugePage);  // faulted in whole, as one huge page where the kernel grants it
    std::memcpy(region, table.data(), table.size() * sizeof(uint32_t));
    probed = {static_cast<const uint32_t*>(region), table.size()};
  }
  std::vector<char> copies(static_cast<size_t>(evict_mib) << 20);
  std::vector<double> chase, chain;
  for (int r = 0; r < reps; ++r) {
    std::memset(copies.data(), r + 1, copies.size());  // what a repetition's input copies leave in the caches
    pkb::wake_host_core(pkb::kProbeWakeUs);
    chain.push_back(pkb::host_probe_us());
    chase.push_back(pkb::chase_probe_us(probed, static_cast<int>(walks)));
  }
  // The median as host drift takes it (eval/evaluate.cpp host_speed): summarize's.
  std::printf("%.2f %.2f", pkb::summarize(chase).median, pkb::summarize(chain).median);
  if (huge) std::printf(" %s", backed_by_huge_page(region) ? "huge" : "small");
  std::printf("\n");
  std::free(region);
  return 0;
}
