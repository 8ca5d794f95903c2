// Loading results.jsonl (malformed lines, duplicates) and aggregating over problems.
#include "scoring/aggregate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "record_util.h"
#include "scoring/report.h"

using namespace pkb::scoring;
using pkb::test::record_line;

namespace {

const std::string kFixture = std::string(PKB_SCORING_FIXTURES) + "/fixtures/results.jsonl";

LoadedResults parse(const std::string& text) {
  std::istringstream in(text);
  return parse_results(in, "test.jsonl");
}

Sample sample(const std::string& sha, bool robust, bool pkb, std::optional<double> speedup) {
  Sample s;
  s.sha256 = sha;
  s.robust_pass = robust;
  s.pkb_pass = pkb;
  s.speedup = speedup;
  return s;
}

}  // namespace

TEST(Load, SkipsAndCountsMalformedLines) {
  LoadedResults r = load_results(kFixture);
  EXPECT_EQ(r.records, 8);
  EXPECT_EQ(r.malformed, 2);  // truncated JSON, foreign schema
  EXPECT_EQ(r.duplicates, 1);
  ASSERT_EQ(r.warnings.size(), 3u);
  EXPECT_NE(r.warnings[0].find("results.jsonl:3: skipped: not valid JSON"), std::string::npos) << r.warnings[0];
  // A status scoring does not know is a failed sample, never dropped from n (which would raise pass@k).
  EXPECT_NE(r.warnings[1].find(":10: unknown status 'bogus_status': counted as a failed sample"), std::string::npos)
      << r.warnings[1];
  EXPECT_NE(r.warnings[2].find(":11: skipped: schema"), std::string::npos) << r.warnings[2];
  EXPECT_EQ(r.fingerprint["gpu"], nlohmann::json::array({"NVIDIA H200"}));
}

TEST(Load, GroupsPerProblemAndKeepsTheLatestRecordOfACandidate) {
  LoadedResults r = load_results(kFixture);
  ASSERT_EQ(r.problems.size(), 3u);
  EXPECT_EQ(r.problems[0].folder, "001_allreduce");
  EXPECT_EQ(r.problems[0].samples.size(), 3u);
  EXPECT_EQ(r.problems[0].samples[2].index, -1);  // no `sample` field: identified by sha256, not by its path
  EXPECT_EQ(r.problems[0].samples[2].key, "001_allreduce@a2");
  const auto& gather = r.problems[1];
  ASSERT_EQ(gather.samples.size(), 2u);
  EXPECT_EQ(gather.samples[0].status, "timeout");  // the later record for sha g0 replaced compile_error
  EXPECT_EQ(gather.samples[1].sol_baseline, 0.2);  // libtorch baseline named by timing.baseline
  EXPECT_EQ(r.problems[2].category, "tensor_parallel");
}

// A sample is (problem, sample index): equal bytes in two samples are two samples (greedy decoding returns the
// same kernel), and a later record of the same sample supersedes the earlier one.
TEST(Load, IdenticalKernelsInTwoSamplesAreTwoSamples) {
  LoadedResults r = parse(record_line({.sha256 = "A", .sample = 0}) + record_line({.sha256 = "A", .sample = 1}) +
                          record_line({.sha256 = "B", .status = "incorrect", .sample = 2}));
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.duplicates, 0);
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.problems[0].n, 3);
  EXPECT_EQ(s.problems[0].c_robust, 2);
  EXPECT_NEAR(s.problems[0].pass_robust[0].value, 2.0 / 3, 1e-12);
}

TEST(Load, ReEvaluatingASampleSupersedesItsRecord) {
  LoadedResults r = parse(record_line({.sha256 = "A", .sample = 0}) + record_line({.sha256 = "A", .sample = 1}) +
                          record_line({.sha256 = "A", .status = "timeout", .sample = 1}));
  EXPECT_EQ(r.duplicates, 1);
  ASSERT_EQ(r.problems[0].samples.size(), 2u);
  EXPECT_EQ(r.problems[0].samples[1].status, "timeout");
}

// Records written before records carried `sample` are identified by sha256; the same bytes recorded again with
// an index (a resumed older run) replace them instead of counting twice.
TEST(Load, AnIndexedRecordSupersedesAnUnindexedOneOfTheSameBytes) {
  LoadedResults r =
      parse(record_line({.sha256 = "A", .status = "incorrect"}) + record_line({.sha256 = "A", .sample = 0}));
  EXPECT_EQ(r.duplicates, 1);
  ASSERT_EQ(r.problems[0].samples.size(), 1u);
  EXPECT_EQ(r.problems[0].samples[0].status, "correct");
}

TEST(Load, UnknownStatusIsAFailedSample) {
  LoadedResults r = parse(record_line({.sha256 = "A", .sample = 0}) +
                          record_line({.sha256 = "B", .status = "sandbox_violation", .sample = 1}));
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.problems[0].n, 2);
  EXPECT_EQ(s.problems[0].c_robust, 1);
  EXPECT_EQ(s.problems[0].failures, (std::map<std::string, int>{{"unknown", 1}}));
}

TEST(Score, FailureBreakdownPerProblemCategoryAndOverall) {
  LoadedResults r = parse(record_line({.sha256 = "a", .status = "compile_error", .sample = 0}) +
                          record_line({.sha256 = "b", .status = "incorrect", .sample = 1}) +
                          record_line({.sha256 = "g:1", .status = "generation_failed", .sample = 2}) +
                          record_line({.id = 11,
                                       .folder = "011_tp",
                                       .category = "tensor_parallel",
                                       .sha256 = "c",
                                       .status = "timeout",
                                       .sample = 0}));
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.problems[0].failures, (std::map<std::string, int>{{"compile", 1}, {"incorrect", 1}, {"no_code", 1}}));
  EXPECT_EQ(s.by_category.at("tensor_parallel").failures, (std::map<std::string, int>{{"timeout", 1}}));
  EXPECT_EQ(s.overall.failures.size(), 4u);
}

// One serializer: a record read and written back is the record (fields pkb does not type travel verbatim), and
// setting the sample index and model, as `pkb run` does, changes only those.
TEST(Record, RoundTripsAndKeepsUntypedFields) {
  nlohmann::json j = nlohmann::json::parse(record_line({.sha256 = "A", .speedup = 1.5}));
  j["compile"] = {{"status", "ok"}, {"log", "x"}};
  j["roofline"] = {{"floor_us", 3.0}, {"sol_candidate", 0.5}, {"sol_baseline_pytorch_eager", 0.25}};
  j["timing_settings"] = {{"warmup", 20}, {"iters", 100}};
  j["wall"] = {{"total_s", 2.5}};
  pkb::ResultRecord r = pkb::record_from_json(j);
  EXPECT_EQ(pkb::record_to_json(r), j);
  EXPECT_EQ(r.sol_baseline, 0.25);  // the baseline timing.baseline names
  EXPECT_EQ(r.iters, 100);
  EXPECT_EQ(r.sample_key(), "001_allreduce@A");
  r.sample = 4;
  r.model = "openai:gpt-5";
  nlohmann::json back = pkb::record_to_json(r);
  EXPECT_EQ(back["sample"], 4);
  EXPECT_EQ(back["model"], "openai:gpt-5");
  back.erase("sample"), back.erase("model");
  EXPECT_EQ(back, j);
  EXPECT_EQ(pkb::record_from_json(pkb::record_to_json(r)).sample_key(), "001_allreduce#4");
}

TEST(Record, EveryStatusHasOneTableRow) {
  for (auto s :
       {pkb::ResultStatus::compile_error, pkb::ResultStatus::correct, pkb::ResultStatus::generation_failed,
        pkb::ResultStatus::not_evaluated, pkb::ResultStatus::budget_exhausted, pkb::ResultStatus::harness_error}) {
    const pkb::StatusInfo* info = pkb::find_status(pkb::result_status_name(s));
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->status, s);
  }
  EXPECT_EQ(pkb::result_statuses().size(), 13u);
  EXPECT_FALSE(pkb::find_status("not_evaluated")->sample);
  EXPECT_TRUE(pkb::find_status("budget_exhausted")->sample);  // an agent out of budget: a failed sample
  EXPECT_FALSE(pkb::find_status("harness_error")->sample);    // pkb failed: no verdict, never in n
  EXPECT_FALSE(pkb::find_status("harness_error")->evaluated);
  EXPECT_TRUE(pkb::find_status("generation_failed")->sample);
  EXPECT_FALSE(pkb::find_status("generation_failed")->evaluated);
  EXPECT_EQ(pkb::find_status("bogus"), nullptr);
}

TEST(Load, EmptyInputAndUnreadableFile) {
  std::istringstream in("\n\n");
  LoadedResults r = parse_results(in, "empty");
  EXPECT_EQ(r.records, 0);
  EXPECT_EQ(r.malformed, 0);
  EXPECT_THROW(load_results("/nonexistent/results.jsonl"), pkb::Error);
}

TEST(Aggregate, MeansCountsPoliciesAndEmptyProblems) {
  LoadedResults r;
  r.problems = {{1, "a", "001_a", "collective", {sample("1", true, true, 2.0), sample("2", false, true, 4.0)}, {}},
                {2, "b", "002_b", "collective", {sample("3", true, true, 0.5)}, {}},
                {3, "c", "003_c", "graph", {}, {}}};
  ScoreSettings st;
  st.ks = {1, 2};
  st.thresholds = {1.0};
  st.extend_thresholds = false;
  Scores s = score(r, st);
  ASSERT_EQ(s.problems.size(), 3u);
  EXPECT_NEAR(s.problems[0].pass_robust[0].value, 0.5, 1e-12);
  EXPECT_EQ(s.problems[0].pass_pkb[0].value, 1.0);    // the pkb policy accepts sample 2
  EXPECT_EQ(s.problems[1].pass_robust[1].k_used, 1);  // one sample: k = 2 clipped to n
  EXPECT_EQ(s.without_samples, std::vector<std::string>{"003_c"});
  EXPECT_EQ(s.overall.problems, 3);
  EXPECT_NEAR(s.overall.pass_robust[0], 1.5, 1e-12);  // 0.5 + 1 + 0: "1.5 out of 3"
  EXPECT_NEAR(s.overall.mean(s.overall.pass_robust[0]), 0.5, 1e-12);
  EXPECT_NEAR(s.overall.fast[0], 0.5, 1e-12);             // only 001_a's 2.0x is correct and > 1
  EXPECT_NEAR(*s.overall.geomean_speedup(), 1.0, 1e-12);  // sqrt(2.0 * 0.5): the incorrect 4.0x is left out
  EXPECT_EQ(s.by_category.at("graph").problems, 1);
  EXPECT_EQ(s.by_category.at("graph").pass_robust[0], 0.0);
  ASSERT_EQ(s.curve.size(), 2u);
  EXPECT_NEAR(s.curve[0].value, 0.5 / 3, 1e-12);  // fast_1@1 over 3 problems
}

TEST(Aggregate, TheGridGrowsToTheLargestCorrectSpeedup) {
  EXPECT_EQ(threshold_grid({0, 1, 4}, 8.6), (std::vector<double>{0, 1, 4, 6, 8, 12}));
  EXPECT_EQ(threshold_grid({4, 0, 1}, 4.0), (std::vector<double>{0, 1, 4})) << "already covered";
  EXPECT_EQ(threshold_grid({0, 1, 4}, std::nullopt), (std::vector<double>{0, 1, 4})) << "nothing timed";
  EXPECT_EQ(threshold_grid({0, 1, 2.5}, 3), (std::vector<double>{0, 1, 2.5, 4})) << "joins the ladder";
  EXPECT_EQ(threshold_grid({0, 1, 4}, 1e300).back(), 1 << 20) << "capped";

  LoadedResults r;
  r.problems = {{1, "a", "001_a", "collective", {sample("1", true, true, 8.6), sample("2", false, true, 40.0)}, {}},
                {2, "b", "002_b", "collective", {sample("3", true, true, 2.0)}, {}}};
  ScoreSettings st;
  st.ks = {1};
  Scores s = score(r, st);
  EXPECT_EQ(s.largest_speedup, 8.6) << "the incorrect 40x is not a speedup";
  EXPECT_EQ(s.settings.thresholds, (std::vector<double>{0, 0.5, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 6, 8, 12}));
  ASSERT_EQ(s.curve.size(), s.settings.thresholds.size());
  EXPECT_NEAR(s.curve[10].value, 0.25, 1e-12) << "fast_8@1: half of 001_a's samples, none of 002_b's";
  EXPECT_EQ(s.curve[11].value, 0.0) << "fast_12@1: none";

  st.extend_thresholds = false;  // `--thresholds` given: drawn as given
  EXPECT_EQ(score(r, st).settings.thresholds, ScoreSettings{}.thresholds);
}

TEST(Aggregate, RejectsKBelowOne) {
  ScoreSettings st;
  st.ks = {0};
  EXPECT_THROW(score(LoadedResults{}, st), pkb::Error);
}

TEST(Runs, AFailedGenerationIsAFailedSample) {
  LoadedResults r =
      parse(record_line({.sha256 = "a", .speedup = 2.0, .sample = 0}) +
            record_line({.sha256 = "b", .speedup = 0.5, .sample = 1}) +
            record_line({.sha256 = "generation:001_allreduce:2", .status = "generation_failed", .sample = 2}));
  ASSERT_EQ(r.malformed, 0) << r.warnings[0];
  ASSERT_EQ(r.problems.size(), 1u);
  ASSERT_EQ(r.problems[0].samples.size(), 3u);
  EXPECT_EQ(r.problems[0].samples[2].index, 2);  // from the record's "sample": the path is empty
  EXPECT_EQ(r.problems[0].samples[2].key, "001_allreduce#2");
  EXPECT_EQ(r.problems[0].samples[2].generation_status, "no_code");
  Scores s = score(r, ScoreSettings{});
  const ProblemScore& p = s.problems[0];
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.c_robust, 2);
  EXPECT_EQ(p.c_pkb, 2);
  EXPECT_EQ(p.generation_failed, 1);
  EXPECT_NEAR(p.pass_robust[0].value, 2.0 / 3, 1e-12);
  EXPECT_NEAR(p.fast[0].value, 1.0 / 3, 1e-12);  // only the 2.0x sample is faster than the baseline
  EXPECT_EQ(s.overall.samples, 3);
  EXPECT_EQ(s.overall.generation_failed, 1);
  EXPECT_TRUE(s.without_samples.empty());
}

TEST(Runs, NotEvaluatedIsCountedButIsNoSample) {
  LoadedResults r =
      parse(record_line({.sha256 = "a", .speedup = 2.0}) +
            record_line({.id = 2, .folder = "002_b", .category = "graph", .sha256 = "b0", .status = "not_evaluated"}) +
            record_line({.id = 2, .folder = "002_b", .category = "graph", .sha256 = "b1", .status = "not_evaluated"}));
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_EQ(r.problems[1].samples.size(), 0u);
  EXPECT_EQ(r.problems[1].not_evaluated.size(), 2u);
  ScoreSettings st;
  st.thresholds = {0, 1};
  Scores s = score(r, st);
  ASSERT_EQ(s.problems.size(), 2u);  // listed, not dropped
  const ProblemScore& skipped = s.problems[1];
  EXPECT_EQ(skipped.n, 0);
  EXPECT_EQ(skipped.not_evaluated, 2);
  EXPECT_FALSE(skipped.fully_evaluated());
  EXPECT_TRUE(s.without_samples.empty());  // not a failure
  EXPECT_EQ(s.not_fully_evaluated, std::vector<std::string>{"002_b"});
  EXPECT_EQ(s.overall.problems, 1);  // the aggregate is over 001 alone
  EXPECT_EQ(s.overall.samples, 1);
  EXPECT_EQ(s.overall.not_evaluated, 2);
  EXPECT_EQ(s.overall.not_fully_evaluated, 1);
  EXPECT_NEAR(s.overall.mean(s.overall.pass_robust[0]), 1.0, 1e-12);
  EXPECT_NEAR(s.curve[0].value, 1.0, 1e-12);  // p = 0, k = 1: over 001 alone, not halved by 002
  const Aggregate& graph = s.by_category.at("graph");
  EXPECT_EQ(graph.problems, 0);
  EXPECT_EQ(graph.not_evaluated, 2);
  ASSERT_EQ(graph.pass_robust.size(), st.ks.size());  // sized even though no problem entered it
}

TEST(Runs, AnEvaluationAppendedLaterSupersedesNotEvaluated) {
  LoadedResults r =
      parse(record_line({.sha256 = "x", .status = "not_evaluated"}) + record_line({.sha256 = "x", .speedup = 1.5}));
  EXPECT_EQ(r.duplicates, 1);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_TRUE(r.problems[0].not_evaluated.empty());
  ASSERT_EQ(r.problems[0].samples.size(), 1u);
  EXPECT_EQ(r.problems[0].samples[0].status, "correct");
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.overall.not_evaluated, 0);
  EXPECT_EQ(s.overall.problems, 1);
}

TEST(Runs, AKernelGeneratedOnARetrySupersedesTheFailedGeneration) {
  // Invocation 1: sample 1's request failed after its retries; invocation 2 got a kernel for it.
  LoadedResults r =
      parse(record_line({.sha256 = "a", .speedup = 2.0, .sample = 0}) +
            record_line({.sha256 = "generation:001_allreduce:1", .status = "generation_failed", .sample = 1}) +
            record_line({.sha256 = "b", .speedup = 1.5, .sample = 1}));
  EXPECT_EQ(r.duplicates, 1);
  ASSERT_EQ(r.problems[0].samples.size(), 2u);
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.problems[0].n, 2);  // not 3: the sample is counted once, by its kernel
  EXPECT_EQ(s.problems[0].c_robust, 2);
  EXPECT_EQ(s.problems[0].generation_failed, 0);
}

TEST(Runs, FixtureRunCountsEveryKind) {
  LoadedResults r = load_results(std::string(PKB_SCORING_FIXTURES) + "/fixtures/run");
  EXPECT_EQ(r.malformed, 0);
  EXPECT_EQ(r.records, 9);
  Scores s = score(r, ScoreSettings{});
  EXPECT_EQ(s.overall.problems, 5);  // 013 is in the manifest's selection without any record: counts 0
  EXPECT_EQ(s.overall.samples, 7);   // 9 records less the 2 not evaluated
  EXPECT_EQ(s.overall.generation_failed, 2);
  EXPECT_EQ(s.overall.not_evaluated, 2);
  EXPECT_EQ(s.not_fully_evaluated, std::vector<std::string>{"012_ring_attention"});
}

// Records carry every measured timing method's speedup; scoring uses each record's choice unless told a method.
// A record without a device view (W > 1, or a busy GPU) has no device speedup: under `device` it is not fast.
TEST(Score, TimingMethodPicksWhichSpeedupCounts) {
  auto line = [](const std::string& sha, double pkb, double paper, std::optional<double> device) {
    auto j = nlohmann::json::parse(pkb::test::record_line({.sha256 = sha, .speedup = pkb}));
    j["timing"]["method"] = "pkb";
    j["timing"]["by_method"] = {{"pkb", {{"speedup", pkb}}}, {"paper", {{"speedup", paper}}}};
    j["timing"]["by_method"]["device"] = {{"candidate_us", device ? 10.0 : 0.0}};
    if (device) j["timing"]["by_method"]["device"]["speedup"] = *device;
    return j.dump() + "\n";
  };
  // Slower than the baseline under pkb's per-call timing, faster back to back (host dispatch hidden).
  LoadedResults r = parse(line("a", 0.9, 1.2, 0.5) + line("b", 2.0, 1.5, std::nullopt));
  EXPECT_EQ(r.settings["timing_method"], nlohmann::json::array({"pkb"}));
  ScoreSettings st;
  st.ks = {1};
  Scores as_recorded = score(r, st);
  EXPECT_EQ(as_recorded.problems[0].c_fast, 1);
  EXPECT_DOUBLE_EQ(*as_recorded.problems[0].best_speedup, 2.0);
  st.timing_method = "paper";
  Scores paper = score(r, st);
  EXPECT_EQ(paper.problems[0].c_fast, 2);
  EXPECT_DOUBLE_EQ(*paper.problems[0].best_speedup, 1.5);
  EXPECT_NEAR(*paper.problems[0].geomean_speedup(), std::sqrt(1.2 * 1.5), 1e-12);
  st.timing_method = "device";
  Scores device = score(r, st);
  EXPECT_EQ(device.problems[0].c_fast, 0);
  EXPECT_DOUBLE_EQ(*device.problems[0].best_speedup, 0.5);
  st.timing_method = "fastest";
  EXPECT_THROW(score(r, st), pkb::Error);
}

// A correct sample timed on a host faster or slower than its baseline's (timing.host_drift) keeps its speedup and
// is counted, per problem and overall, and summary.md says so; an incorrect one is not counted.
TEST(Score, HostDriftIsCountedOverCorrectSamples) {
  auto line = [](const std::string& sha, bool drift, const std::string& status) {
    auto j = nlohmann::json::parse(pkb::test::record_line({.sha256 = sha, .status = status, .speedup = 2.0}));
    if (drift) j["timing"]["host_drift"] = true, j["timing"]["host_speed_ratio"] = 1.5;
    return j.dump() + "\n";
  };
  LoadedResults r = parse(line("a", true, "correct") + line("b", false, "correct") + line("c", true, "incorrect"));
  ScoreSettings st;
  st.ks = {1};
  Scores s = score(r, st);
  EXPECT_EQ(s.problems[0].host_drift, 1);
  EXPECT_EQ(s.overall.host_drift, 1);
  EXPECT_EQ(s.problems[0].c_fast, 2) << "the flag informs; it does not take the speedup away";
  EXPECT_NE(summary_md(s, r).find("1 correct sample was timed while the host ran more than 1.2x"), std::string::npos)
      << summary_md(s, r);
  Scores clean = score(parse(line("b", false, "correct")), st);
  EXPECT_EQ(summary_md(clean, r).find("timing.host_drift"), std::string::npos);
}

// A time below the roofline floor is a timing bug or a forgery: the record claims no speedup or candidate SOL% under
// any method, even where speedups were written beside the flag, so the sample is correct but never fast; it is counted
// (any verdict) and summary.md says so at the top. The baseline's SOL% stands.
TEST(Score, TimesBelowTheRooflineClaimNoSpeedupUnderAnyMethod) {
  auto line = [](const std::string& sha, bool below, const std::string& status) {
    auto j = nlohmann::json::parse(pkb::test::record_line({.sha256 = sha, .status = status, .speedup = 40.0}));
    j["timing"]["by_method"] = {{"pkb", {{"speedup", 40.0}}}, {"paper", {{"speedup", 50.0}}}};
    j["roofline"] = {{"floor_us", 100.0}, {"sol_candidate", 8.0}, {"sol_baseline_pytorch_eager", 0.2}};
    if (below)
      j["timing"]["below_roofline"] = {
          {"floor_us", 100.0}, {"factor", 2.0}, {"bound", "hbm"}, {"methods", {{"pkb", 12.5}}}};
    return j.dump() + "\n";
  };
  const std::string lines =
      line("forged", true, "correct") + line("honest", false, "correct") + line("wrong", true, "incorrect");
  LoadedResults r = parse(lines);
  ASSERT_EQ(r.problems.size(), 1u);
  const pkb::ResultRecord& forged = r.problems[0].samples[0].record;
  EXPECT_TRUE(forged.below_roofline);
  EXPECT_FALSE(forged.speedup || forged.speedup_pkb || forged.speedup_paper || forged.sol_candidate);
  EXPECT_TRUE(forged.sol_baseline);
  ScoreSettings st;
  st.ks = {1};
  for (std::string method : {"", "pkb", "paper"}) {
    st.timing_method = method;
    Scores s = score(r, st);
    const ProblemScore& p = s.problems[0];
    EXPECT_EQ(p.c_robust, 2) << method;
    EXPECT_EQ(p.c_fast, 1) << method << ": only the sample timed above the floor can be fast";
    EXPECT_DOUBLE_EQ(*p.best_speedup, method == "paper" ? 50.0 : 40.0) << method;
    EXPECT_EQ(p.below_roofline, 2) << method;
    EXPECT_EQ(s.overall.below_roofline, 2) << method;
    EXPECT_EQ(p.sol_candidate.count, 1) << method;
    EXPECT_EQ(p.sol_baseline.count, 2) << method;
  }
  Scores s = score(r, st);
  EXPECT_NE(summary_md(s, r).find("2 samples were timed below the problem's roofline floor"), std::string::npos)
      << summary_md(s, r);
  EXPECT_NE(report_html(s, r).find("id=\"below-roofline\""), std::string::npos);
  Scores clean = score(parse(line("honest", false, "correct")), st);
  EXPECT_EQ(summary_md(clean, r).find("timing.below_roofline"), std::string::npos);
  // Written back (a merge, a rescore), the record keeps its flag and claims no speedup.
  pkb::ResultRecord again = pkb::record_from_json(pkb::record_to_json(forged));
  EXPECT_TRUE(again.below_roofline);
  EXPECT_FALSE(again.speedup || again.speedup_paper);
}

// Ranks that shared a GPU timed contention: such a record claims no speedup or SOL% under any method, even if
// speedups were written beside `contended` (by an older pkb, or by hand), and is counted as a functional check.
TEST(Score, ContendedTimingsClaimNoSpeedupUnderAnyMethod) {
  auto line = [](const std::string& sha, bool contended) {
    auto j = nlohmann::json::parse(pkb::test::record_line({.sha256 = sha, .speedup = 3.0}));
    j["timing"]["by_method"] = {{"pkb", {{"speedup", 3.0}}}, {"paper", {{"speedup", 4.0}}}};
    j["roofline"] = {{"sol_candidate", 0.5}};
    if (contended) j["timing"]["contended"] = true;
    return j.dump() + "\n";
  };
  LoadedResults r = parse(line("shared", true) + line("own", false));
  ASSERT_EQ(r.problems.size(), 1u);
  ScoreSettings st;
  st.ks = {1};
  for (std::string method : {"", "pkb", "paper"}) {
    st.timing_method = method;
    Scores s = score(r, st);
    const ProblemScore& p = s.problems[0];
    EXPECT_EQ(p.c_robust, 2) << method;
    EXPECT_EQ(p.c_fast, 1) << method << ": only the sample with a GPU of its own can be fast";
    EXPECT_EQ(p.contended, 1) << method;
    EXPECT_EQ(s.overall.contended, 1) << method;
    EXPECT_EQ(p.sol_candidate.count, 1) << method;
  }
}
