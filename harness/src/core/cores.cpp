#include "core/cores.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace pkb {

std::optional<int> cores_from_cpu_max(const std::string& text) {
  std::istringstream in(text);
  std::string quota;
  double period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return std::nullopt;
  try {
    double q = std::stod(quota);
    if (q <= 0) return std::nullopt;
    return std::max(1, static_cast<int>(std::ceil(q / period)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

namespace {

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The quota of this process's own cgroup (v2: /proc/self/cgroup's "0::PATH"), else of the v1 cpu controller.
std::optional<int> cgroup_quota_cores() {
  std::ifstream groups("/proc/self/cgroup");
  for (std::string line; std::getline(groups, line);) {
    if (line.rfind("0::", 0) == 0) {
      std::optional<int> least;
      std::string path = "/sys/fs/cgroup" + line.substr(3);
      for (; path.size() >= 14; path = path.substr(0, path.rfind('/')))  // every ancestor's limit binds as well
        if (auto c = cores_from_cpu_max(read_all(path + "/cpu.max")); c && (!least || *c < *least)) least = c;
      return least;
    }
  }
  std::string quota = read_all("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
              period = read_all("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  if (quota.empty() || period.empty() || quota.rfind("-1", 0) == 0) return std::nullopt;
  return cores_from_cpu_max(quota + " " + period);
}

}  // namespace

int usable_cores() {
  static const int cores = [] {
    int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = std::max(1, CPU_COUNT(&set));
    if (auto q = cgroup_quota_cores()) n = std::min(n, *q);
    return n;
  }();
  return cores;
}

}  // namespace pkb
