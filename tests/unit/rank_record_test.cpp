// The rank records, plans and batches (protocol/rank_record.h, protocol/rank_plan.h): what a rank program writes reads
// back as the same struct, and a message that is not an object, lacks a required key or holds a key of the wrong
// type is refused (ProtocolError naming the key), never read as 0; reading a job's record files (launch/jobs.h).
#include "protocol/rank_record.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "launch/jobs.h"
#include "protocol/rank_plan.h"
#include "test_util.h"

namespace {

using json = nlohmann::json;
using pkb::protocol::ProtocolError;
using pkb::protocol::RankRecord;
using pkb::protocol::RankStatus;
using pkb::protocol::RankTiming;

pkb::protocol::SampleSummary summary(double median) {
  return {median,       median + 1,   median - 1, median + 5,   0.5,          0.01,
          median - 0.5, median + 0.5, 1,          median - 0.2, median + 0.2, 0.004};
}

// Every key a timing section can hold set, the pass-specific ones of both passes included.
RankTiming full_timing() {
  RankTiming t;
  t.pkb = summary(100);
  t.iters = 3;
  t.iter_us = {99, 100, 101};
  t.paper = {summary(90), 2, {89.5, 90.5}};
  t.reps = 2;
  t.stopped_by = "ci_target";
  t.paper_warmup_calls = 50;
  t.host_loop_us = 1234.5;
  t.escape_event_us = 10;
  t.escape_device_us = 11;
  t.stream_escape = true;
  t.repeated_content_iters = 4;
  t.fresh_median_us = 101;
  t.repeated_median_us = 98;
  t.intervals = pkb::protocol::ContentIntervals{6, 100, 102, 97, 99};
  t.clocks = {{"available", false}, {"note", "no NVML"}};
  t.throttled = true;
  t.host_probe_us = {30, 31};
  t.host_chase_probe_us = {300, 310};
  t.dispatch_cpu = -1;
  t.dispatch_note = "not pinned: one core";
  t.device = pkb::protocol::DeviceTiming{{10, 1, 2, 3, 50, 0.3, 33.3}, summary(80), {80, 81}, std::nullopt};
  t.repeat_medians_us = {100, 101};
  t.repeat_paper_medians_us = {90, 91};
  t.repeat_device_medians_us = std::vector<std::optional<double>>{80, std::nullopt};
  t.repeat_host_probe_us = {30, 30.5};
  t.repeat_host_chase_probe_us = {300, 305};
  t.input_copies = 12;
  t.doorbell_us = 12.5;
  t.input_copies_made = 11;
  t.distinct_input_contents = 10;
  t.copies_drawn_in_place = 9;
  t.captures_sent = 8;
  t.copies_not_drawn = "a prepare step finishes the inputs on the host";
  t.post_window_probes = pkb::protocol::PostWindowProbes{7, 1, 20.5};
  t.call_gate = {{"holds", 3}};
  t.paper_blocks = {{"wakes", 4}, {"calls", 100}, {"max_calls_per_wake", 25}};
  return t;
}

RankRecord full_record() {
  RankRecord r;
  r.rank = 1;
  r.world = 2;
  r.status = RankStatus::runtime_error;
  r.pass = pkb::protocol::RankPass::candidate;
  r.error = "pkb_run returned 7 in trial 0";
  r.pass_seconds = 1.5;
  r.trials =
      std::vector<pkb::protocol::RankTrial>{{.trial = 0, .seconds = 0.25},
                                            {.trial = 1, .inputs_mutated = std::vector<std::string>{"x"}},
                                            {.trial = std::nullopt, .inputs_mutated = std::vector<std::string>{}}};
  r.timing = full_timing();
  r.gpu = "NVIDIA H200";
  r.fp32_math = {{"ieee", true}, {"tf32_cublas", false}};
  r.communicator = "nccl";
  r.device = "cuda:1";
  r.candidate_input_copies = 40;
  r.candidate_warmup_copies = 4;
  r.timed_checks = std::vector<int>{5, 17};
  r.heap = pkb::protocol::RankHeap{
      .bytes = 1 << 20, .arena_bytes = 1 << 16, .input_copies = 40, .input_slots = 4, .warmup_copies = 4};
  r.candidate_process = "runner process";
  r.candidate_lockdown_note = "Landlock ABI 4: signals not scoped";
  r.phase_s = {{"load_and_heap", 0.1}, {"trials", 0.2}};
  r.timing_input_threads = 2;
  return r;
}

// `what` read as a rank record: the ProtocolError's message ("" if it parsed).
std::string refusal(const json& what) {
  try {
    (void)what.get<RankRecord>();
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "";
}

TEST(RankRecord, RoundTripsThroughJson) {
  const RankRecord full = full_record();
  const json j = full;
  EXPECT_EQ(json::parse(j.dump()).get<RankRecord>(), full);
  EXPECT_EQ(json(json::parse(j.dump()).get<RankRecord>()), j) << "every key read back is written again";
  EXPECT_EQ(j["schema"], pkb::protocol::kRankRecordSchema);
  EXPECT_EQ(j["trials"][2]["trial"], "timed");
  EXPECT_TRUE(j["timing"]["repeat_device_medians_us"][1].is_null());
  // A record as rank_main starts it, nothing but its header: every optional key absent, and still the same record.
  const RankRecord bare;
  const json b = bare;
  EXPECT_EQ(b.size(), 5u) << b.dump();
  EXPECT_EQ(json::parse(b.dump()).get<RankRecord>(), bare);
  // Timings with the optional groups unset: what a CPU rank's candidate timing holds.
  RankTiming cpu = full_timing();
  cpu.intervals.reset(), cpu.device.reset(), cpu.dispatch_note.reset(), cpu.post_window_probes.reset();
  cpu.repeat_device_medians_us.reset(), cpu.call_gate = nullptr, cpu.paper_blocks = nullptr;
  cpu.device = pkb::protocol::DeviceTiming{{4, 4, 0, 0, 5000, 0, 0}, std::nullopt, {}, "no call was held"};
  EXPECT_EQ(json::parse(json(cpu).dump()).get<RankTiming>(), cpu);
  EXPECT_FALSE(json(cpu).contains("call_gate"));
  EXPECT_FALSE(json(cpu).contains("paper_blocks"));
  EXPECT_FALSE(json(cpu)["device"].contains("median_us"));
}

TEST(RankRecord, AWrongTypedKeyIsRefusedByName) {
  const json good = full_record();
  struct Case {
    json::json_pointer at;
    json value;
    const char* names;  // in the message
  } cases[] = {
      {json::json_pointer("/rank"), "1", "\"rank\""},
      {json::json_pointer("/status"), "okay", "\"status\""},
      {json::json_pointer("/status"), 0, "\"status\""},
      {json::json_pointer("/schema"), "pkb.rank_record/0", "\"schema\""},
      {json::json_pointer("/timed_checks"), "5", "\"timed_checks\""},
      {json::json_pointer("/timed_checks/0"), "5", "\"timed_checks\"[0]"},
      {json::json_pointer("/candidate_input_copies"), 40.5, "\"candidate_input_copies\""},
      {json::json_pointer("/trials/1/inputs_mutated"), "x", "\"inputs_mutated\""},
      {json::json_pointer("/trials/1/trial"), "first", "\"trial\""},
      {json::json_pointer("/heap/bytes"), -1, "\"bytes\""},
      {json::json_pointer("/timing/median_us"), "100", "\"median_us\""},
      {json::json_pointer("/timing/stream_escape"), 1, "\"stream_escape\""},
      {json::json_pointer("/timing/paper/median_us"), nullptr, "\"median_us\""},
      {json::json_pointer("/timing/device/calls"), true, "\"calls\""},
      {json::json_pointer("/timing/host_chase_probe_us"), json::array({1, "2"}), "\"host_chase_probe_us\"[1]"},
      {json::json_pointer("/phase_s/trials"), "0.2", "\"phase_s\"[\"trials\"]"},
  };
  for (const Case& c : cases) {
    json bad = good;
    bad[c.at] = c.value;
    const std::string why = refusal(bad);
    EXPECT_NE(why.find(c.names), std::string::npos) << c.at.to_string() << ": " << (why.empty() ? "parsed" : why);
  }
  // The timing's keys name their section: the error says where.
  json timing = good;
  timing["timing"]["paper"]["reps"] = "2";
  EXPECT_NE(refusal(timing).find("\"timing\""), std::string::npos) << refusal(timing);
  // A required key missing, a record that is no object.
  for (const char* key : {"schema", "rank", "world", "status", "pass"}) {
    json missing = good;
    missing.erase(key);
    EXPECT_NE(refusal(missing).find(std::string("\"") + key + "\""), std::string::npos) << key;
  }
  json no_median = good;
  no_median["timing"].erase("median_us");
  EXPECT_NE(refusal(no_median).find("\"median_us\""), std::string::npos);
  for (const json& not_object : {json::array({1}), json("ok"), json(nullptr), json(3)})
    EXPECT_NE(refusal(not_object).find("not a JSON object"), std::string::npos) << not_object.dump();
}

TEST(RankRecord, ParsingText) {
  EXPECT_FALSE(pkb::protocol::parse_rank_record("").has_value());
  EXPECT_FALSE(pkb::protocol::parse_rank_record("{\"schema\": ").has_value()) << "not JSON: as if none";
  EXPECT_THROW(pkb::protocol::parse_rank_record("[1, 2]"), ProtocolError);
  EXPECT_EQ(pkb::protocol::parse_rank_record(json(full_record()).dump(2)), full_record());
  // Keys a record does not know are left alone.
  json extra = full_record();
  extra["written_by_a_newer_rank_program"] = 1;
  EXPECT_EQ(pkb::protocol::parse_rank_record(extra.dump()), full_record());
}

// reference.py's timing spells some of the rank programs' keys: read with every key optional, strictly typed.
TEST(RankRecord, ReferencePyTimingIsReadLeniently) {
  json py = {{"median_us", 50.0},
             {"iqr_us", 2},
             {"paper", {{"median_us", 45.0}, {"reps", 3}}},
             {"stopped_by", "budget"},
             {"throttled", true},
             {"repeat_device_medians_us", {40.0, nullptr}},
             {"fp32_math", {{"ieee", true}}},
             {"device", {{"calls", 5}, {"note", "no call was held"}}},
             {"instrument", "call_gate_one_process"},
             {"gate_flags", "write_ops"}};
  std::optional<RankTiming> t = pkb::protocol::reference_py_timing(py);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pkb.median_us, 50);
  EXPECT_EQ(t->instrument, "call_gate_one_process");  // what timed it, as it says (run_reference.py EagerGate)
  EXPECT_EQ(t->gate_flags, "write_ops");
  EXPECT_FALSE(pkb::protocol::reference_py_timing(json{{"median_us", 1}})->instrument.has_value());
  EXPECT_EQ(t->paper.stats.median_us, 45);
  EXPECT_TRUE(t->throttled);
  ASSERT_TRUE(t->device.has_value());
  EXPECT_FALSE(t->device->stats.has_value());
  EXPECT_FALSE(pkb::protocol::reference_py_timing(json{{"paper", {{"median_us", 1}}}}).has_value()) << "no median";
  EXPECT_FALSE(pkb::protocol::reference_py_timing(nullptr).has_value());
  py["throttled"] = "no";
  EXPECT_THROW(pkb::protocol::reference_py_timing(py), ProtocolError);
  EXPECT_TRUE(pkb::protocol::fp32_math_is_ieee(json{{"ieee", true}}));
  EXPECT_FALSE(pkb::protocol::fp32_math_is_ieee(json{{"tf32_cublas", true}}));
  EXPECT_FALSE(pkb::protocol::fp32_math_is_ieee(nullptr));
  EXPECT_THROW(pkb::protocol::fp32_math_is_ieee(json{{"ieee", "yes"}}), ProtocolError);
  EXPECT_EQ(pkb::protocol::reference_py_fp32_math(json{{"status", "ok"}, {"fp32_math", {{"ieee", true}}}}),
            (json{{"ieee", true}}));
  EXPECT_TRUE(pkb::protocol::reference_py_fp32_math(json{{"status", "ok"}}).is_null());
}

TEST(RankPlan, RoundTripsAndRefusesOtherShapes) {
  const pkb::protocol::RankPlan plan{{"--problem-dir", "/pkb/problems/001", "--time", "--seed", "7"}};
  EXPECT_EQ(json(plan), json::array({"--problem-dir", "/pkb/problems/001", "--time", "--seed", "7"}));
  EXPECT_EQ(json::parse(json(plan).dump()).get<pkb::protocol::RankPlan>(), plan);
  const json object = {{"args", json::array()}}, mixed = json::array({"--seed", 7});
  EXPECT_THROW((void)object.get<pkb::protocol::RankPlan>(), ProtocolError);
  EXPECT_THROW((void)mixed.get<pkb::protocol::RankPlan>(), ProtocolError);

  const std::vector<pkb::protocol::RankBatchEntry> batch = {{"/problems/001", "/out/001", {"M=64", "N=48"}},
                                                            {"/problems/002", "/out/002", {}}};
  EXPECT_EQ(pkb::protocol::rank_batch_from_json(json::parse(json(batch).dump())), batch);
  json no_params = json(batch);
  no_params[1].erase("params");
  EXPECT_EQ(pkb::protocol::rank_batch_from_json(no_params), batch);
  json mistyped = json(batch);
  mistyped[0]["out"] = 1;
  try {
    (void)pkb::protocol::rank_batch_from_json(mistyped);
    FAIL() << "a mistyped batch parsed";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("\"out\""), std::string::npos) << e.what();
  }
  EXPECT_THROW(pkb::protocol::rank_batch_from_json(json::array()), ProtocolError);
  EXPECT_THROW(pkb::protocol::rank_batch_from_json(json::object()), ProtocolError);
}

// A job's record files: none or not JSON is no record (the rank wrote none, or was killed writing it); JSON that is no
// rank record is refused; the first rank whose status is not ok is the job's error.
TEST(RankRecord, ReadingAJobsRecordFiles) {
  pkb::test::TempDir dir;
  RankRecord ok = full_record();
  ok.status = RankStatus::ok;
  ok.rank = 0;
  pkb::test::write_file(dir.path() / "rank0.json", json(ok).dump(2));
  pkb::test::write_file(dir.path() / "rank1.json", "{\"schema\": \"pkb.rank");
  auto records = pkb::read_rank_records(dir.path(), 3);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0], ok);
  EXPECT_FALSE(records[1].has_value());
  EXPECT_FALSE(records[2].has_value());
  EXPECT_FALSE(pkb::first_rank_error(records).has_value());
  EXPECT_EQ(pkb::read_rank0_record(dir.path()), ok);

  RankRecord failed = full_record();
  pkb::test::write_file(dir.path() / "rank2.json", json(failed).dump());
  auto e = pkb::first_rank_error(pkb::read_rank_records(dir.path(), 3));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->rank, 2);
  EXPECT_EQ(e->status, RankStatus::runtime_error);
  EXPECT_EQ(e->message, "pkb_run returned 7 in trial 0");

  json bad = ok;
  bad["world"] = "2";
  pkb::test::write_file(dir.path() / "rank0.json", bad.dump());
  try {
    (void)pkb::read_rank_records(dir.path(), 1);
    FAIL() << "a mistyped record file was read";
  } catch (const ProtocolError& err) {
    EXPECT_NE(std::string(err.what()).find("rank0.json"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("\"world\""), std::string::npos) << err.what();
  }
  std::filesystem::remove(dir.path() / "rank0.json");
  EXPECT_THROW(pkb::read_rank0_record(dir.path()), ProtocolError);
}

}  // namespace
