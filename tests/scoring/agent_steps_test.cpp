// Agent runs (pkb run --agent): scores at each step budget count a sample solved within s tool calls only if it
// used at most s, the reports gain an Agent section (others stay as they were), and the leaderboard keeps agent
// runs apart from others and from agent runs under other budgets.
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

std::string agent_line(const RecordSpec& spec, int steps) {
  nlohmann::json j = nlohmann::json::parse(record_line(spec));
  j["agent"] = {{"steps", steps}, {"end", "submitted"}};
  return j.dump() + "\n";
}

// Sample 0 correct (1.5x) after 3 tool calls, sample 1 correct (0.5x) after 10, sample 2 out of budget after 12.
std::string agent_run_lines() {
  return agent_line({.sha256 = "a", .speedup = 1.5, .sample = 0, .cost_usd = 0.5}, 3) +
         agent_line({.sha256 = "b", .speedup = 0.5, .sample = 1, .cost_usd = 0.25}, 10) +
         agent_line({.sha256 = "c", .status = "budget_exhausted", .sample = 2}, 12);
}

LoadedResults load_agent(const std::string& text) {
  std::istringstream in(text);
  return parse_results(in, "t.jsonl");
}

TEST(AgentSteps, TheGridAndSolvedWithinSSteps) {
  EXPECT_EQ(step_grid(3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(step_grid(40), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 40}));
  LoadedResults r = load_agent(agent_run_lines());
  Scores s = score(r, ScoreSettings{.ks = {1}});
  ASSERT_EQ(s.steps.size(), 9u);  // 1-8, 12
  auto at = [&](int steps) {
    for (const auto& row : s.steps)
      if (row.steps == steps) return row;
    ADD_FAILURE() << "no row for " << steps;
    return StepScore{};
  };
  EXPECT_EQ(at(2).solved, 0);
  EXPECT_EQ(at(3).solved, 1);
  EXPECT_NEAR(at(3).overall.mean(at(3).overall.pass_robust[0]), 1.0 / 3, 1e-9);
  EXPECT_NEAR(at(3).overall.mean(at(3).overall.fast[0]), 1.0 / 3, 1e-9);
  EXPECT_EQ(at(12).solved, 2);
  EXPECT_NEAR(at(12).overall.mean(at(12).overall.pass_robust[0]), 2.0 / 3, 1e-9);
  EXPECT_NEAR(at(12).overall.mean(at(12).overall.fast[0]), 1.0 / 3, 1e-9);  // the 0.5x one is not fast
  EXPECT_EQ(s.overall.failures.at("budget"), 1);
  EXPECT_EQ(s.agent.samples, 3);
  EXPECT_EQ(s.agent.steps, 25);
  EXPECT_NEAR(s.agent.cost_usd, 0.75, 1e-12);
  EXPECT_EQ(s.agent.priced, 2);

  auto j = report_json(s, r);
  ASSERT_TRUE(j.contains("agent"));
  EXPECT_NEAR(j["agent"]["steps"][2]["pass_at_k"][0]["mean"].get<double>(), 1.0 / 3, 1e-9);
  std::string md = summary_md(s, r);
  EXPECT_NE(md.find("## Agent"), std::string::npos) << md;
  EXPECT_NE(md.find("| 12 | 2 | 0.667 |"), std::string::npos) << md;
  EXPECT_NE(agent_csv(s).find("3,1,0.333333,0.333333"), std::string::npos) << agent_csv(s);
  // report.html: the section after the fast_p curve (beside the turns' one), a curve over the step budgets whose points
  // carry the values, and the table.
  std::string html = report_html(s, r);
  size_t section = html.find("<h2 id=\"agent\">");
  ASSERT_NE(section, std::string::npos);
  EXPECT_GT(section, html.find("class=\"curve\""));
  EXPECT_LT(section, html.find("id=\"settings\""));
  EXPECT_NE(html.find("tool calls allowed per sample (s)", section), std::string::npos);
  EXPECT_NE(html.find("<title>pass@1, s = 12: score = 0.6667</title>", section), std::string::npos)
      << html.substr(section);
  EXPECT_NE(html.find("<title>fast_1@1, s = 12: score = 0.3333</title>", section), std::string::npos)
      << html.substr(section);
  EXPECT_NE(html.find("id=\"agent-steps\"", section), std::string::npos);

  Scores plain = score(load_agent(record_line({.sha256 = "a", .speedup = 1.5, .sample = 0})), ScoreSettings{});
  EXPECT_TRUE(plain.steps.empty());
  EXPECT_EQ(summary_md(plain, r).find("## Agent"), std::string::npos);
  EXPECT_EQ(report_html(plain, r).find("id=\"agent\""), std::string::npos);
}

TEST(AgentSteps, TheLeaderboardKeepsAgentRunsApart) {
  pkb::test::TempDir tmp;
  auto write = [&](const std::string& name, const std::string& lines, const nlohmann::json& manifest) {
    pkb::test::write_file(tmp.path() / name / "results.jsonl", lines);
    pkb::test::write_file(tmp.path() / name / "manifest.json", manifest.dump());
    return tmp.path() / name;
  };
  nlohmann::json budget = {{"steps", 20}, {"tokens", 0}, {"wall_s", 0}, {"gpu_s", 0}};
  auto agent =
      write("agent", agent_run_lines(), {{"model", "agent"}, {"turns", 1}, {"mode", "agent"}, {"agent", budget}});
  auto single = write("single",
                      record_line({.sha256 = "a", .speedup = 1.2, .sample = 0}) +
                          record_line({.sha256 = "b", .status = "incorrect", .sample = 1}) +
                          record_line({.sha256 = "c", .status = "incorrect", .sample = 2}),
                      {{"model", "single"}, {"turns", 1}});
  budget["steps"] = 40;
  auto longer =
      write("longer", agent_run_lines(), {{"model", "longer"}, {"turns", 1}, {"mode", "agent"}, {"agent", budget}});
  try {
    build_leaderboard({agent, single}, ScoreSettings{});
    FAIL() << "no error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("mode: agent has [\"agent\"], single has [\"answers\"]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(build_leaderboard({agent, longer}, ScoreSettings{}), pkb::Error);
  Leaderboard mixed = build_leaderboard({agent, single}, ScoreSettings{}, true);
  EXPECT_EQ(mixed.mixed, (std::vector<std::string>{"mode"}));
}

}  // namespace
