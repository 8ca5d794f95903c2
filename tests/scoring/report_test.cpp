// Golden tests of summary.md and curves.csv from tests/scoring/fixtures/results.jsonl, plus report.json's shape.
// To accept a deliberate format change: PKB_UPDATE_GOLDEN=1 ./pkb_scoring_tests, then review the diff.
#include "scoring/report.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../unit/test_util.h"
#include "record_util.h"

using namespace pkb::scoring;
using pkb::test::record_line;
using pkb::test::TempDir;

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
  Scores s = fixture_scores(loaded);
  expect_golden("summary.md", summary_md(s, loaded));
}

TEST(Report, RunSummaryWithSkippedEvaluationsMatchesGolden) {
  LoadedResults loaded = load_results(kDir + "/run");
  expect_golden("run_summary.md", summary_md(score(loaded, ScoreSettings{}), loaded));
}

// report.json of a run as a whole (manifest with its selection, failed generations, skipped evaluations, a
// problem without any record), so that any change in what a report says shows in review.
TEST(Report, RunReportJsonMatchesGolden) {
  LoadedResults loaded = load_results(kDir + "/run");
  expect_golden("run_report.json", report_json(score(loaded, ScoreSettings{}), loaded).dump(2) + "\n");
}

// A problem of the run's selection without any record (all its samples hit harness errors) counts 0 and is
// listed as missing: it must not vanish from the denominator.
TEST(Report, AProblemOfTheSelectionWithoutRecordsCountsZero) {
  LoadedResults loaded = load_results(kDir + "/run");
  Scores s = score(loaded, ScoreSettings{});
  EXPECT_EQ(s.missing, (std::vector<std::string>{"013_sequence_parallel"}));
  EXPECT_EQ(s.overall.problems, 5);  // 001, 003, 006, 011, 013 (012 had skipped evaluations)
  EXPECT_EQ(s.overall.missing, 1);
  EXPECT_EQ(s.by_category.at("tensor_parallel").problems, 2);
  auto j = report_json(s, loaded);
  EXPECT_EQ(j["missing"], nlohmann::ordered_json::array({"013_sequence_parallel"}));
  EXPECT_EQ(j["aggregate"]["pass_at_k"][0]["out_of"], 5);
  EXPECT_NE(summary_md(s, loaded).find("without any record (count as 0; rerun to retry): 013_sequence_parallel"),
            std::string::npos);
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
  EXPECT_EQ(j["input"]["malformed"], 2);
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

TEST(Report, WithoutAManifestTheResultsFileNamesTheReport) {
  LoadedResults loaded;
  Scores s = fixture_scores(loaded);
  EXPECT_EQ(loaded.source, "fixtures/results.jsonl");
  EXPECT_TRUE(report_json(s, loaded)["run"].is_null());
  EXPECT_EQ(summary_md(s, loaded).rfind("# pkb scores: fixtures/results.jsonl\n", 0), 0u);
  EXPECT_NE(report_html(s, loaded).find("<title>pkb report: fixtures/results.jsonl</title>"), std::string::npos);
}

TEST(Report, ManifestIsCopiedIntoReportJsonAndNamesTheModel) {
  TempDir dir;
  nlohmann::json manifest = {{"model", "claude-x"},
                             {"problems", "all"},
                             {"samples", 3},
                             {"world", 2},
                             {"topology", "h200_nvlink"},
                             {"created", "2026-02-01T00:00:00Z"},
                             {"extra", {{"nested", true}}}};
  pkb::test::write_file(dir.path() / "manifest.json", manifest.dump());
  pkb::test::write_file(dir.path() / "results.jsonl", record_line({.sha256 = "a", .speedup = 2.0}));
  LoadedResults loaded = load_results(dir.path());
  Scores s = score(loaded, ScoreSettings{});
  auto j = report_json(s, loaded);
  EXPECT_EQ(nlohmann::json(j["run"]), manifest);  // verbatim, unknown fields included
  EXPECT_EQ(summary_md(s, loaded).rfind("# pkb scores: claude-x\n", 0), 0u);
  EXPECT_NE(report_html(s, loaded).find("<title>pkb report: claude-x</title>"), std::string::npos);
  write_report(s, loaded, dir.path() / "out");
  for (const char* name : {"report.json", "summary.md", "curves.csv", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / name)) << name;
}

TEST(Report, AManifestThatIsNotAnObjectIsAWarning) {
  TempDir dir;
  pkb::test::write_file(dir.path() / "manifest.json", "[1, 2");
  pkb::test::write_file(dir.path() / "results.jsonl", record_line({.sha256 = "a"}));
  LoadedResults loaded = load_results(dir.path() / "results.jsonl");
  EXPECT_TRUE(loaded.run.is_null());
  ASSERT_EQ(loaded.warnings.size(), 1u);
  EXPECT_NE(loaded.warnings[0].find("manifest.json: ignored"), std::string::npos) << loaded.warnings[0];
}

TEST(Report, SkippedEvaluationsAreCountedAndAnnouncedFirst) {
  LoadedResults loaded = load_results(kDir + "/run");
  Scores s = score(loaded, ScoreSettings{});
  auto j = report_json(s, loaded);
  EXPECT_EQ(j["aggregate"]["not_evaluated"], 2);
  EXPECT_EQ(j["aggregate"]["generation_failed"], 2);
  EXPECT_EQ(j["aggregate"]["problems"], 5);
  EXPECT_EQ(j["not_fully_evaluated"], nlohmann::ordered_json::array({"012_ring_attention"}));
  const auto& ring = j["problems"][4];
  EXPECT_EQ(ring["folder"], "012_ring_attention");
  EXPECT_EQ(ring["n"], 0);
  EXPECT_EQ(ring["not_evaluated"], 2);
  EXPECT_TRUE(ring["pass_at_k"][0]["value"].is_null());  // unknown, not 0
  EXPECT_EQ(j["problems"][0]["generation_failed"], 1);
  EXPECT_EQ(j["by_category"]["context_parallel"]["not_evaluated"], 2);

  std::string md = summary_md(s, loaded);
  std::string notice = "**2 GPU evaluations were skipped: no GPU on this machine.";
  EXPECT_LT(md.find(notice), md.find("| problem |")) << md;
  EXPECT_NE(md.find("| 012_ring_attention | context_parallel | 0 | 0 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("Problems with skipped evaluations (left out of the aggregates): 012_ring_attention"),
            std::string::npos)
      << md;
  EXPECT_EQ(summary_md(fixture_scores(loaded), loaded).find("skipped"), std::string::npos);  // none in eval runs
}

// summary.md in the order report.html has: notices, the headline (the aggregates), the fast_p@k curve, the
// per-problem table, then the settings.
TEST(Report, SummaryReadsTopDownWithTheSettingsLast) {
  LoadedResults loaded = load_results(kDir + "/run");
  std::string md = summary_md(score(loaded, ScoreSettings{}), loaded);
  size_t notice = md.find("**2 GPU evaluations were skipped"), headline = md.find("## Headline"),
         all_row = md.find("| all |"), curve = md.find("## fast_p@k against the speedup threshold p"),
         curve_row = md.find("| 1.25 |"), problems = md.find("## Problems"), ring = md.find("| 012_ring_attention |"),
         settings = md.find("## Settings"), timing = md.find("- timing method: pkb"), gpu = md.find("- GPU: ");
  for (size_t at : {notice, headline, all_row, curve, curve_row, problems, ring, settings, timing, gpu})
    ASSERT_NE(at, std::string::npos) << md;
  EXPECT_LT(notice, headline);
  EXPECT_LT(headline, all_row);
  EXPECT_LT(all_row, curve);
  EXPECT_LT(curve, curve_row);
  EXPECT_LT(curve_row, problems);
  EXPECT_LT(problems, ring);
  EXPECT_LT(ring, settings);
  EXPECT_LT(settings, timing);
  EXPECT_LT(settings, gpu);
}

// A one-GPU run (ranks sharing the GPU: gpu_sharing, timing.contended) says first why it claims no speedup, whatever
// the verdicts; a run where only some samples shared a GPU says how many.
TEST(Report, AOneGpuRunSaysFirstWhyNoSpeedupIsClaimed) {
  auto shared_line = [](const std::string& sha, const std::string& status) {
    auto j = nlohmann::json::parse(record_line({.sha256 = sha, .status = status, .speedup = 2.0}));
    j["gpu_sharing"] = {{"ranks_per_gpu", 2}, {"mps", true}, {"note", "2 ranks share each of 1 GPU (MPS)"}};
    j["timing"]["contended"] = true;
    return j.dump() + "\n";
  };
  std::istringstream in(shared_line("a", "correct") + shared_line("b", "incorrect"));
  LoadedResults loaded = parse_results(in, "one-gpu.jsonl");
  Scores s = score(loaded, ScoreSettings{});
  EXPECT_EQ(s.overall.shared_gpu, 2);
  EXPECT_EQ(report_json(s, loaded)["aggregate"]["shared_gpu"], 2);
  std::string md = summary_md(s, loaded);
  const std::string notice = "**No speedups are claimed: the ranks of every evaluated sample (2) shared a GPU";
  ASSERT_NE(md.find(notice), std::string::npos) << md;
  EXPECT_EQ(md.find("\n\n"), md.find(notice) - 2) << "right under the title";
  EXPECT_LT(md.find(notice), md.find("## Headline"));

  std::istringstream mixed(shared_line("a", "correct") + record_line({.sha256 = "c", .speedup = 1.5}));
  loaded = parse_results(mixed, "mixed.jsonl");
  md = summary_md(score(loaded, ScoreSettings{}), loaded);
  EXPECT_NE(md.find("**No speedups are claimed for 1 of 2 evaluated samples: their ranks shared a GPU"),
            std::string::npos)
      << md;
  LoadedResults plain;
  EXPECT_EQ(summary_md(fixture_scores(plain), plain).find("No speedups"), std::string::npos);
}
