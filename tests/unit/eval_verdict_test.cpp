// The verdict's parts (eval/evaluate.h, eval/verdict.cpp) on canned records: the flags a candidate's timing earns
// (host drift, repeat_faster, below_roofline), the instruments a record names, contention, what a record that does
// not parse makes of the sample, the sealed channel's records, and the verdict printed for a user.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/evaluate.h"
#include "seal/seal.h"
#include "worker/sample_stats.h"

namespace pkb {
namespace {

// host_drift: the candidate's and the baseline's host probes (medians) more than 1.2x apart, either way.
TEST(TimingHostProbe, DriftFlagsProbesFarApartEitherWay) {
  auto timing = [](std::vector<double> probes) {
    pkb::protocol::RankTiming t;
    t.host_chase_probe_us = probes;
    return std::optional(t);
  };
  nlohmann::json same = host_speed_comparison(timing({100, 300, 101}), timing({99, 100, 102}));
  EXPECT_NEAR(same["host_speed_ratio"].get<double>(), 101.0 / 100, 1e-12);  // medians: one outlier is ignored
  EXPECT_FALSE(same["host_drift"].get<bool>());
  EXPECT_TRUE(host_speed_comparison(timing({130}), timing({100}))["host_drift"].get<bool>());
  EXPECT_TRUE(host_speed_comparison(timing({100}), timing({130}))["host_drift"].get<bool>());
  EXPECT_FALSE(host_speed_comparison(timing({119}), timing({100}))["host_drift"].get<bool>());
  // A record from before the probe (or without it) claims nothing.
  EXPECT_TRUE(host_speed_comparison(timing({100}), timing({})).empty());
  EXPECT_TRUE(host_speed_comparison(std::nullopt, timing({100})).empty());
  EXPECT_FALSE(pkb::host_speed(std::nullopt, timing({100})).has_value());
  EXPECT_TRUE(pkb::host_speed(timing({130}), timing({100}))->drift);
}

// repeat_faster: calls on repeated contents beyond 1.25x faster than on fresh ones, past both medians' intervals.
TEST(RepeatFaster, FlagsOnlyASpeedupOnRepeatsBeyondNoise) {
  auto timing = [](double fresh, double fresh_low, double repeated, double repeated_high) {
    pkb::protocol::RankTiming t;
    t.repeated_content_iters = 20;
    t.fresh_median_us = fresh;
    t.repeated_median_us = repeated;
    t.intervals = pkb::protocol::ContentIntervals{20, fresh_low, fresh, repeated, repeated_high};
    return std::optional(t);
  };
  // A memoizer: every fresh call does the work its repeats skip.
  nlohmann::json memo = repeat_faster(timing(2100, 2050, 60, 80));
  ASSERT_TRUE(memo.is_object());
  EXPECT_NEAR(memo["ratio"].get<double>(), 35, 1e-12);
  EXPECT_DOUBLE_EQ(memo["fresh_ci95_low_us"].get<double>(), 2050);
  // Honest calls on a loaded host: the fresh median 1.5x the repeated one, but its few calls' interval reaches it.
  EXPECT_TRUE(repeat_faster(timing(30000, 14000, 20000, 23000)).is_null());
  EXPECT_TRUE(repeat_faster(timing(1250, 1250, 1000, 1000)).is_null());  // 1.25x exactly is not beyond it
  // No repeated contents, or no fresh calls to compare with: nothing to flag.
  auto none = timing(2100, 2050, 60, 80);
  none->repeated_content_iters = 0;
  EXPECT_TRUE(repeat_faster(none).is_null());
  EXPECT_TRUE(repeat_faster(timing(0, 0, 60, 80)).is_null());
  EXPECT_TRUE(repeat_faster(std::nullopt).is_null());
  // Without the intervals (both kinds' calls not recorded), the medians themselves are compared.
  auto medians_only = timing(2100, 2050, 60, 80);
  medians_only->intervals.reset();
  EXPECT_NEAR(repeat_faster(medians_only)["fresh_ci95_low_us"].get<double>(), 2100, 1e-12);
}

// repeats_may_be_faster: each fresh call against the repeated calls beside it, noise or not; where it holds the paper
// and device methods claim no time. A memoizer on a host so loaded that its intervals overlap is no flag (above) but
// keeps no paper speedup; an honest kernel whose fresh calls fell in a burst of load keeps its claims (its neighbours
// were stretched alike).
TEST(RepeatFaster, TimeClaimsNeedEachFreshCallToMatchItsNeighbours) {
  // Calls in order: fresh (F) and repeated (r) alternate, as the copy plan spreads them.
  const std::vector<bool> kinds = {true, false, true, false, true, false, true, false, true, false};
  // A memoizer under load: every fresh call does 2 ms of work beside repeats that skip it, the load on both.
  const std::vector<double> memo = {4100, 1900, 6000, 3500, 2600, 700, 9000, 6800, 3000, 900};
  // An honest kernel: the first six calls in a 20 ms burst, the rest at 1 ms.
  const std::vector<double> burst = {21000, 20500, 21200, 20800, 21100, 20900, 1000, 1010, 990, 1005};
  EXPECT_GT(pkb::fresh_to_neighbours(memo, kinds), 1.25);
  EXPECT_LT(pkb::fresh_to_neighbours(burst, kinds), 1.25);
  EXPECT_EQ(pkb::fresh_to_neighbours(memo, std::vector<bool>(kinds.size(), true)), 0.0);  // no repeats: no ratio

  auto timing = [](double fresh, double repeated, std::optional<double> neighbours) {
    pkb::protocol::RankTiming t;
    t.repeated_content_iters = 20;
    t.fresh_median_us = fresh;
    t.repeated_median_us = repeated;
    t.fresh_to_neighbours = neighbours;
    t.intervals = pkb::protocol::ContentIntervals{20, fresh / 10, fresh, repeated, repeated * 10};
    return std::optional(t);
  };
  EXPECT_TRUE(repeat_faster(timing(8000, 900, 3.0)).is_null());  // the intervals overlap: no flag
  EXPECT_TRUE(pkb::repeats_may_be_faster(timing(8000, 900, 3.0)));
  EXPECT_FALSE(pkb::repeats_may_be_faster(timing(8000, 900, 1.02)));         // a burst on the fresh calls' stretch
  EXPECT_TRUE(pkb::repeats_may_be_faster(timing(8000, 900, std::nullopt)));  // an older record: the medians
  EXPECT_FALSE(pkb::repeats_may_be_faster(timing(1240, 1000, std::nullopt)));
  auto none = timing(8000, 900, 3.0);
  none->repeated_content_iters = 0;
  EXPECT_FALSE(pkb::repeats_may_be_faster(none));
  EXPECT_FALSE(pkb::repeats_may_be_faster(std::nullopt));
}

// below_roofline: a method's candidate time more than kBelowRooflineFactor below the floor, and only that.
TEST(BelowRoofline, FlagsTimesTheHardwareCannotReach) {
  const nlohmann::json roof = {{"floor_us", 100.0}, {"bound", "hbm"}};
  auto by_method = [](double pkb, double paper, double device) {
    return nlohmann::json{{"pkb", {{"candidate_us", pkb}, {"speedup", 9.0}}},
                          {"paper", {{"candidate_us", paper}}},
                          {"device", {{"candidate_us", device}}}};
  };
  // A kernel at 60 us against a 100 us floor (SOL% 167): within the floor's slack (peak rates, in-switch reductions,
  // writes absorbed by the L2), never flagged; an honest kernel near the roofline is not either.
  EXPECT_TRUE(below_roofline(roof, by_method(60, 100 / kBelowRooflineFactor, 250)).is_null());
  EXPECT_TRUE(below_roofline(roof, by_method(101, 120, 0)).is_null());  // 0: the method claims no time
  // A forged or mistimed call: 3 us on the pkb method, 40 on the device view.
  nlohmann::json b = below_roofline(roof, by_method(3, 120, 40));
  ASSERT_TRUE(b.is_object());
  EXPECT_DOUBLE_EQ(b["floor_us"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(b["factor"].get<double>(), kBelowRooflineFactor);
  EXPECT_EQ(b["bound"], "hbm");
  EXPECT_EQ(b["methods"], (nlohmann::json{{"pkb", 3.0}, {"device", 40.0}}));
  // No floor (a problem without a roofline, or none computed): nothing to compare with.
  EXPECT_TRUE(below_roofline(nlohmann::json{{"floor_us", 0.0}}, by_method(3, 3, 3)).is_null());
  EXPECT_TRUE(below_roofline(nlohmann::json(), by_method(3, 3, 3)).is_null());
}

}  // namespace
}  // namespace pkb

// Each side's instrument, as the record names it: a GPU candidate in a runner crosses the call gate between two
// processes while the libtorch baseline's gated view is two streams of one; in process both are events; CPU runners
// ring a doorbell on both sides; reference.py is listed only where it was timed, by the instrument its timing names.
TEST(CandidateProcess, TheRecordNamesEachSidesInstrument) {
  using nlohmann::json;
  using pkb::CandidateProcess;
  pkb::EvalOptions gpu;
  gpu.device = pkb::DeviceKind::cuda;
  EXPECT_EQ(pkb::timing_instruments(gpu, "events"), json({{"candidate", "call_gate"},
                                                          {"baseline_libtorch_nccl", "call_gate_one_process"},
                                                          {"baseline_pytorch_eager", "events"}}));
  EXPECT_EQ(pkb::timing_instruments(gpu, "call_gate_one_process")["baseline_pytorch_eager"], "call_gate_one_process");
  gpu.candidate_process = CandidateProcess::in_process;
  EXPECT_EQ(pkb::timing_instruments(gpu, nullptr),
            json({{"candidate", "events"}, {"baseline_libtorch_nccl", "events"}}));
  pkb::EvalOptions cpu;
  cpu.device = pkb::DeviceKind::cpu;
  cpu.candidate_process = CandidateProcess::in_process;  // CPU ranks: a runner all the same
  EXPECT_EQ(pkb::timing_instruments(cpu, nullptr),
            json({{"candidate", "doorbell"}, {"baseline_libtorch_nccl", "doorbell"}}));
  // The gate step's measurement (PKB_GATE_IN_PROCESS=1): a GPU candidate in process through the gate's flags on two
  // streams of its own process; a runner's and CPU ranks' instruments do not change.
  setenv("PKB_GATE_IN_PROCESS", "1", 1);
  EXPECT_EQ(pkb::timing_instruments(gpu, nullptr)["candidate"], "call_gate_one_process");
  gpu.candidate_process = CandidateProcess::runner;
  EXPECT_EQ(pkb::timing_instruments(gpu, nullptr)["candidate"], "call_gate");
  EXPECT_EQ(pkb::timing_instruments(cpu, nullptr)["candidate"], "doorbell");
  unsetenv("PKB_GATE_IN_PROCESS");
}

// Times that measure contention claim no speedup: ranks that shared a GPU, or a GPU runner whose CUDA context took
// turns with its monitor's (no MPS). A runner that MPS served, or a CPU-rank record, is timed as usual.
TEST(Verdict, ContentionIsNamedWhereTimesMeasureIt) {
  using nlohmann::json;
  EXPECT_EQ(pkb::contention_reason(json::object()), "");
  EXPECT_EQ(pkb::contention_reason(json{{"runner_mps", true}}), "");
  EXPECT_EQ(pkb::contention_reason(json{{"gpu_sharing", {{"note", "2 ranks share each GPU"}}}}),
            "2 ranks share each GPU");
  const std::string why = pkb::contention_reason(json{{"runner_mps", "nvidia-cuda-mps-control -d: exit 1"}});
  EXPECT_NE(why.find("without MPS"), std::string::npos) << why;
  EXPECT_NE(why.find("exit 1"), std::string::npos) << why;
}

// A bug in reading pkb's own records (here: a timing field of the wrong type, refused where the record is parsed,
// protocol/rank_record.h) is a harness_error, no verdict; any other failure while judging stays the candidate's
// runtime_error.
TEST(ProcessingFailure, AMisreadRecordIsAHarnessErrorNotTheCandidates) {
  nlohmann::json mistyped = pkb::protocol::RankTiming{};
  mistyped["fresh_median_us"] = "2100";  // a string where the monitor writes a number
  try {
    (void)mistyped.get<pkb::protocol::RankTiming>();
    FAIL() << "a mistyped record was read without complaint";
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
  }
  try {
    nlohmann::json header = nlohmann::json::parse("{\"status\":");  // a safetensors header that does not parse
    FAIL() << "parsed " << header.dump();
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
  }
  EXPECT_EQ(pkb::processing_failure_status(std::runtime_error("outputs of the wrong size")),
            pkb::ResultStatus::runtime_error);
}

// The candidate pass's records as the driver receives them over the sealed channel (eval/evaluate.h sealed_records):
// a record from a whole stream that does not parse is pkb's failure (ProtocolError, a harness_error, never the
// candidate's runtime_error); one from a stream that is not believed counts as none, and the stream's verdict stands
// (candidate code may have written it); a record that is not JSON breaks the channel.
TEST(SealedRecords, AMistypedRecordIsPkbsFailureUnlessItsStreamIsNotBelieved) {
  pkb::protocol::RankRecord rank0, rank1;
  rank0.pass = rank1.pass = pkb::protocol::RankPass::candidate;
  rank1.rank = 1, rank0.world = rank1.world = 2;
  rank1.trials = std::vector<pkb::protocol::RankTrial>(1);
  rank1.trials->front().trial = 0;
  rank1.trials->front().inputs_mutated = std::vector<std::string>{"tensor"};
  auto sealed = [](const nlohmann::json& record, const std::string& error = "") {
    pkb::SealedRank s;
    s.record = record.is_null() ? "" : record.dump();
    s.ended = error.empty();
    s.error = error;
    return s;
  };
  pkb::SealedRecords whole = pkb::sealed_records({sealed(rank0), sealed(rank1)});
  EXPECT_EQ(whole.seal_error, "");
  ASSERT_EQ(whole.records.size(), 2u);
  EXPECT_EQ(whole.records[1], rank1);
  EXPECT_FALSE(pkb::sealed_records({sealed(rank0), sealed(nullptr)}).records[1].has_value());

  nlohmann::json mistyped = rank1;
  mistyped["trials"][0]["inputs_mutated"] = "tensor";  // a string where the monitor writes a list
  try {
    (void)pkb::sealed_records({sealed(rank0), sealed(mistyped)});
    FAIL() << "a mistyped record was read without complaint";
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"inputs_mutated\""), std::string::npos) << e.what();
  }
  // A forged record in an injected frame (tests/fixtures/adversarial/inject_frames.cpp): the stream is not believed.
  const nlohmann::json forged = {{"schema", "pkb.rank_record/1"}, {"status", "ok"}, {"timing", {{"median_us", 0.001}}}};
  pkb::SealedRecords injected = pkb::sealed_records({sealed(rank0), sealed(forged, "frame 4: out of sequence")});
  EXPECT_EQ(injected.seal_error, "frame 4: out of sequence");
  EXPECT_FALSE(injected.records[1].has_value());
  pkb::SealedRank garbled = sealed(rank0);
  garbled.record = "{\"schema\": ";
  EXPECT_NE(pkb::sealed_records({garbled}).seal_error.find("not JSON"), std::string::npos);
}

// What `pkb eval` prints: the status and message, the checks, each side's median, the speedup and its baseline, the
// flags, each method's figures, and the note on the instruments where the two sides' differ.
TEST(Verdict, TheFormattedVerdictShowsWhatTheRecordSays) {
  using nlohmann::json;
  json r = {{"problem", {{"folder", "001_allreduce"}}},
            {"world", 2},
            {"device", "cuda"},
            {"dtype", "bf16"},
            {"status", "correct"},
            {"message", "correct"},
            {"checks", {{"robust_pass", true}, {"pkb_pass", false}}},
            {"timing",
             {{"candidate", {{"median_us", 19.4}, {"cv", 0.03}}},
              {"baseline_pytorch_eager", {{"median_us", 32.1}}},
              {"baseline_libtorch_nccl", {{"median_us", 10.8}}},
              {"speedup", 1.66},
              {"baseline", "pytorch_eager"},
              {"method", "pkb"},
              {"stream_escape", true},
              {"host_drift", true},
              {"host_speed_ratio", 1.31},
              {"instrument_note", "the candidate's window crosses the call gate"},
              {"by_method", {{"paper", {{"candidate_us", 20.0}, {"speedup", 1.6}}}}}}}};
  const std::string v = pkb::format_verdict(r);
  for (const char* part :
       {"001_allreduce W=2 cuda bf16: correct", "checks: robust pass, pkb (allclose 1e-2) FAIL",
        "candidate 19.4 us (cv 3.0%)", "PyTorch eager 32.1 us", "libtorch reference 10.8 us",
        "speedup: 1.66x vs pytorch_eager (pkb timing) [stream escape flagged]", "host probe ran 1.31x",
        "paper method: candidate 20.0 us, speedup 1.60x", "note: the candidate's window crosses the call gate"})
    EXPECT_NE(v.find(part), std::string::npos) << "missing '" << part << "' in:\n" << v;
  // A speedup the record leaves null (no device view measured) reads "none", not a 0.00x slowdown.
  json unmeasured = r;
  unmeasured["timing"]["method"] = "device";
  unmeasured["timing"]["speedup"] = nullptr;
  unmeasured["timing"]["by_method"]["device"] = {{"candidate_us", 0.0}, {"speedup", nullptr}};
  const std::string u = pkb::format_verdict(unmeasured);
  EXPECT_NE(u.find("speedup: none vs pytorch_eager (device timing)"), std::string::npos) << u;
  EXPECT_NE(u.find("device method: candidate 0.0 us, speedup none"), std::string::npos) << u;
  EXPECT_EQ(u.find("0.00x"), std::string::npos) << u;
  // A failure with no timing: the message and the stderr's tail, no times.
  json failed = {{"problem", {{"folder", "013_gemm"}}},
                 {"world", 1},
                 {"device", "cpu"},
                 {"dtype", "fp32"},
                 {"status", "crash"},
                 {"message", "rank 0 killed by signal 11"},
                 {"failure", {{"stderr_tail", "segfault here"}}}};
  const std::string f = pkb::format_verdict(failed);
  EXPECT_NE(f.find("013_gemm W=1 cpu fp32: crash"), std::string::npos) << f;
  EXPECT_NE(f.find("stderr (tail):\nsegfault here"), std::string::npos) << f;
  EXPECT_EQ(f.find("median time"), std::string::npos) << f;
}
