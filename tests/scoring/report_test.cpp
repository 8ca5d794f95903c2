// Golden tests of summary.md and curves.csv from tests/scoring/fixtures/results.jsonl, plus report.json's shape.
// To accept a deliberate format change: PKB_UPDATE_GOLDEN=1 ./pkb_scoring_tests, then review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "scoring/report.h"

using namespace pkb::scoring;

namespace {

const std::string kDir = std::string(PKB_SCORING_FIXTURES) + "/fixtures";

Scores fixture_scores(LoadedResults& loaded) {
  loaded = load_results(kDir + "/results.jsonl");
  return score(loaded, ScoreSettings{});
}

void expect_golden(const std::string& name, const std::string& actual) {
  std::string path = kDir + "/" + name;
  if (std::getenv("PKB_UPDATE_GOLDEN")) std::ofstream(path) << actual;
  std::ifstream in(path);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << path;
}

}  // namespace

TEST(Report, SummaryMarkdownMatchesGolden) {
  LoadedResults loaded;
  expect_golden("summary.md", summary_md(fixture_scores(loaded)));
}

TEST(Report, CurvesCsvMatchesGolden) {
  LoadedResults loaded;
  expect_golden("curves.csv", curves_csv(fixture_scores(loaded)));
}

TEST(Report, JsonCarriesSchemaFingerprintAndEstimates) {
  LoadedResults loaded;
  auto j = report_json(fixture_scores(loaded), loaded);
  EXPECT_EQ(j["schema"], "pkb.report/1");
  EXPECT_EQ(j["fingerprint"]["pkb_git"][0], "c3973b7aaaaa");
  EXPECT_EQ(j["input"]["malformed"], 3);
  const auto& allreduce = j["problems"][0];
  EXPECT_EQ(allreduce["n"], 3);
  EXPECT_EQ(allreduce["c"], 2);
  EXPECT_NEAR(allreduce["pass_at_k"][0]["value"].get<double>(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(allreduce["geomean_speedup"].get<double>(), std::sqrt(1.5 * 0.8), 1e-12);
  EXPECT_NEAR(allreduce["sol_candidate_pct"].get<double>(), 45.0, 1e-9);
  EXPECT_EQ(j["problems"][1]["pass_at_k"][1]["k_used"], 2);  // gather: n = 2 < k = 3
  EXPECT_EQ(j["aggregate"]["pass_at_k"][0]["out_of"], 3);
  EXPECT_EQ(j["curves"].size(), 9u * 2u);
}
