// A rank's record (schema pkb.rank_record/1): what each rank of a pkb job tells the driver about its pass. Written by
// the rank programs (worker/rank_common.cpp, reference_pass.cpp, candidate_pass.cpp; the timing section by
// worker/timing.cpp), as a file rankR.json (the reference pass) or over the sealed channel (the candidate pass); read
// by the driver (eval/evaluate.cpp, eval/reference.cpp, validate/validate.cpp, launch/jobs.cpp). Every key is
// spelled here only. A record that is not an object, lacks a required key, or holds any key with the wrong type does
// not parse (ProtocolError, protocol/fields.h): pkb's own failure, which the driver records as harness_error, never
// as the candidate's. A key that only some passes or stages write is a std::optional, absent from the JSON when
// unset. Sub-objects the driver copies into its result record without reading (the clocks, the call gate's counters,
// the paper blocks') travel as JSON, as does fp32_math, whose one key the driver reads here (fp32_math_is_ieee).
#pragma once

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "protocol/fields.h"

namespace pkb::protocol {

inline constexpr const char* kRankRecordSchema = "pkb.rank_record/1";

// ok until something fails: error (pkb's own, the rank program threw), load_error (the candidate's library did not
// load), runtime_error (a call failed), crash (the candidate's process died of a signal).
enum class RankStatus { ok, error, load_error, runtime_error, crash };
enum class RankPass { reference, candidate };

// One sample of times (worker/timing.h SampleStats), µs; cv and ci95_half_rel are fractions.
struct SampleSummary {
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, stddev_us = 0, cv = 0, q25_us = 0, q75_us = 0, iqr_us = 0,
         ci95_low_us = 0, ci95_high_us = 0, ci95_half_rel = 0;
  bool operator==(const SampleSummary&) const = default;
};

// The paper method: per repetition the slowest rank's mean call, µs.
struct PaperTiming {
  SampleSummary stats;
  int reps = 0;
  std::vector<double> rep_us;
  bool operator==(const PaperTiming&) const = default;
};

// The device view's counts, as the timing loop keeps them (worker/timing.h DeviceStats) and the record carries them.
struct DeviceCounts {
  int calls = 0, unheld = 0, busy = 0, host_bound = 0;
  double hold_us = 0, max_start_spread_us = 0, max_gap_us = 0;
  bool operator==(const DeviceCounts&) const = default;
};

// The device view (worker/timing.h DeviceStats): its counts, and its calls' statistics where any call counted.
struct DeviceTiming : DeviceCounts {
  std::optional<SampleSummary> stats;  // nullopt: nothing measured (`note` says why)
  std::vector<double> call_us;
  std::optional<std::string> note;
  bool operator==(const DeviceTiming&) const = default;
};

// The medians' intervals of the pkb method's calls on fresh and on repeated contents, where both kinds ran, µs.
struct ContentIntervals {
  int fresh_iters = 0;
  double fresh_ci95_low_us = 0, fresh_ci95_high_us = 0, repeated_ci95_low_us = 0, repeated_ci95_high_us = 0;
  bool operator==(const ContentIntervals&) const = default;
};

// The holds a GPU runner's monitor enqueued right after timed windows (worker/candidate_pass.cpp).
struct PostWindowProbes {
  int calls = 0, busy = 0;
  double max_start_spread_us = 0;
  bool operator==(const PostWindowProbes&) const = default;
};

// A record's timing section (worker/timing.h TimingStats::to_record, and what each pass adds). The pkb method's
// statistics sit at the top level, as records always had them. Times in µs.
struct RankTiming {
  SampleSummary pkb;
  std::string method = "pkb";
  int iters = 0;  // the pkb method's calls (slowest rank per call): iter_us
  std::vector<double> iter_us;
  PaperTiming paper;
  int reps = 0;  // repetitions run
  std::string stopped_by;
  int paper_warmup_calls = 0;
  double host_loop_us = 0, escape_event_us = 0, escape_device_us = 0;
  bool stream_escape = false;
  int repeated_content_iters = 0;
  double fresh_median_us = 0, repeated_median_us = 0;
  // The median over fresh calls of a fresh call's time over its neighbouring repeated calls' (worker/timing.h).
  std::optional<double> fresh_to_neighbours;
  std::optional<ContentIntervals> intervals;
  nlohmann::json clocks;  // worker/timing.h ClockMonitor::to_json, copied through
  bool throttled = false;
  std::vector<double> host_probe_us, host_chase_probe_us;
  int dispatch_cpu = -1;
  std::optional<std::string> dispatch_note;  // where dispatch_cpu < 0
  std::optional<DeviceTiming> device;        // where the device view ran calls
  // The reference pass's baselines (worker/reference_pass.cpp): every timing's medians (--timing-repeats; null where
  // the device view measured nothing) and its median host probes.
  std::optional<std::vector<double>> repeat_medians_us, repeat_paper_medians_us;
  std::optional<std::vector<std::optional<double>>> repeat_device_medians_us;
  std::optional<std::vector<double>> repeat_host_probe_us, repeat_host_chase_probe_us;
  // Both passes: the input copies the calls rotated over, and what the runner's protocol alone costs a call.
  std::optional<int> input_copies;
  std::optional<double> doorbell_us;
  // The candidate pass (worker/candidate_pass.cpp): how its copies were made and its captures sent.
  std::optional<int> input_copies_made, distinct_input_contents, copies_drawn_in_place, captures_sent;
  std::optional<std::string> copies_not_drawn;  // why copies were made on the host though drawing was asked
  // reference.py's (run_reference.py): what timed its calls, as protocol/instruments.h names it ("events", or
  // "call_gate_one_process" through libpkb_eager_gate.so) and the gate's flags; absent: its own events.
  std::optional<std::string> instrument, gate_flags;
  std::optional<PostWindowProbes> post_window_probes;
  nlohmann::json call_gate;  // worker/call_gate.h CallGate::to_json, copied through; null: no gate
  // GPU runners' paper-method blocks (worker/candidate_pass.cpp run_block): wakes, calls, max_calls_per_wake, copied
  // through; null: none
  nlohmann::json paper_blocks;
  bool operator==(const RankTiming&) const = default;
};

// One checked trial of a pass, or (trial nullopt, written "timed") the candidate's timed calls.
struct RankTrial {
  std::optional<int> trial;
  std::optional<double> seconds;                           // the reference pass: the reference's wall time, s
  std::optional<std::vector<std::string>> inputs_mutated;  // the candidate pass: inputs its calls changed
  nlohmann::json label() const;                            // as records write it: the number, or "timed"
  bool operator==(const RankTrial&) const = default;
};

// The candidate pass's symmetric heap (worker/candidate_pass.cpp make_heap).
struct RankHeap {
  size_t bytes = 0, arena_bytes = 0;
  int input_copies = 0, input_slots = 0, warmup_copies = 0;
  bool operator==(const RankHeap&) const = default;
};

struct RankRecord {
  int rank = 0, world = 1;
  RankStatus status = RankStatus::ok;
  RankPass pass = RankPass::reference;
  std::optional<std::string> error;  // why, where status is not ok
  std::optional<double> pass_seconds;
  std::optional<std::vector<RankTrial>> trials;
  std::optional<RankTiming> timing;
  std::optional<std::string> gpu;  // the GPU's name (GPU ranks)
  // The reference pass: its fp32 math as the process read it back (reference/libtorch_version.h use_ieee_fp32,
  // copied through; null: not written), where the reference ran, and the candidate's timing copies it planned
  // (worker/timing.h CopyPlan) with those whose expected outputs it computed.
  nlohmann::json fp32_math;
  std::optional<std::string> communicator, device;
  std::optional<int> candidate_input_copies, candidate_warmup_copies;
  std::optional<std::vector<int>> timed_checks;
  // Whether the problem's inputs are finished by a libtorch prepare step (so the candidate's monitor must be pkb-rank):
  // the reference pass says so, for the driver that has no registry of references (eval/evaluate.cpp).
  std::optional<bool> prepare_step;
  // The candidate pass: its heap, where the candidate ran (and what of the runner's lockdown the kernel refused),
  // seconds per phase (empty: none yet), and the threads that made input copies.
  std::optional<RankHeap> heap;
  std::optional<std::string> candidate_process, candidate_lockdown_note;
  std::map<std::string, double> phase_s;
  std::optional<int> timing_input_threads;
  bool operator==(const RankRecord&) const = default;
};

void to_json(nlohmann::json& j, const SampleSummary& s);
void from_json(const nlohmann::json& j, SampleSummary& s);
void to_json(nlohmann::json& j, const PaperTiming& p);
void from_json(const nlohmann::json& j, PaperTiming& p);
void to_json(nlohmann::json& j, const DeviceTiming& d);
void from_json(const nlohmann::json& j, DeviceTiming& d);
void to_json(nlohmann::json& j, const RankTiming& t);
void from_json(const nlohmann::json& j, RankTiming& t);
void to_json(nlohmann::json& j, const RankTrial& t);
void from_json(const nlohmann::json& j, RankTrial& t);
void to_json(nlohmann::json& j, const RankHeap& h);
void from_json(const nlohmann::json& j, RankHeap& h);
void to_json(nlohmann::json& j, const RankRecord& r);
void from_json(const nlohmann::json& j, RankRecord& r);  // throws ProtocolError naming what is missing or wrong

// A record's text as a rank sent or wrote it: the record, nullopt where the text is empty or not JSON (a rank that
// sent none; the driver's callers decide what that means), ProtocolError where it is JSON but no rank record.
std::optional<RankRecord> parse_rank_record(const std::string& text);

// What the driver reads of reference.py's timing (timing.py.json, harness/python/run_reference.py), which spells
// the rank programs' keys but only some of them (no probes of the host's cache, no escape probe): every key optional,
// each present one strictly typed. nullopt where the timing is not an object with a median (reference.py did not
// time), as a baseline the speedup cannot use.
std::optional<RankTiming> reference_py_timing(const nlohmann::json& timing);
// Whether a process's fp32_math (a rank record's, or reference.py's record's) says IEEE fp32 math (no TF32); false
// where it is not an object or lacks "ieee".
bool fp32_math_is_ieee(const nlohmann::json& fp32_math);
// reference.py's record (py.rankR.json)'s fp32_math; null where the record is not an object or lacks it.
nlohmann::json reference_py_fp32_math(const nlohmann::json& py_record);

}  // namespace pkb::protocol

namespace pkb {
template <>
struct EnumNames<protocol::RankStatus> {
  static constexpr std::pair<protocol::RankStatus, const char*> values[] = {
      {protocol::RankStatus::ok, "ok"},
      {protocol::RankStatus::error, "error"},
      {protocol::RankStatus::load_error, "load_error"},
      {protocol::RankStatus::runtime_error, "runtime_error"},
      {protocol::RankStatus::crash, "crash"}};
};
template <>
struct EnumNames<protocol::RankPass> {
  static constexpr std::pair<protocol::RankPass, const char*> values[] = {{protocol::RankPass::reference, "reference"},
                                                                          {protocol::RankPass::candidate, "candidate"}};
};
}  // namespace pkb
