// run/slot_queue.h: pkb run's and --agent's one queue of problem groups over evaluation slots, and its one policy
// for pkb's own failures.
#include "run/slot_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

namespace slot_queue_test {

using Sample = std::pair<int, int>;  // (problem, sample)

struct Ledger {
  std::mutex mu;
  std::map<Sample, std::string> outcome;  // "ok", "harness:<why>", written once each
  std::map<Sample, std::string> devices;
  std::set<std::thread::id> threads_of_problem[4];
  std::vector<int> failed_groups;
  void put(const Sample& s, const std::string& what) {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(outcome.emplace(s, what).second) << "sample " << s.first << "/" << s.second << " handled twice";
  }
};

std::deque<std::vector<Sample>> groups_of(int problems, int samples) {
  std::deque<std::vector<Sample>> g;
  for (int p = 0; p < problems; ++p) {
    g.emplace_back();
    for (int k = 0; k < samples; ++k) g.back().push_back({p, k});
  }
  return g;
}

pkb::run::SlotWork<Sample> work_for(Ledger& l, const std::function<std::string(const Sample&)>& verdict) {
  pkb::run::SlotWork<Sample> w;
  w.evaluate = [&l, verdict](const Sample& s, const std::string& devices) {
    {
      std::lock_guard<std::mutex> lock(l.mu);
      l.devices[s] = devices;
      l.threads_of_problem[s.first].insert(std::this_thread::get_id());
    }
    std::string failure = verdict(s);  // may throw
    l.put(s, failure.empty() ? "ok" : "harness:" + failure);
    return failure;
  };
  w.record_harness_error = [&l](const Sample& s, const std::string& why) { l.put(s, "recorded:" + why); };
  w.group_failed = [&l](const Sample& s, const std::string&) {
    std::lock_guard<std::mutex> lock(l.mu);
    l.failed_groups.push_back(s.first);
  };
  return w;
}

TEST(SlotQueue, EverySampleOnceAndAProblemOnOneSlot) {
  Ledger l;
  pkb::run::evaluate_on_slots(groups_of(4, 5), {"0,1", "2,3"}, work_for(l, [](const Sample&) { return ""; }));
  ASSERT_EQ(l.outcome.size(), 20u);
  for (const auto& [s, what] : l.outcome) EXPECT_EQ(what, "ok");
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(l.threads_of_problem[p].size(), 1u) << "problem " << p << " split across slots";
    for (int k = 1; k < 5; ++k) EXPECT_EQ((l.devices[{p, k}]), (l.devices[{p, 0}]));
  }
  EXPECT_TRUE(l.failed_groups.empty());
}

// A harness error (reported or thrown) fails its sample and, untried, the group's later samples; other groups go on.
TEST(SlotQueue, AHarnessErrorRecordsTheRestOfItsGroupAndSparesTheOthers) {
  Ledger l;
  auto verdict = [](const Sample& s) -> std::string {
    if (s == Sample{1, 2}) return "reference pass crashed";
    if (s == Sample{2, 0}) throw std::runtime_error("sandbox did not start");
    return "";
  };
  pkb::run::evaluate_on_slots(groups_of(4, 5), {"a", "b", "c"}, work_for(l, verdict));
  ASSERT_EQ(l.outcome.size(), 20u);
  EXPECT_EQ((l.outcome[{1, 2}]), "harness:reference pass crashed");
  EXPECT_EQ((l.outcome[{1, 3}]), "recorded:reference pass crashed");
  EXPECT_EQ((l.outcome[{1, 4}]), "recorded:reference pass crashed");
  EXPECT_EQ((l.outcome[{1, 1}]), "ok");
  for (int k = 0; k < 5; ++k) EXPECT_EQ((l.outcome[{2, k}]), "recorded:sandbox did not start") << k;
  EXPECT_EQ(l.devices.count(Sample{2, 1}), 0u) << "a sample after a harness error was tried";
  for (int p : {0, 3})
    for (int k = 0; k < 5; ++k) EXPECT_EQ((l.outcome[{p, k}]), "ok");
  std::sort(l.failed_groups.begin(), l.failed_groups.end());
  EXPECT_EQ(l.failed_groups, (std::vector<int>{1, 2}));
}

TEST(SlotQueue, EmptyGroupsAndMoreSlotsThanGroups) {
  Ledger l;
  std::deque<std::vector<Sample>> g = groups_of(1, 2);
  g.emplace_front();
  pkb::run::evaluate_on_slots(std::move(g), {"a", "b", "c", "d"}, work_for(l, [](const Sample&) { return ""; }));
  EXPECT_EQ(l.outcome.size(), 2u);
}

}  // namespace slot_queue_test
