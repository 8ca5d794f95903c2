// `pkb report` as a user runs it: files written, exit codes, warnings on stderr.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "launch/process.h"
#include "../unit/test_util.h"

using pkb::test::TempDir;

namespace {

const std::string kResults = std::string(PKB_SCORING_FIXTURES) + "/fixtures/results.jsonl";

struct CliRun {
  int rc;
  std::string err;
};

CliRun pkb_report(const std::vector<std::string>& args) {
  TempDir tmp;
  pkb::ProcessOptions o;
  o.timeout_s = 60;
  o.stdout_path = tmp.path() / "out";
  o.stderr_path = tmp.path() / "err";
  std::vector<std::string> argv = {PKB_BINARY, "report"};
  argv.insert(argv.end(), args.begin(), args.end());
  pkb::ProcessResult r = pkb::run_process(argv, o);
  return {r.exit_code, pkb::file_tail(tmp.path() / "err", 1 << 20)};
}

}  // namespace

TEST(ReportCli, WritesTheThreeFiles) {
  TempDir out;
  CliRun r = pkb_report({kResults, "-o", out.path().string(), "--k", "1,2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("3 malformed lines skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("results.jsonl:3: skipped: not valid JSON"), std::string::npos) << r.err;
  std::ifstream in(out.path() / "report.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "pkb.report/1");
  EXPECT_EQ(j["settings"]["ks"], nlohmann::json::array({1, 2}));
  EXPECT_TRUE(std::filesystem::exists(out.path() / "summary.md"));
  EXPECT_TRUE(std::filesystem::exists(out.path() / "curves.csv"));
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
