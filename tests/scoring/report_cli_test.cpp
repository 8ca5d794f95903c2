// `pkb report` and `pkb leaderboard` as a user runs them: files written, exit codes, warnings on stderr.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../unit/test_util.h"
#include "launch/process.h"

using pkb::test::TempDir;

namespace {

const std::string kResults = std::string(PKB_SCORING_FIXTURES) + "/fixtures/results.jsonl";

struct CliRun {
  int rc;
  std::string err;
};

CliRun pkb_command(const std::string& command, const std::vector<std::string>& args) {
  TempDir tmp;
  pkb::ProcessOptions o;
  o.timeout_s = 60;
  o.stdout_path = tmp.path() / "out";
  o.stderr_path = tmp.path() / "err";
  std::vector<std::string> argv = {PKB_BINARY, command};
  argv.insert(argv.end(), args.begin(), args.end());
  pkb::ProcessResult r = pkb::run_process(argv, o);
  return {r.exit_code, pkb::file_tail(tmp.path() / "err", 1 << 20)};
}

CliRun pkb_report(const std::vector<std::string>& args) { return pkb_command("report", args); }

// A run directory as `pkb run` leaves it: results.jsonl and manifest.json naming the model.
std::filesystem::path run_dir(const TempDir& tmp, const std::string& name, const std::string& model,
                              const std::vector<std::string>& statuses) {
  auto dir = tmp.path() / name;
  std::string lines;
  for (size_t i = 0; i < statuses.size(); ++i) {
    nlohmann::json j = {
        {"schema", "pkb.result/1"},
        {"problem", {{"id", 1}, {"slug", "allreduce"}, {"folder", "001_allreduce"}, {"category", "collective"}}},
        {"candidate", {{"path", "/c/" + std::to_string(i) + ".cu"}, {"sha256", std::to_string(i)}}},
        {"status", statuses[i]},
        {"timing", {{"speedup", 2.0}}}};
    lines += j.dump() + "\n";
  }
  pkb::test::write_file(dir / "results.jsonl", lines);
  pkb::test::write_file(dir / "manifest.json", nlohmann::json({{"model", model}}).dump());
  return dir;
}

nlohmann::json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST(ReportCli, WritesItsFourFiles) {
  TempDir out;
  CliRun r = pkb_report({kResults, "-o", out.path().string(), "--k", "1,2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("2 malformed lines skipped"), std::string::npos)
      << r.err;  // the unknown status counts as a failure
  EXPECT_NE(r.err.find("results.jsonl:3: skipped: not valid JSON"), std::string::npos) << r.err;
  std::ifstream in(out.path() / "report.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "pkb.report/1");
  EXPECT_EQ(j["settings"]["ks"], nlohmann::json::array({1, 2}));
  EXPECT_TRUE(std::filesystem::exists(out.path() / "summary.md"));
  EXPECT_TRUE(std::filesystem::exists(out.path() / "curves.csv"));
  std::ifstream html(out.path() / "report.html");
  std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);
}

TEST(ReportCli, CopiesTheRunManifest) {
  TempDir tmp;
  auto dir = run_dir(tmp, "run", "model-x", {"correct"});
  ASSERT_EQ(pkb_report({dir.string()}).rc, 0);
  EXPECT_EQ(read_json(dir / "report.json")["run"]["model"], "model-x");
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));
}

// A run where one correct sample was timed below the roofline floor (speedups written beside the flag, as a forged
// record might carry them): `pkb report` counts it, claims no speedup for it (fast_1@1 counts only the other sample)
// and says so at the top of summary.md and report.html.
TEST(ReportCli, ASampleBelowTheRooflineIsFlaggedAndNotFast) {
  TempDir tmp;
  auto dir = run_dir(tmp, "run", "model-x", {"correct", "correct"});
  std::ifstream in(dir / "results.jsonl");
  std::string first, second;
  std::getline(in, first), std::getline(in, second);
  in.close();
  nlohmann::json forged = nlohmann::json::parse(first);
  forged["timing"]["by_method"] = {{"pkb", {{"speedup", 2.0}}}};
  forged["timing"]["below_roofline"] = {{"floor_us", 100.0}, {"factor", 2.0}, {"methods", {{"pkb", 4.0}}}};
  forged["roofline"] = {{"floor_us", 100.0}, {"sol_candidate", 25.0}};
  pkb::test::write_file(dir / "results.jsonl", forged.dump() + "\n" + second + "\n");
  CliRun r = pkb_report({dir.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = read_json(dir / "report.json");
  EXPECT_EQ(j["aggregate"]["below_roofline"], 1);
  EXPECT_EQ(j["problems"][0]["below_roofline"], 1);
  EXPECT_EQ(j["problems"][0]["c_fast"], 1);
  EXPECT_EQ(j["problems"][0]["sol_candidate_pct"], nullptr);
  std::ifstream md(dir / "summary.md");
  std::string summary((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(summary.find("1 sample was timed below the problem's roofline floor"), std::string::npos) << summary;
  EXPECT_LT(summary.find("timing.below_roofline"), summary.find("## Headline")) << "said before any number";
  std::ifstream html(dir / "report.html");
  std::string page((std::istreambuf_iterator<char>(html)), {});
  EXPECT_NE(page.find("id=\"below-roofline\""), std::string::npos);
}

TEST(LeaderboardCli, RanksRunsAndWritesJsonAndHtml) {
  TempDir tmp;
  auto weak = run_dir(tmp, "weak", "weak-model", {"incorrect", "correct"});
  auto strong = run_dir(tmp, "strong", "strong-model", {"correct", "correct"});
  auto out = tmp.path() / "board" / "leaderboard.json";
  CliRun r = pkb_command("leaderboard", {weak.string(), strong.string(), "-o", out.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = read_json(out);
  EXPECT_EQ(j["schema"], "pkb.leaderboard/1");
  ASSERT_EQ(j["entries"].size(), 2u);
  EXPECT_EQ(j["entries"][0]["model"], "strong-model");  // fast_1@1 = 1 beats 0.5
  EXPECT_EQ(j["entries"][1]["model"], "weak-model");
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "board" / "leaderboard.html"));
}

TEST(LeaderboardCli, RunsOverOtherProblemsAreRefusedUnlessAllowMixed) {
  TempDir tmp;
  auto a = run_dir(tmp, "a", "m-a", {"correct"});
  auto b = run_dir(tmp, "b", "m-b", {"correct"});
  nlohmann::json gather = {{"schema", "pkb.result/1"},
                           {"problem", {{"id", 2}, {"slug", "gather"}, {"folder", "002_gather"}}},
                           {"candidate", {{"path", "/c/g.cu"}, {"sha256", "g"}}},
                           {"status", "correct"}};
  std::ofstream(b / "results.jsonl", std::ios::app) << gather.dump() << "\n";  // b covers one problem more
  auto out = tmp.path() / "lb.json";
  CliRun refused = pkb_command("leaderboard", {a.string(), b.string(), "-o", out.string()});
  EXPECT_EQ(refused.rc, 2);
  EXPECT_NE(refused.err.find("not comparable; problems:"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  CliRun mixed = pkb_command("leaderboard", {a.string(), b.string(), "-o", out.string(), "--allow-mixed"});
  ASSERT_EQ(mixed.rc, 0) << mixed.err;
  EXPECT_EQ(read_json(out)["mixed"], nlohmann::json::array({"problems"}));
}

TEST(LeaderboardCli, ARunDirectoryWithoutResultsExitsTwoNamingIt) {
  TempDir tmp;
  auto good = run_dir(tmp, "good", "m", {"correct"});
  auto empty = tmp.path() / "not-a-run";
  std::filesystem::create_directories(empty);
  CliRun r = pkb_command("leaderboard", {good.string(), empty.string(), "-o", (tmp.path() / "lb.json").string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(empty.string() + ": no results.jsonl"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "lb.json"));
}

TEST(ReportCli, DirectoryInputWritesBesideTheRecords) {
  TempDir dir;
  std::filesystem::copy_file(kResults, dir.path() / "results.jsonl");
  CliRun r = pkb_report({dir.path().string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "summary.md"));
}

TEST(ReportCli, InputErrorsExitTwo) {
  TempDir dir;
  EXPECT_EQ(pkb_report({(dir.path() / "missing.jsonl").string()}).rc, 2);
  pkb::test::write_file(dir.path() / "results.jsonl", "not json\n");
  CliRun r = pkb_report({dir.path().string()});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no well-formed"), std::string::npos) << r.err;
  EXPECT_EQ(pkb_report({dir.path().string(), "--k", "0"}).rc, 2);
}
