// The evaluation slots' one queue, for `pkb run`'s samples and `--agent`'s alike: groups of one problem's samples
// (they share its cached reference pass, which must not be computed twice at once), each taken whole by the next
// free slot (one per W GPUs, or one on CPU ranks).
//
// One policy for pkb's own failures: a sample whose evaluation hit a harness error (the evaluation said
// harness_error, or threw) is recorded harness_error, which no reader counts as a sample and the next invocation
// evaluates again; its group's later samples are recorded so at once, untried, since they would fail the same way.
#pragma once

#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/parallel.h"

namespace pkb::run {

template <class Sample>
struct SlotWork {
  // Evaluates and records one sample on a slot's devices; returns "" or why pkb itself failed it (recorded already).
  std::function<std::string(const Sample&, const std::string& devices)> evaluate;
  // Records the sample harness_error, `why` being pkb's failure (a thrown error, or an earlier sample's).
  std::function<void(const Sample&, const std::string& why)> record_harness_error;
  // Called once per group that ended in a harness error, with the first failure (for a line on stderr).
  std::function<void(const Sample& first, const std::string& why)> group_failed;
};

template <class Sample>
void evaluate_on_slots(std::deque<std::vector<Sample>> groups, const std::vector<std::string>& slots,
                       const SlotWork<Sample>& work) {
  std::mutex mu;
  auto run_group = [&](const std::vector<Sample>& group, const std::string& devices) {
    std::string failure;
    for (const Sample& s : group) {
      if (!failure.empty()) {
        work.record_harness_error(s, failure);
        continue;
      }
      try {
        failure = work.evaluate(s, devices);
      } catch (const std::exception& e) {
        failure = e.what();
        work.record_harness_error(s, failure);
      }
    }
    if (!failure.empty() && work.group_failed) work.group_failed(group.front(), failure);
  };
  auto slot = [&](const std::string& devices) {
    for (;;) {
      std::vector<Sample> group;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (groups.empty()) return;
        group = std::move(groups.front());
        groups.pop_front();
      }
      if (!group.empty()) run_group(group, devices);
    }
  };
  parallel_for_each(slots.size(), static_cast<int>(slots.size()), [&](size_t i) { slot(slots[i]); });
}

}  // namespace pkb::run
