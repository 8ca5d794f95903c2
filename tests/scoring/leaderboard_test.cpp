// The leaderboard over run directories the test writes: ranking, labels of shared models, the JSON and HTML.
#include "scoring/leaderboard.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../unit/test_util.h"
#include "core/error.h"
#include "record_util.h"

using namespace pkb::scoring;
using pkb::test::record_line;
using pkb::test::RecordSpec;
using pkb::test::TempDir;

namespace {

// A run directory with manifest.json naming `model` (none when empty) and one record per spec.
std::filesystem::path write_run(const TempDir& tmp, const std::string& name, const std::string& model,
                                const std::vector<RecordSpec>& records) {
  auto dir = tmp.path() / name;
  std::string lines;
  for (const auto& r : records) lines += record_line(r);
  pkb::test::write_file(dir / "results.jsonl", lines);
  if (!model.empty()) pkb::test::write_file(dir / "manifest.json", nlohmann::json({{"model", model}}).dump());
  return dir;
}

RecordSpec problem2(RecordSpec r) {
  r.id = 2, r.folder = "002_gather", r.slug = "gather";
  return r;
}

std::vector<std::string> labels(const Leaderboard& b) {
  std::vector<std::string> out;
  for (const auto& e : b.entries) out.push_back(e.label);
  return out;
}

}  // namespace

TEST(Leaderboard, RanksByFastThenPassThenGeomean) {
  TempDir tmp;
  // slow: always correct, never faster (fast_1@1 = 0, pass@1 = 1).
  auto slow = write_run(tmp, "slow", "slow-model",
                        {{.sha256 = "a", .speedup = 0.9}, problem2({.sha256 = "b", .speedup = 0.8})});
  // fast: half the problems fast (fast_1@1 = 0.5), the other failed (pass@1 = 0.5).
  auto fast = write_run(tmp, "fast", "fast-model",
                        {{.sha256 = "a", .speedup = 3.0}, problem2({.sha256 = "b", .status = "incorrect"})});
  // tie: fast_1@1 = 0.5 like `fast` but pass@1 = 1: ranks above it.
  auto tie =
      write_run(tmp, "tie", "tie-model", {{.sha256 = "a", .speedup = 1.5}, problem2({.sha256 = "b", .speedup = 0.5})});
  // geo: fast_1@1 and pass@1 as `tie`, a higher geomean (2.0 * 0.5 vs 1.5 * 0.5).
  auto geo =
      write_run(tmp, "geo", "geo-model", {{.sha256 = "a", .speedup = 2.0}, problem2({.sha256 = "b", .speedup = 0.5})});
  Leaderboard b = build_leaderboard({slow, fast, tie, geo}, ScoreSettings{});
  EXPECT_EQ(labels(b), (std::vector<std::string>{"geo-model", "tie-model", "fast-model", "slow-model"}));

  auto j = leaderboard_json(b);
  EXPECT_EQ(j["schema"], "pkb.leaderboard/1");
  ASSERT_EQ(j["entries"].size(), 4u);
  EXPECT_EQ(j["entries"][0]["rank"], 1);
  EXPECT_EQ(j["entries"][0]["model"], "geo-model");
  EXPECT_EQ(j["entries"][0]["run"]["model"], "geo-model");
  EXPECT_EQ(j["entries"][0]["run_dir"], geo.string());
  EXPECT_EQ(j["entries"][0]["fingerprint"]["gpu"][0], "NVIDIA H200");
  EXPECT_NEAR(j["entries"][0]["aggregate"]["geomean_speedup"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(j["entries"][2]["aggregate"]["fast_p_at_k"][0]["mean"].get<double>(), 0.5, 1e-12);
  const auto& problems = j["entries"][3]["problems"];  // slow
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[1]["folder"], "002_gather");
  EXPECT_EQ(problems[1]["pass_at_1"], 1.0);
  EXPECT_EQ(problems[1]["fast_1_at_1"], 0.0);
  EXPECT_EQ(problems[1]["best_speedup"], 0.8);
  EXPECT_TRUE(j["entries"][3]["by_category"].contains("collective"));
}

// One grid for every entry, extended to the largest speedup of any of them, so the curves share their axis.
TEST(Leaderboard, EntriesShareOneGridThatCoversTheFastestKernel) {
  TempDir tmp;
  auto modest = write_run(tmp, "modest", "modest-model", {{.sha256 = "a", .speedup = 1.5}});
  auto fast = write_run(tmp, "fast", "fast-model", {{.sha256 = "a", .speedup = 9.0}});
  Leaderboard b = build_leaderboard({modest, fast}, ScoreSettings{});
  EXPECT_EQ(b.settings.thresholds.back(), 12) << "4, 6, 8, then 12 covers 9x";
  for (const auto& e : b.entries) {
    EXPECT_EQ(e.scores.settings.thresholds, b.settings.thresholds) << e.label;
    EXPECT_EQ(e.scores.curve.size(), b.settings.thresholds.size() * b.settings.ks.size()) << e.label;
  }
  ScoreSettings given;
  given.thresholds = {0, 1, 2};
  given.extend_thresholds = false;
  EXPECT_EQ(build_leaderboard({modest, fast}, given).settings.thresholds, given.thresholds);
}

TEST(Leaderboard, EntriesSharingAModelKeepItAndAddTheirDirectory) {
  TempDir tmp;
  auto a = write_run(tmp, "run-a", "same", {{.sha256 = "a", .speedup = 2.0}});
  auto b = write_run(tmp, "run-b", "same", {{.sha256 = "a", .status = "incorrect"}});
  auto c = write_run(tmp, "nameless", "", {{.sha256 = "a", .status = "incorrect"}});
  Leaderboard board = build_leaderboard({b, a, c}, ScoreSettings{});
  EXPECT_EQ(labels(board), (std::vector<std::string>{"same (run-a)", "nameless", "same (run-b)"}));
  EXPECT_EQ(board.entries[0].model, "same");
  EXPECT_EQ(board.entries[1].model, "nameless");  // no manifest: the directory names the model
  EXPECT_TRUE(board.entries[1].loaded.run.is_null());
}

TEST(Leaderboard, KOfOneIsAlwaysScored) {
  TempDir tmp;
  auto a = write_run(tmp, "a", "m", {{.sha256 = "a", .speedup = 2.0}});
  ScoreSettings st;
  st.ks = {3};
  Leaderboard b = build_leaderboard({a}, st);
  EXPECT_EQ(b.settings.ks, (std::vector<int>{1, 3}));
  EXPECT_EQ(leaderboard_json(b)["settings"]["ks"], nlohmann::ordered_json::array({1, 3}));
}

TEST(Leaderboard, ADirectoryWithoutResultsIsAnErrorNamingIt) {
  TempDir tmp;
  auto good = write_run(tmp, "good", "m", {{.sha256 = "a"}});
  std::filesystem::create_directories(tmp.path() / "empty");
  try {
    build_leaderboard({good, tmp.path() / "empty"}, ScoreSettings{});
    FAIL() << "no error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find((tmp.path() / "empty").string() + ": no results.jsonl"), std::string::npos)
        << e.what();
  }
}

TEST(Leaderboard, WritesJsonAndHtmlBesideIt) {
  TempDir tmp;
  auto a = write_run(tmp, "a", "alpha <&>", {{.sha256 = "a", .speedup = 2.0}});
  auto b = write_run(tmp, "b", "beta", {{.sha256 = "a", .status = "not_evaluated"}, problem2({.sha256 = "b"})});
  Leaderboard board = build_leaderboard({a, b}, ScoreSettings{}, /*allow_mixed=*/true);  // 1 vs 2 problems
  write_leaderboard(board, tmp.path() / "out" / "leaderboard.json");
  ASSERT_TRUE(std::filesystem::exists(tmp.path() / "out" / "leaderboard.json"));
  std::ifstream in(tmp.path() / "out" / "leaderboard.html");
  std::string page((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(page.find("alpha <&>"), std::string::npos);
  EXPECT_NE(page.find("alpha &lt;&amp;&gt;"), std::string::npos);
  size_t polylines = 0;
  for (size_t at = page.find("<polyline"); at != std::string::npos; at = page.find("<polyline", at + 1)) ++polylines;
  EXPECT_EQ(polylines, 2u);  // one curve per run at k = 1
  EXPECT_NE(page.find("<table class=\"sortable\" id=\"ranking\">"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"sortable\" id=\"matrix\">"), std::string::npos);
  EXPECT_NE(page.find(">2.00x</td>"), std::string::npos);          // alpha's best speedup on 001
  EXPECT_NE(page.find(">not evaluated</td>"), std::string::npos);  // beta's 001
  EXPECT_NE(page.find("beta: 1 GPU evaluation was skipped"), std::string::npos);
  EXPECT_NE(page.find("<table class=\"sortable\" id=\"settings\">"), std::string::npos);
  EXPECT_NE(page.find("These runs differ in problems"), std::string::npos);
}

// An 8-problem run must not outrank a 30-problem one unnoticed: runs that cover other problems or were measured
// under another W, dtype, GPU, timing method or baseline are refused unless --allow-mixed.
TEST(Leaderboard, RefusesRunsThatAreNotComparable) {
  TempDir tmp;
  auto two = write_run(tmp, "two", "m2", {{.sha256 = "a", .speedup = 2.0}, problem2({.sha256 = "b", .speedup = 2.0})});
  auto one = write_run(tmp, "one", "m1", {{.sha256 = "a", .speedup = 3.0}});
  try {
    build_leaderboard({two, one}, ScoreSettings{});
    FAIL() << "no error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not comparable; problems: m2 has [\"001_allreduce\",\"002_gather\"], m1 has "
                                         "[\"001_allreduce\"]"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-mixed"), std::string::npos);
  }
  std::string other_gpu = record_line({.sha256 = "a", .speedup = 3.0});
  other_gpu.replace(other_gpu.find("NVIDIA H200"), 11, "NVIDIA H100");
  auto h100 = tmp.path() / "h100";
  pkb::test::write_file(h100 / "results.jsonl", other_gpu);
  auto h200 = write_run(tmp, "h200", "m", {{.sha256 = "a", .speedup = 2.0}});
  EXPECT_THROW(build_leaderboard({h200, h100}, ScoreSettings{}), pkb::Error);
  Leaderboard mixed = build_leaderboard({h200, h100}, ScoreSettings{}, true);
  EXPECT_EQ(mixed.mixed, (std::vector<std::string>{"gpu"}));
  auto j = leaderboard_json(mixed);
  EXPECT_EQ(j["comparable"], false);
  EXPECT_EQ(j["entries"][0]["settings"]["baseline"], nlohmann::ordered_json::array({"pytorch_eager"}));
  Leaderboard same =
      build_leaderboard({h200, write_run(tmp, "h200b", "m", {{.sha256 = "a", .speedup = 1.0}})}, ScoreSettings{});
  EXPECT_TRUE(same.mixed.empty());
  // On GPUs, a run timed through the call gate (a runner) and one timed in the rank program measured differently.
  auto with_process = [&](const std::string& name, const std::string& where) {
    nlohmann::json r = nlohmann::json::parse(record_line({.sha256 = "a", .speedup = 2.0}));
    r["sandbox"] = {{"candidate_process", where}};
    pkb::test::write_file(tmp.path() / name / "results.jsonl", r.dump() + "\n");
    return tmp.path() / name;
  };
  auto gated = with_process("gated", "runner process"), in_process = with_process("in_process", "in process");
  EXPECT_THROW(build_leaderboard({gated, in_process}, ScoreSettings{}), pkb::Error);
  EXPECT_EQ(build_leaderboard({gated, in_process}, ScoreSettings{}, true).mixed,
            (std::vector<std::string>{"candidate_process"}));
  EXPECT_TRUE(build_leaderboard({gated, h200}, ScoreSettings{}).mixed.empty());  // a run that never said: no conflict
}
