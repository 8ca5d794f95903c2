// Multi-turn runs (pkb run --turns): a sample counts as its best turn, the per-turn scores count a sample solved
// at turn t if any turn <= t is, the reports gain a Turns section (and single-turn reports stay as they were),
// and the leaderboard keeps single-turn and multi-turn runs apart.
#include <gtest/gtest.h>

#include <sstream>

#include "../unit/test_util.h"
#include "core/error.h"
#include "record_util.h"
#include "scoring/leaderboard.h"
#include "scoring/report.h"

using namespace pkb::scoring;
using pkb::test::record_line;
using pkb::test::RecordSpec;

namespace {

// Sample 0: compile error, then correct at 0.8x, then correct at 1.5x. Sample 1: correct at 2x at once, then
// broken by the attempt to speed it up.
std::string three_turns() {
  std::string s;
  s += record_line({.sha256 = "a1", .status = "compile_error", .sample = 0, .turn = 1, .cost_usd = 0.01});
  s += record_line({.sha256 = "b1", .status = "correct", .speedup = 2.0, .sample = 1, .turn = 1, .cost_usd = 0.01});
  s += record_line({.sha256 = "a2", .status = "correct", .speedup = 0.8, .sample = 0, .turn = 2, .cost_usd = 0.02});
  s += record_line({.sha256 = "b2", .status = "incorrect", .sample = 1, .turn = 2, .cost_usd = 0.02});
  s += record_line({.sha256 = "a3", .status = "correct", .speedup = 1.5, .sample = 0, .turn = 3});
  return s;
}

LoadedResults load(const std::string& text) {
  std::istringstream in(text);
  return parse_results(in, "t.jsonl");
}

TEST(Turns, ASampleCountsAsItsBestTurn) {
  LoadedResults r = load(three_turns());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].turns.size(), 5u);
  ASSERT_EQ(r.problems[0].samples.size(), 2u);
  EXPECT_EQ(r.duplicates, 0);
  EXPECT_EQ(max_turn(r), 3);
  const Sample& s0 = r.problems[0].samples[0];
  EXPECT_EQ(s0.turn, 3);  // the faster of its correct turns
  EXPECT_EQ(s0.turns, 3);
  EXPECT_EQ(r.problems[0].samples[1].turn, 1);  // its correct turn, not the later broken one
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.problems[0].n, 2);
  EXPECT_EQ(s.problems[0].c_robust, 2);
  EXPECT_EQ(*s.problems[0].best_speedup, 2.0);

  LoadedResults first = at_turn(r, 1);
  EXPECT_EQ(score(first, ScoreSettings{}).problems[0].c_robust, 1);
  EXPECT_EQ(first.problems[0].samples[0].status, "compile_error");
}

TEST(Turns, PerTurnScoresCountWhatEachTurnAdds) {
  Scores s = score(load(three_turns()), ScoreSettings{.ks = {1}});
  ASSERT_EQ(s.turns.size(), 3u);
  auto pass1 = [&](int t) { return s.turns[t].overall.mean(s.turns[t].overall.pass_robust[0]); };
  auto fast1 = [&](int t) { return s.turns[t].overall.mean(s.turns[t].overall.fast[0]); };
  EXPECT_DOUBLE_EQ(pass1(0), 0.5);
  EXPECT_DOUBLE_EQ(pass1(1), 1.0);
  EXPECT_DOUBLE_EQ(pass1(2), 1.0);
  EXPECT_DOUBLE_EQ(fast1(0), 0.5);  // sample 1 at 2x
  EXPECT_DOUBLE_EQ(fast1(1), 0.5);  // sample 0 correct but slower than the baseline
  EXPECT_DOUBLE_EQ(fast1(2), 1.0);
  EXPECT_EQ(s.turns[0].asked, 2);
  EXPECT_EQ(s.turns[2].asked, 1);
  EXPECT_EQ(s.turns[0].newly_solved, 1);
  EXPECT_EQ(s.turns[1].newly_solved, 1);
  EXPECT_EQ(s.turns[2].newly_solved, 0);
  EXPECT_EQ(s.turns[1].correct, 1);
  EXPECT_EQ(s.turns[0].output_tokens, 200);
  EXPECT_NEAR(s.turns[1].cost_usd, 0.04, 1e-12);
  EXPECT_EQ(s.turns[2].priced, 0);

  LoadedResults loaded = load(three_turns());
  auto j = report_json(s, loaded);
  ASSERT_EQ(j["turns"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["turns"][1]["added"]["pass_at_k"][0]["mean"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["turns"][2]["added"]["fast_p_at_k"][0]["mean"].get<double>(), 0.5);
  EXPECT_TRUE(j["turns"][2]["cost_usd"].is_null());  // no answer of turn 3 was priced
  std::string md = summary_md(s, loaded);
  EXPECT_NE(md.find("## Turns"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 2 | 1 | 1 | 1.000 | 0.500 | +0.500 | +0.000 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | 1 | 1 | 0 | 1.000 | 1.000 | +0.000 | +0.500 |"), std::string::npos) << md;
  EXPECT_NE(report_html(s, loaded).find("<h2>Turns</h2>"), std::string::npos);
}

TEST(Turns, SingleTurnReportsHaveNoTurnsSection) {
  LoadedResults r = load(record_line({.sha256 = "a", .speedup = 1.2, .sample = 0}));
  Scores s = score(r, ScoreSettings{});
  EXPECT_TRUE(s.turns.empty());
  EXPECT_FALSE(report_json(s, r).contains("turns"));
  EXPECT_EQ(summary_md(s, r).find("Turns"), std::string::npos);
}

TEST(Turns, TheLeaderboardKeepsSingleAndMultiTurnRunsApart) {
  pkb::test::TempDir tmp;
  auto write = [&](const std::string& name, const std::string& lines, int turns) {
    pkb::test::write_file(tmp.path() / name / "results.jsonl", lines);
    pkb::test::write_file(tmp.path() / name / "manifest.json",
                          nlohmann::json({{"model", name}, {"turns", turns}}).dump());
    return tmp.path() / name;
  };
  auto multi = write("multi", three_turns(), 3);
  auto single = write("single",
                      record_line({.sha256 = "a", .speedup = 1.2, .sample = 0}) +
                          record_line({.sha256 = "b", .status = "incorrect", .sample = 1}),
                      1);
  try {
    build_leaderboard({multi, single}, ScoreSettings{});
    FAIL() << "no error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("turns: multi has [3], single has [1]"), std::string::npos) << e.what();
  }
  Leaderboard mixed = build_leaderboard({multi, single}, ScoreSettings{}, true);
  EXPECT_EQ(mixed.mixed, (std::vector<std::string>{"turns"}));
  EXPECT_EQ(leaderboard_json(mixed)["entries"][0]["settings"]["turns"], nlohmann::ordered_json::array({3}));
}

}  // namespace
