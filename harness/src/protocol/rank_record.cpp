#include "protocol/rank_record.h"

#include <utility>

namespace pkb::protocol {
namespace {

using json = nlohmann::json;

// The enum a name stands for (core/enum_names.h); ProtocolError for a name its table lacks.
template <class E>
E enum_read(const Fields& f, const char* key) {
  std::string name;
  f.required(key, name);
  if (std::optional<E> e = enum_from_name<E>(name)) return *e;
  throw ProtocolError(f.where(key) + ": unknown value \"" + name + "\"");
}

// Each struct's keys are spelled once, in a table of (key, member) pairs that Writer and Reader (protocol/fields.h)
// both walk.

template <class S, class V>  // S: SampleSummary, const or not
void summary_fields(S& s, V&& v) {
  v("median_us", s.median_us);
  v("mean_us", s.mean_us);
  v("min_us", s.min_us);
  v("max_us", s.max_us);
  v("stddev_us", s.stddev_us);
  v("cv", s.cv);
  v("q25_us", s.q25_us);
  v("q75_us", s.q75_us);
  v("iqr_us", s.iqr_us);
  v("ci95_low_us", s.ci95_low_us);
  v("ci95_high_us", s.ci95_high_us);
  v("ci95_half_rel", s.ci95_half_rel);
}

template <class D, class V>  // D: DeviceTiming (its stats go beside these keys)
void device_fields(D& d, V&& v) {
  v("calls", d.calls);
  v("unheld", d.unheld);
  v("busy", d.busy);
  v("host_bound", d.host_bound);
  v("hold_us", d.hold_us);
  v("max_start_spread_us", d.max_start_spread_us);
  v("max_gap_us", d.max_gap_us);
  v("call_us", d.call_us);
  v("note", d.note);
}

// The keys every timing has (worker/timing.h TimingStats::to_record), but for the pkb method's summary and `paper`.
template <class T, class V>
void timing_core_fields(T& t, V&& v) {
  v("method", t.method);
  v("iters", t.iters);
  v("iter_us", t.iter_us);
  v("reps", t.reps);
  v("stopped_by", t.stopped_by);
  v("paper_warmup_calls", t.paper_warmup_calls);
  v("host_loop_us", t.host_loop_us);
  v("escape_event_us", t.escape_event_us);
  v("escape_device_us", t.escape_device_us);
  v("stream_escape", t.stream_escape);
  v("repeated_content_iters", t.repeated_content_iters);
  v("fresh_median_us", t.fresh_median_us);
  v("repeated_median_us", t.repeated_median_us);
  v("fresh_to_neighbours", t.fresh_to_neighbours);
  v("clocks", t.clocks);
  v("throttled", t.throttled);
  v("host_probe_us", t.host_probe_us);
  v("host_chase_probe_us", t.host_chase_probe_us);
  v("dispatch_cpu", t.dispatch_cpu);
  v("dispatch_note", t.dispatch_note);
}

template <class C, class V>  // C: ContentIntervals
void interval_fields(C& c, V&& v) {
  v("fresh_iters", c.fresh_iters);
  v("fresh_ci95_low_us", c.fresh_ci95_low_us);
  v("fresh_ci95_high_us", c.fresh_ci95_high_us);
  v("repeated_ci95_low_us", c.repeated_ci95_low_us);
  v("repeated_ci95_high_us", c.repeated_ci95_high_us);
}

// The keys only some timings have (each pass's own), all optional.
template <class T, class V>
void timing_optional_fields(T& t, V&& v) {
  v("repeat_medians_us", t.repeat_medians_us);
  v("repeat_paper_medians_us", t.repeat_paper_medians_us);
  v("repeat_host_probe_us", t.repeat_host_probe_us);
  v("repeat_host_chase_probe_us", t.repeat_host_chase_probe_us);
  v("input_copies", t.input_copies);
  v("doorbell_us", t.doorbell_us);
  v("input_copies_made", t.input_copies_made);
  v("distinct_input_contents", t.distinct_input_contents);
  v("copies_drawn_in_place", t.copies_drawn_in_place);
  v("captures_sent", t.captures_sent);
  v("copies_not_drawn", t.copies_not_drawn);
  v("instrument", t.instrument);
  v("gate_flags", t.gate_flags);
}

template <class P, class V>  // P: PostWindowProbes
void probe_fields(P& p, V&& v) {
  v("calls", p.calls);
  v("busy", p.busy);
  v("max_start_spread_us", p.max_start_spread_us);
}

template <class H, class V>  // H: RankHeap
void heap_fields(H& h, V&& v) {
  v("bytes", h.bytes);
  v("input_copies", h.input_copies);
  v("input_slots", h.input_slots);
  v("warmup_copies", h.warmup_copies);
  v("arena_bytes", h.arena_bytes);
}

// A rank record's optional keys (the schema, rank, world, status and pass are required and come first).
template <class R, class V>
void record_optional_fields(R& r, V&& v) {
  v("error", r.error);
  v("pass_seconds", r.pass_seconds);
  v("trials", r.trials);
  v("timing", r.timing);
  v("gpu", r.gpu);
  v("communicator", r.communicator);
  v("device", r.device);
  v("candidate_input_copies", r.candidate_input_copies);
  v("candidate_warmup_copies", r.candidate_warmup_copies);
  v("timed_checks", r.timed_checks);
  v("prepare_step", r.prepare_step);
  v("heap", r.heap);
  v("candidate_process", r.candidate_process);
  v("candidate_lockdown_note", r.candidate_lockdown_note);
  v("timing_input_threads", r.timing_input_threads);
}

// The summary's keys into j, beside whatever j holds (the pkb method's sit at the timing's top level).
void put_summary(json& j, const SampleSummary& s) { summary_fields(s, Writer{j}); }

// The summary's keys from f: every one required, or (lenient: reference.py's timing) every one optional.
void get_summary(const Fields& f, SampleSummary& s, bool lenient) { summary_fields(s, Reader{f, lenient}); }

void get_device(const Fields& f, DeviceTiming& d, bool lenient) {
  if (f.has("median_us")) get_summary(f, d.stats.emplace(), lenient);
  device_fields(d, Reader{f, lenient});
}

void get_paper(const Fields& f, PaperTiming& p, bool lenient) {
  Reader get{f, lenient};
  get_summary(f, p.stats, lenient);
  get("reps", p.reps);
  get("rep_us", p.rep_us);
}

void get_timing_core(const Fields& f, RankTiming& t, bool lenient) {
  get_summary(f, t.pkb, lenient);
  if (lenient && f.has("paper"))
    get_paper(Fields(f.at("paper"), f.where("paper")), t.paper, true);
  else if (!lenient)
    f.required("paper", t.paper);
  timing_core_fields(t, Reader{f, lenient});
}

// The keys only some timings have: the content intervals, the device view, each pass's own.
void get_timing_extras(const Fields& f, RankTiming& t, bool lenient) {
  if (f.has("fresh_iters")) interval_fields(t.intervals.emplace(), Reader{f});
  if (lenient && f.has("device"))
    get_device(Fields(f.at("device"), f.where("device")), t.device.emplace(), true);
  else if (!lenient)
    f.optional("device", t.device);
  f.optional("repeat_device_medians_us", t.repeat_device_medians_us);
  timing_optional_fields(t, Reader{f});
  f.optional("call_gate", t.call_gate);
  f.optional("paper_blocks", t.paper_blocks);
  if (f.has("post_window_probes"))
    probe_fields(t.post_window_probes.emplace(),
                 Reader{Fields(f.at("post_window_probes"), f.where("post_window_probes"))});
}

RankTiming timing_from(const json& j, const std::string& what, bool lenient) {
  Fields f(j, what);
  RankTiming t;
  get_timing_core(f, t, lenient);
  get_timing_extras(f, t, lenient);
  return t;
}

json optional_doubles_json(const std::vector<std::optional<double>>& v) {
  json a = json::array();
  for (const auto& x : v) a.push_back(x ? json(*x) : json(nullptr));
  return a;
}

}  // namespace

void to_json(json& j, const SampleSummary& s) {
  j = json::object();
  put_summary(j, s);
}

void from_json(const json& j, SampleSummary& s) { get_summary(Fields(j, "the sample"), s, false); }

void to_json(json& j, const PaperTiming& p) {
  to_json(j, p.stats);
  j["reps"] = p.reps;
  j["rep_us"] = p.rep_us;
}

void from_json(const json& j, PaperTiming& p) { get_paper(Fields(j, "the paper method's timing"), p, false); }

void to_json(json& j, const DeviceTiming& d) {
  j = json::object();
  if (d.stats) put_summary(j, *d.stats);
  device_fields(d, Writer{j});
}

void from_json(const json& j, DeviceTiming& d) { get_device(Fields(j, "the device view's timing"), d, false); }

void to_json(json& j, const RankTiming& t) {
  to_json(j, t.pkb);
  j["paper"] = t.paper;
  timing_core_fields(t, Writer{j});
  if (const auto& c = t.intervals) interval_fields(*c, Writer{j});
  put_optional(j, "device", t.device);
  if (t.repeat_device_medians_us) j["repeat_device_medians_us"] = optional_doubles_json(*t.repeat_device_medians_us);
  timing_optional_fields(t, Writer{j});
  if (const auto& p = t.post_window_probes) probe_fields(*p, Writer{j["post_window_probes"] = json::object()});
  if (!t.call_gate.is_null()) j["call_gate"] = t.call_gate;
  if (!t.paper_blocks.is_null()) j["paper_blocks"] = t.paper_blocks;
}

void from_json(const json& j, RankTiming& t) { t = timing_from(j, "the timing", false); }

json RankTrial::label() const { return trial ? json(*trial) : json("timed"); }

void to_json(json& j, const RankTrial& t) {
  j = {{"trial", t.label()}};
  put_optional(j, "seconds", t.seconds);
  put_optional(j, "inputs_mutated", t.inputs_mutated);
}

void from_json(const json& j, RankTrial& t) {
  Fields f(j, "the trial");
  std::string timed;
  if (f.has("trial") && j.at("trial").is_string()) {
    f.required("trial", timed);
    if (timed != "timed") throw ProtocolError(f.where("trial") + ": a number or \"timed\" expected, got " + timed);
    t.trial.reset();
  } else {
    int trial = 0;
    f.required("trial", trial);
    t.trial = trial;
  }
  f.optional("seconds", t.seconds);
  f.optional("inputs_mutated", t.inputs_mutated);
}

void to_json(json& j, const RankHeap& h) {
  j = json::object();
  heap_fields(h, Writer{j});
}

void from_json(const json& j, RankHeap& h) { heap_fields(h, Reader{Fields(j, "the heap")}); }

void to_json(json& j, const RankRecord& r) {
  j = {{"schema", kRankRecordSchema},
       {"rank", r.rank},
       {"world", r.world},
       {"status", enum_name(r.status)},
       {"pass", enum_name(r.pass)}};
  record_optional_fields(r, Writer{j});
  if (!r.fp32_math.is_null()) j["fp32_math"] = r.fp32_math;
  if (!r.phase_s.empty()) j["phase_s"] = r.phase_s;
}

void from_json(const json& j, RankRecord& r) {
  Fields f(j, "the rank record");
  r = RankRecord{};
  std::string schema;
  f.required("schema", schema);
  if (schema != kRankRecordSchema)
    throw ProtocolError(f.where("schema") + ": " + schema + ", not " + kRankRecordSchema);
  f.required("rank", r.rank);
  f.required("world", r.world);
  r.status = enum_read<RankStatus>(f, "status");
  r.pass = enum_read<RankPass>(f, "pass");
  record_optional_fields(r, Reader{f});
  f.optional("fp32_math", r.fp32_math);
  f.optional("phase_s", r.phase_s);
}

std::optional<RankRecord> parse_rank_record(const std::string& text) {
  if (text.empty()) return std::nullopt;
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  RankRecord r;
  from_json(j, r);
  return r;
}

std::optional<RankTiming> reference_py_timing(const json& timing) {
  if (!timing.is_object() || !timing.contains("median_us")) return std::nullopt;
  return timing_from(timing, "reference.py's timing", true);
}

bool fp32_math_is_ieee(const json& fp32_math) {
  if (!fp32_math.is_object()) return false;
  bool ieee = false;
  Fields(fp32_math, "fp32_math").optional("ieee", ieee);
  return ieee;
}

json reference_py_fp32_math(const json& py_record) {
  if (!py_record.is_object()) return nullptr;
  json fp32_math;
  Fields(py_record, "reference.py's record").optional("fp32_math", fp32_math);
  return fp32_math;
}

}  // namespace pkb::protocol
