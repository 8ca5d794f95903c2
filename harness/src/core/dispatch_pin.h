// The host thread that launches timed calls gets a physical core of its own for the timed loop.
// A call's pkb-method time includes its host dispatch (tens of µs for PyTorch eager), so a dispatch thread that the
// scheduler moves between cores, or that shares a core's SMT sibling with a busy thread (NCCL's proxy, a pool's
// spin), can make medians step between levels from one timing to the next (seen on the H200 node: an eager
// baseline at 36 us in two timings, 75 us in the next three, in one process). Pinning is what nccl-tests and
// torchrun users do by hand (numactl, --bind-to core); pkb does it for every timing, and the records say where.
// Each local rank takes a distinct physical core counted from the last (the first cores take most interrupts); the
// process's other threads move to the allowed CPUs outside every local rank's dispatch core while it is held.
// Nothing is pinned where the allowed CPUs hold fewer than two physical cores per local rank (then it would take
// half the process's CPUs), e.g. for two ranks on the 2-core CI machine. The choice is made here only:
// run_reference.py's ranks (pkb starts them) get their plan in the environment (dispatch_plan_env) and
// harness/python/dispatch_pin.py just applies it.
#pragma once

#include <sched.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pkb {

// A kernel CPU list ("0-3,8,10-11") as CPUs, ascending; empty for text that is not one.
std::vector<int> parse_cpu_list(const std::string& text);

// The CPUs of `allowed` grouped by physical core (thread_siblings_list under sys_cpu/cpuN/topology; a CPU
// without that file is a core of its own), each group ascending, groups ordered by their first CPU.
std::vector<std::vector<int>> physical_cores(const std::vector<int>& allowed,
                                             const std::filesystem::path& sys_cpu = "/sys/devices/system/cpu");

// The dispatch core of each of `local_ranks` ranks (index = local rank): distinct physical cores from the last one
// down; empty when there are fewer than 2 * local_ranks cores.
std::vector<std::vector<int>> dispatch_cores(const std::vector<std::vector<int>>& cores, int local_ranks);

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

// Where a pin puts a rank's threads: the dispatching thread on `cpu`, every other thread on `others`. cpu -1 (and
// `note` says why): nothing is pinned.
struct DispatchPlan {
  int cpu = -1;
  std::vector<int> others;
  std::string note;
};
DispatchPlan dispatch_plan(int local_rank, int local_ranks, const std::vector<int>& allowed,
                           const std::filesystem::path& sys_cpu = "/sys/devices/system/cpu");

// A plan as the environment of a process that applies it itself (run_reference.py's ranks): PKB_DISPATCH_CPU and
// PKB_DISPATCH_OTHERS (CPUs, comma-separated), both empty where nothing is pinned and PKB_DISPATCH_NOTE says why.
std::map<std::string, std::string> dispatch_plan_env(const DispatchPlan& plan);

// While alive: the calling thread runs on the first CPU of its rank's dispatch core, every other thread of the
// process on the allowed CPUs outside all local ranks' dispatch cores. The destructor restores every thread's
// mask (threads that exited meanwhile are skipped). Never throws: where pinning is impossible it does nothing
// and note() says why. A pin made while another is held changes nothing and reports the held one's CPU (the
// candidate pass holds one over all its judged calls, the timed loop asks for one inside it).
class DispatchPin {
 public:
  DispatchPin(int local_rank, int local_ranks, const std::filesystem::path& sys_cpu = "/sys/devices/system/cpu");
  DispatchPin();  // with the slot set_dispatch_slot gave; without one, not pinned
  ~DispatchPin();
  DispatchPin(const DispatchPin&) = delete;
  DispatchPin& operator=(const DispatchPin&) = delete;

  int cpu() const { return cpu_; }  // -1: not pinned
  const std::string& note() const { return note_; }

 private:
  std::vector<std::pair<int, cpu_set_t>> saved_;  // (thread id, its mask before)
  bool owner_ = false;                            // false: not pinned, or inside another pin
  int cpu_ = -1;
  std::string note_;
};

// This process's place among the ranks of its node, set once at a rank's start (pkb-rank's make_worker_env).
void set_dispatch_slot(int local_rank, int local_ranks);

// A thread started while a DispatchPin is held inherits its creator's mask: the pinned thread's one CPU, if that
// created it. Worker threads (core/parallel.h) call this first: while a pin is held they move to the CPUs outside
// the dispatch cores; otherwise it does nothing.
void move_off_dispatch_cores();

}  // namespace pkb
