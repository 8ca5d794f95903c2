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

// The summary's keys into j, beside whatever j holds (the pkb method's sit at the timing's top level).
void put_summary(json& j, const SampleSummary& s) {
  j["median_us"] = s.median_us;
  j["mean_us"] = s.mean_us;
  j["min_us"] = s.min_us;
  j["max_us"] = s.max_us;
  j["stddev_us"] = s.stddev_us;
  j["cv"] = s.cv;
  j["q25_us"] = s.q25_us;
  j["q75_us"] = s.q75_us;
  j["iqr_us"] = s.iqr_us;
  j["ci95_low_us"] = s.ci95_low_us;
  j["ci95_high_us"] = s.ci95_high_us;
  j["ci95_half_rel"] = s.ci95_half_rel;
}

// The summary's keys from f: every one required, or (lenient: reference.py's timing) every one optional.
void get_summary(const Fields& f, SampleSummary& s, bool lenient) {
  auto get = [&](const char* key, double& out) { lenient ? f.optional(key, out) : f.required(key, out); };
  get("median_us", s.median_us);
  get("mean_us", s.mean_us);
  get("min_us", s.min_us);
  get("max_us", s.max_us);
  get("stddev_us", s.stddev_us);
  get("cv", s.cv);
  get("q25_us", s.q25_us);
  get("q75_us", s.q75_us);
  get("iqr_us", s.iqr_us);
  get("ci95_low_us", s.ci95_low_us);
  get("ci95_high_us", s.ci95_high_us);
  get("ci95_half_rel", s.ci95_half_rel);
}

// Required keys of the timing section, unless lenient (reference.py's timing: only what it has).
struct TimingReader {
  const Fields& f;
  bool lenient;
  template <class T>
  void operator()(const char* key, T& out) const {
    lenient ? f.optional(key, out) : f.required(key, out);
  }
};

void get_device(const Fields& f, DeviceTiming& d, bool lenient) {
  TimingReader get{f, lenient};
  if (f.has("median_us")) get_summary(f, d.stats.emplace(), lenient);
  get("calls", d.calls);
  get("unheld", d.unheld);
  get("busy", d.busy);
  get("host_bound", d.host_bound);
  get("hold_us", d.hold_us);
  get("max_start_spread_us", d.max_start_spread_us);
  get("max_gap_us", d.max_gap_us);
  get("call_us", d.call_us);
  f.optional("note", d.note);
}

void get_paper(const Fields& f, PaperTiming& p, bool lenient) {
  TimingReader get{f, lenient};
  get_summary(f, p.stats, lenient);
  get("reps", p.reps);
  get("rep_us", p.rep_us);
}

// The keys every timing has (worker/timing.h TimingStats::to_record).
void get_timing_core(const Fields& f, RankTiming& t, bool lenient) {
  TimingReader get{f, lenient};
  get_summary(f, t.pkb, lenient);
  get("method", t.method);
  get("iters", t.iters);
  get("iter_us", t.iter_us);
  if (lenient && f.has("paper"))
    get_paper(Fields(f.at("paper"), f.where("paper")), t.paper, true);
  else if (!lenient)
    get("paper", t.paper);
  get("reps", t.reps);
  get("stopped_by", t.stopped_by);
  get("paper_warmup_calls", t.paper_warmup_calls);
  get("host_loop_us", t.host_loop_us);
  get("escape_event_us", t.escape_event_us);
  get("escape_device_us", t.escape_device_us);
  get("stream_escape", t.stream_escape);
  get("repeated_content_iters", t.repeated_content_iters);
  get("fresh_median_us", t.fresh_median_us);
  get("repeated_median_us", t.repeated_median_us);
  get("clocks", t.clocks);
  get("throttled", t.throttled);
  get("host_probe_us", t.host_probe_us);
  get("host_chase_probe_us", t.host_chase_probe_us);
  get("dispatch_cpu", t.dispatch_cpu);
  f.optional("dispatch_note", t.dispatch_note);
}

// The keys only some timings have: the content intervals, the device view, each pass's own.
void get_timing_extras(const Fields& f, RankTiming& t, bool lenient) {
  if (f.has("fresh_iters")) {
    ContentIntervals& c = t.intervals.emplace();
    f.required("fresh_iters", c.fresh_iters);
    f.required("fresh_ci95_low_us", c.fresh_ci95_low_us);
    f.required("fresh_ci95_high_us", c.fresh_ci95_high_us);
    f.required("repeated_ci95_low_us", c.repeated_ci95_low_us);
    f.required("repeated_ci95_high_us", c.repeated_ci95_high_us);
  }
  if (lenient && f.has("device"))
    get_device(Fields(f.at("device"), f.where("device")), t.device.emplace(), true);
  else if (!lenient)
    f.optional("device", t.device);
  f.optional("repeat_medians_us", t.repeat_medians_us);
  f.optional("repeat_paper_medians_us", t.repeat_paper_medians_us);
  f.optional("repeat_device_medians_us", t.repeat_device_medians_us);
  f.optional("repeat_host_probe_us", t.repeat_host_probe_us);
  f.optional("repeat_host_chase_probe_us", t.repeat_host_chase_probe_us);
  f.optional("input_copies", t.input_copies);
  f.optional("doorbell_us", t.doorbell_us);
  f.optional("input_copies_made", t.input_copies_made);
  f.optional("distinct_input_contents", t.distinct_input_contents);
  f.optional("copies_drawn_in_place", t.copies_drawn_in_place);
  f.optional("captures_sent", t.captures_sent);
  f.optional("copies_not_drawn", t.copies_not_drawn);
  f.optional("call_gate", t.call_gate);
  f.optional("paper_blocks", t.paper_blocks);
  if (f.has("post_window_probes")) {
    Fields p(f.at("post_window_probes"), f.where("post_window_probes"));
    PostWindowProbes& w = t.post_window_probes.emplace();
    p.required("calls", w.calls);
    p.required("busy", w.busy);
    p.required("max_start_spread_us", w.max_start_spread_us);
  }
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
  j["calls"] = d.calls;
  j["unheld"] = d.unheld;
  j["busy"] = d.busy;
  j["host_bound"] = d.host_bound;
  j["hold_us"] = d.hold_us;
  j["max_start_spread_us"] = d.max_start_spread_us;
  j["max_gap_us"] = d.max_gap_us;
  j["call_us"] = d.call_us;
  put_optional(j, "note", d.note);
}

void from_json(const json& j, DeviceTiming& d) { get_device(Fields(j, "the device view's timing"), d, false); }

void to_json(json& j, const RankTiming& t) {
  to_json(j, t.pkb);
  j["method"] = t.method;
  j["iters"] = t.iters;
  j["iter_us"] = t.iter_us;
  j["paper"] = t.paper;
  j["reps"] = t.reps;
  j["stopped_by"] = t.stopped_by;
  j["paper_warmup_calls"] = t.paper_warmup_calls;
  j["host_loop_us"] = t.host_loop_us;
  j["escape_event_us"] = t.escape_event_us;
  j["escape_device_us"] = t.escape_device_us;
  j["stream_escape"] = t.stream_escape;
  j["repeated_content_iters"] = t.repeated_content_iters;
  j["fresh_median_us"] = t.fresh_median_us;
  j["repeated_median_us"] = t.repeated_median_us;
  if (const auto& c = t.intervals) {
    j["fresh_iters"] = c->fresh_iters;
    j["fresh_ci95_low_us"] = c->fresh_ci95_low_us;
    j["fresh_ci95_high_us"] = c->fresh_ci95_high_us;
    j["repeated_ci95_low_us"] = c->repeated_ci95_low_us;
    j["repeated_ci95_high_us"] = c->repeated_ci95_high_us;
  }
  j["clocks"] = t.clocks;
  j["throttled"] = t.throttled;
  j["host_probe_us"] = t.host_probe_us;
  j["host_chase_probe_us"] = t.host_chase_probe_us;
  j["dispatch_cpu"] = t.dispatch_cpu;
  put_optional(j, "dispatch_note", t.dispatch_note);
  put_optional(j, "device", t.device);
  put_optional(j, "repeat_medians_us", t.repeat_medians_us);
  put_optional(j, "repeat_paper_medians_us", t.repeat_paper_medians_us);
  if (t.repeat_device_medians_us) j["repeat_device_medians_us"] = optional_doubles_json(*t.repeat_device_medians_us);
  put_optional(j, "repeat_host_probe_us", t.repeat_host_probe_us);
  put_optional(j, "repeat_host_chase_probe_us", t.repeat_host_chase_probe_us);
  put_optional(j, "input_copies", t.input_copies);
  put_optional(j, "doorbell_us", t.doorbell_us);
  put_optional(j, "input_copies_made", t.input_copies_made);
  put_optional(j, "distinct_input_contents", t.distinct_input_contents);
  put_optional(j, "copies_drawn_in_place", t.copies_drawn_in_place);
  put_optional(j, "captures_sent", t.captures_sent);
  put_optional(j, "copies_not_drawn", t.copies_not_drawn);
  if (const auto& p = t.post_window_probes)
    j["post_window_probes"] = {{"calls", p->calls}, {"busy", p->busy}, {"max_start_spread_us", p->max_start_spread_us}};
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
  j = {{"bytes", h.bytes},
       {"input_copies", h.input_copies},
       {"input_slots", h.input_slots},
       {"warmup_copies", h.warmup_copies},
       {"arena_bytes", h.arena_bytes}};
}

void from_json(const json& j, RankHeap& h) {
  Fields f(j, "the heap");
  f.required("bytes", h.bytes);
  f.required("input_copies", h.input_copies);
  f.required("input_slots", h.input_slots);
  f.required("warmup_copies", h.warmup_copies);
  f.required("arena_bytes", h.arena_bytes);
}

void to_json(json& j, const RankRecord& r) {
  j = {{"schema", kRankRecordSchema},
       {"rank", r.rank},
       {"world", r.world},
       {"status", enum_name(r.status)},
       {"pass", enum_name(r.pass)}};
  put_optional(j, "error", r.error);
  put_optional(j, "pass_seconds", r.pass_seconds);
  put_optional(j, "trials", r.trials);
  put_optional(j, "timing", r.timing);
  put_optional(j, "gpu", r.gpu);
  if (!r.fp32_math.is_null()) j["fp32_math"] = r.fp32_math;
  put_optional(j, "communicator", r.communicator);
  put_optional(j, "device", r.device);
  put_optional(j, "candidate_input_copies", r.candidate_input_copies);
  put_optional(j, "candidate_warmup_copies", r.candidate_warmup_copies);
  put_optional(j, "timed_checks", r.timed_checks);
  put_optional(j, "heap", r.heap);
  put_optional(j, "candidate_process", r.candidate_process);
  put_optional(j, "candidate_lockdown_note", r.candidate_lockdown_note);
  if (!r.phase_s.empty()) j["phase_s"] = r.phase_s;
  put_optional(j, "timing_input_threads", r.timing_input_threads);
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
  f.optional("error", r.error);
  f.optional("pass_seconds", r.pass_seconds);
  f.optional("trials", r.trials);
  f.optional("timing", r.timing);
  f.optional("gpu", r.gpu);
  f.optional("fp32_math", r.fp32_math);
  f.optional("communicator", r.communicator);
  f.optional("device", r.device);
  f.optional("candidate_input_copies", r.candidate_input_copies);
  f.optional("candidate_warmup_copies", r.candidate_warmup_copies);
  f.optional("timed_checks", r.timed_checks);
  f.optional("heap", r.heap);
  f.optional("candidate_process", r.candidate_process);
  f.optional("candidate_lockdown_note", r.candidate_lockdown_note);
  f.optional("phase_s", r.phase_s);
  f.optional("timing_input_threads", r.timing_input_threads);
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
