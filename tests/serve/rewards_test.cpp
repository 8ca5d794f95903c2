// The reward shapings (serve/rewards.h, docs/serve.md "Rewards"): the ladder's order, the clipped log-speedup,
// every integrity flag forcing the penalty, and no reward without a verdict.
#include "serve/rewards.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;

json record(const std::string& status, double speedup = 1.0) {
  json r = {{"schema", "pkb.result/1"}, {"status", status}, {"compile", {{"lint", json::array()}}}};
  if (status == "correct") r["timing"] = {{"speedup", speedup}, {"stream_escape", false}};
  return r;
}

double ladder(const json& r) { return compute_reward(r, "ladder-v1").value.value(); }

TEST(Rewards, LadderOrdersFailuresBelowCorrect) {
  const double compile = ladder(record("compile_error")), runtime = ladder(record("crash")),
               incorrect = ladder(record("incorrect")), slow = ladder(record("correct", 0.01));
  EXPECT_EQ(ladder(record("lint_violation")), compile);
  EXPECT_EQ(ladder(record("timeout")), runtime);
  EXPECT_EQ(ladder(record("runtime_error")), runtime);
  EXPECT_LT(compile, runtime);
  EXPECT_LT(runtime, incorrect);
  EXPECT_LT(incorrect, slow) << "any correct kernel above any failure";
}

TEST(Rewards, SpeedupTermIsAClippedLog) {
  EXPECT_DOUBLE_EQ(ladder(record("correct", 1.0)), 1.0);
  EXPECT_DOUBLE_EQ(ladder(record("correct", 2.0)), 1.25);
  EXPECT_DOUBLE_EQ(ladder(record("correct", 8.0)), 1.75);
  EXPECT_DOUBLE_EQ(ladder(record("correct", 1000.0)), 1.75);
  EXPECT_DOUBLE_EQ(ladder(record("correct", 0.001)), 0.5);
  json contended = record("correct");
  contended["timing"].erase("speedup");  // ranks shared a GPU: no speedup claimed
  EXPECT_DOUBLE_EQ(ladder(contended), 1.0);
  EXPECT_DOUBLE_EQ(compute_reward(record("correct", 5.0), "speedup-v1").value.value(), 3.0);
  EXPECT_DOUBLE_EQ(compute_reward(record("incorrect"), "binary-v1").value.value(), 0.0);
}

TEST(Rewards, EveryIntegrityFlagForcesThePenalty) {
  std::vector<std::pair<std::string, std::function<void(json&)>>> flags = {
      {"stream_escape", [](json& r) { r["timing"]["stream_escape"] = true; }},
      {"stream_escape",
       [](json& r) {
         r["timing"]["candidate"] = {{"stream_escape", true}};
       }},
      {"repeat_faster",
       [](json& r) {
         r["timing"]["repeat_faster"] = {{"ratio", 2.0}};
       }},
      {"inputs_mutated",
       [](json& r) {
         r["checks"] = {{"inputs_mutated", {{{"rank", 0}}}}};
       }},
      {"post_window_busy",
       [](json& r) {
         r["timing"]["candidate"] = {{"post_window_probes", {{"busy", 1}}}};
       }},
      {"lint",
       [](json& r) {
         r["compile"]["lint"] = {{{"rule", "process"}}};
       }},
  };
  for (const auto& [name, set] : flags) {
    json r = record("correct", 4.0);
    set(r);
    Reward w = compute_reward(r, "ladder-v1");
    EXPECT_EQ(w.flags, std::vector<std::string>{name});
    EXPECT_EQ(w.rung, "flagged");
    EXPECT_DOUBLE_EQ(w.value.value(), -1.0) << name;
    EXPECT_DOUBLE_EQ(compute_reward(r, "binary-v1").value.value(), 0.0) << name;
    EXPECT_DOUBLE_EQ(compute_reward(r, "speedup-v1").value.value(), 0.0) << name;
  }
  json clean = record("correct", 4.0);
  clean["checks"] = {{"inputs_mutated", json::array()}};
  clean["timing"]["candidate"] = {{"post_window_probes", {{"busy", 0}}}};
  EXPECT_TRUE(compute_reward(clean, "ladder-v1").flags.empty());
}

TEST(Rewards, NoVerdictNoReward) {
  EXPECT_FALSE(compute_reward(record("harness_error"), "ladder-v1").value);
  EXPECT_FALSE(compute_reward(record("not_evaluated"), "binary-v1").value);
  EXPECT_THROW(compute_reward(record("correct"), "ladder-v9"), Error);
}

}  // namespace
}  // namespace pkb::serve
