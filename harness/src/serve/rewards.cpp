#include "serve/rewards.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;

bool truthy(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

const json& member(const json& j, const char* key) {
  static const json null;
  return j.is_object() && j.contains(key) ? j[key] : null;
}

// The ladder's rung of a status; "" for a status that is no verdict on the candidate.
std::string rung_of(const std::string& status) {
  if (status == "compile_error" || status == "lint_violation" || status == "load_error") return "compile";
  if (status == "runtime_error" || status == "crash" || status == "timeout") return "runtime";
  if (status == "incorrect") return "incorrect";
  if (status == "correct") return "correct";
  return "";
}

// log2 of the record's speedup, clipped to [lo, hi]; 0 where the record claims none (contended ranks).
double clipped_log2_speedup(const json& record, double lo, double hi) {
  const json& s = member(member(record, "timing"), "speedup");
  if (!s.is_number() || s.get<double>() <= 0) return 0;
  return std::clamp(std::log2(s.get<double>()), lo, hi);
}

double speedup_or_zero(const json& record) {
  const json& s = member(member(record, "timing"), "speedup");
  return s.is_number() ? s.get<double>() : 0;
}

// ladder-v1: compile -1 < runtime -0.6 < incorrect -0.3 < correct 1 + 0.25 * clip(log2 speedup, -2, 3)
// (so 0.5 .. 1.75: any correct kernel above any failure); a flag: -1.
double ladder_v1(const std::string& rung, const json& record) {
  if (rung == "compile") return -1.0;
  if (rung == "runtime") return -0.6;
  if (rung == "incorrect") return -0.3;
  return 1.0 + 0.25 * clipped_log2_speedup(record, -2, 3);
}

}  // namespace

std::vector<std::string> integrity_flags(const json& record) {
  std::vector<std::string> flags;
  const json& timing = member(record, "timing");
  const json& candidate = member(timing, "candidate");
  if (truthy(timing, "stream_escape") || truthy(candidate, "stream_escape")) flags.push_back("stream_escape");
  if (!member(timing, "repeat_faster").is_null()) flags.push_back("repeat_faster");
  const json& mutated = member(member(record, "checks"), "inputs_mutated");
  if (!mutated.is_null() && !mutated.empty()) flags.push_back("inputs_mutated");
  const json& busy = member(member(candidate, "post_window_probes"), "busy");
  if (busy.is_number() && busy.get<double>() > 0) flags.push_back("post_window_busy");
  const json& lint = member(member(record, "compile"), "lint");
  if ((lint.is_array() && !lint.empty()) || record.value("status", "") == "lint_violation") flags.push_back("lint");
  return flags;
}

json Reward::to_json() const {
  return {{"value", value ? json(*value) : json()}, {"shaping", shaping}, {"rung", rung}, {"flags", flags}};
}

const std::vector<std::string>& shaping_names() {
  static const std::vector<std::string> names = {"ladder-v1", "binary-v1", "speedup-v1"};
  return names;
}

bool known_shaping(const std::string& name) {
  const auto& n = shaping_names();
  return std::find(n.begin(), n.end(), name) != n.end();
}

Reward compute_reward(const json& record, const std::string& shaping) {
  if (!known_shaping(shaping)) throw Error("unknown shaping '" + shaping + "'");
  Reward r;
  r.shaping = shaping;
  r.flags = integrity_flags(record);
  r.rung = rung_of(record.value("status", ""));
  if (r.rung.empty()) return r;  // no verdict on the candidate: no reward
  const bool flagged = !r.flags.empty();
  if (flagged) r.rung = "flagged";
  const bool good = r.rung == "correct";
  if (shaping == "ladder-v1")
    r.value = flagged ? -1.0 : ladder_v1(r.rung, record);
  else if (shaping == "binary-v1")
    r.value = good ? 1.0 : 0.0;
  else  // speedup-v1: the speedup, clipped to [0, 3], for a correct kernel; 0 otherwise
    r.value = good ? std::clamp(speedup_or_zero(record), 0.0, 3.0) : 0.0;
  return r;
}

}  // namespace pkb::serve
