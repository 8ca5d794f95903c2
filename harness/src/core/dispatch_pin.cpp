#include "core/dispatch_pin.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

namespace pkb {

std::vector<int> parse_cpu_list(const std::string& text) {
  std::set<int> cpus;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    part.erase(std::remove_if(part.begin(), part.end(), [](char c) { return c == '\n' || c == ' '; }), part.end());
    if (part.empty()) continue;
    size_t dash = part.find('-');
    try {
      size_t used = 0;
      int lo = std::stoi(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash)) return {};
      int hi = lo;
      if (dash != std::string::npos) {
        std::string rest = part.substr(dash + 1);
        hi = std::stoi(rest, &used);
        if (used != rest.size()) return {};
      }
      if (lo < 0 || hi < lo || hi - lo > CPU_SETSIZE) return {};
      for (int c = lo; c <= hi; ++c) cpus.insert(c);
    } catch (const std::exception&) {
      return {};
    }
  }
  return {cpus.begin(), cpus.end()};
}

std::vector<std::vector<int>> physical_cores(const std::vector<int>& allowed, const std::filesystem::path& sys_cpu) {
  const std::set<int> mine(allowed.begin(), allowed.end());
  std::map<int, std::vector<int>> by_first;  // first allowed sibling -> the core's allowed CPUs
  std::set<int> placed;
  for (int cpu : allowed) {
    if (placed.count(cpu)) continue;
    std::ifstream f(sys_cpu / ("cpu" + std::to_string(cpu)) / "topology" / "thread_siblings_list");
    std::stringstream text;
    text << f.rdbuf();
    std::vector<int> core;
    for (int sibling : parse_cpu_list(text.str()))
      if (mine.count(sibling) && !placed.count(sibling)) core.push_back(sibling);
    if (std::find(core.begin(), core.end(), cpu) == core.end()) core = {cpu};  // no (or a foreign) topology file
    placed.insert(core.begin(), core.end());
    by_first[core.front()] = core;
  }
  std::vector<std::vector<int>> cores;
  for (auto& [first, core] : by_first) cores.push_back(core);
  return cores;
}

std::vector<std::vector<int>> dispatch_cores(const std::vector<std::vector<int>>& cores, int local_ranks) {
  if (local_ranks < 1 || cores.size() < 2 * static_cast<size_t>(local_ranks)) return {};
  return {cores.rbegin(), cores.rbegin() + local_ranks};
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

DispatchPlan dispatch_plan(int local_rank, int local_ranks, const std::vector<int>& allowed,
                           const std::filesystem::path& sys_cpu) {
  DispatchPlan plan;
  if (local_ranks < 1 || local_rank < 0 || local_rank >= local_ranks) {
    plan.note = "not pinned: no local rank given";
    return plan;
  }
  const auto dispatch = dispatch_cores(physical_cores(allowed, sys_cpu), local_ranks);
  if (dispatch.empty()) {
    plan.note = "not pinned: " + std::to_string(allowed.size()) +
                " allowed CPUs hold fewer than 2 physical cores for each of " + std::to_string(local_ranks) +
                " local ranks";
    return plan;
  }
  std::set<int> reserved;
  for (const auto& core : dispatch) reserved.insert(core.begin(), core.end());
  for (int c : allowed)
    if (!reserved.count(c)) plan.others.push_back(c);
  plan.cpu = dispatch[local_rank].front();
  return plan;
}

std::map<std::string, std::string> dispatch_plan_env(const DispatchPlan& plan) {
  std::string others;
  for (int c : plan.others) others += (others.empty() ? "" : ",") + std::to_string(c);
  // All three, empty where unused: none is left to what the environment happened to hold.
  return {{"PKB_DISPATCH_CPU", plan.cpu < 0 ? "" : std::to_string(plan.cpu)},
          {"PKB_DISPATCH_OTHERS", plan.cpu < 0 ? "" : others},
          {"PKB_DISPATCH_NOTE", plan.note}};
}

namespace {

std::vector<pid_t> process_threads() {
  std::vector<pid_t> tids;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') tids.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
    closedir(d);
  }
  return tids;
}

std::atomic<int> slot_rank{-1}, slot_ranks{0};
std::mutex held_mutex;
std::optional<cpu_set_t> held_others;  // while a DispatchPin is held: where other threads run
int held_cpu = -1;                     // ... and the CPU it pinned its thread to

cpu_set_t mask_of(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

}  // namespace

DispatchPin::DispatchPin(int local_rank, int local_ranks, const std::filesystem::path& sys_cpu) {
  {
    std::lock_guard<std::mutex> lock(held_mutex);
    if (held_others) {  // inside a pin already (a whole pass holds one): its CPU, nothing to change or restore
      cpu_ = held_cpu;
      return;
    }
  }
  const DispatchPlan plan = dispatch_plan(local_rank, local_ranks, allowed_cpus(), sys_cpu);
  if (plan.cpu < 0) {
    note_ = plan.note;
    return;
  }
  const pid_t self = static_cast<pid_t>(syscall(SYS_gettid));
  std::vector<pid_t> tids = process_threads();
  tids.erase(std::remove(tids.begin(), tids.end(), self), tids.end());
  tids.insert(tids.begin(), self);  // this thread first: if it cannot be pinned, nothing else moves
  const cpu_set_t mine = mask_of({plan.cpu}), others = mask_of(plan.others);
  for (pid_t tid : tids) {
    cpu_set_t before;
    if (sched_getaffinity(tid, sizeof before, &before) != 0) continue;  // exited meanwhile
    if (sched_setaffinity(tid, sizeof(cpu_set_t), tid == self ? &mine : &others) != 0) {
      if (tid != self) continue;
      note_ = "not pinned: sched_setaffinity refused";  // a seccomp filter or a cgroup's cpuset
      return;
    }
    saved_.emplace_back(tid, before);
  }
  cpu_ = plan.cpu;
  owner_ = true;
  std::lock_guard<std::mutex> lock(held_mutex);
  held_others = others;
  held_cpu = cpu_;
}

void set_dispatch_slot(int local_rank, int local_ranks) {
  slot_rank = local_rank;
  slot_ranks = local_ranks;
}

DispatchPin::DispatchPin() : DispatchPin(slot_rank.load(), slot_ranks.load()) {}

DispatchPin::~DispatchPin() {
  if (owner_) {
    std::lock_guard<std::mutex> lock(held_mutex);
    held_others.reset();
    held_cpu = -1;
  }
  for (const auto& [tid, mask] : saved_) sched_setaffinity(tid, sizeof mask, &mask);
}

void move_off_dispatch_cores() {
  std::lock_guard<std::mutex> lock(held_mutex);
  if (held_others) sched_setaffinity(0, sizeof(cpu_set_t), &*held_others);
}

}  // namespace pkb
