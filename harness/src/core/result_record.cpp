#include "core/result_record.h"

#include <ctime>
#include <initializer_list>
#include <type_traits>

#include "core/error.h"

namespace pkb {
namespace {

using json = nlohmann::json;

// The value at j[k0][k1]..., or nullptr when a step is missing or not an object.
const json* find(const json& j, std::initializer_list<const char*> keys) {
  const json* at = &j;
  for (const char* k : keys) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &(*at)[k];
  }
  return at;
}

std::string text(const json& j, std::initializer_list<const char*> keys, const char* required_name = nullptr) {
  const json* v = find(j, keys);
  if (v && v->is_string()) return v->get<std::string>();
  if (required_name) throw Error(std::string("missing string field ") + required_name);
  return "";
}

template <typename T>
std::optional<T> value(const json& j, std::initializer_list<const char*> keys) {
  const json* v = find(j, keys);
  if (!v) return std::nullopt;
  bool fits;
  if constexpr (std::is_same_v<T, bool>)
    fits = v->is_boolean();
  else if constexpr (std::is_integral_v<T>)
    fits = v->is_number_integer();
  else
    fits = v->is_number();
  return fits ? std::optional<T>(v->get<T>()) : std::nullopt;
}

// Sets j[k0][k1]... to x, or removes the leaf when x is unset; the typed field always wins over `fields`.
template <typename T>
void put(json& j, std::initializer_list<const char*> keys, const std::optional<T>& x) {
  json* at = &j;
  const char* leaf = *std::prev(keys.end());
  for (auto k = keys.begin(); k != std::prev(keys.end()); ++k) {
    if (!x && (!at->is_object() || !at->contains(*k))) return;
    if (!(*at)[*k].is_object()) (*at)[*k] = json::object();
    at = &(*at)[*k];
  }
  if (x)
    (*at)[leaf] = *x;
  else
    at->erase(leaf);
}

std::optional<std::string> nonempty(const std::string& s) { return s.empty() ? std::nullopt : std::optional(s); }

const char* sol_baseline_field(const std::string& baseline) {
  return baseline == "pytorch_eager" ? "sol_baseline_pytorch_eager" : "sol_baseline_libtorch_nccl";
}

}  // namespace

const std::vector<StatusInfo>& result_statuses() {
  static const std::vector<StatusInfo> kTable = {
      // status                          name                 sample evaluated failure kind
      {ResultStatus::compile_error, "compile_error", true, true, "compile"},
      {ResultStatus::lint_violation, "lint_violation", true, true, "lint"},
      {ResultStatus::load_error, "load_error", true, true, "load"},
      {ResultStatus::runtime_error, "runtime_error", true, true, "runtime"},
      {ResultStatus::timeout, "timeout", true, true, "timeout"},
      {ResultStatus::crash, "crash", true, true, "crash"},
      {ResultStatus::incorrect, "incorrect", true, true, "incorrect"},
      {ResultStatus::correct, "correct", true, true, ""},
      // The model gave no kernel: a sample that is never correct; its bucket is generation.status.
      {ResultStatus::generation_failed, "generation_failed", true, false, "generation"},
      // The service rejected this sample's request alone (a prompt longer than the model's context, ...): the
      // model cannot answer this problem as asked, a failed sample; the next invocation asks again.
      {ResultStatus::bad_request, "bad_request", true, false, "bad_request"},
      // Compiled, never run (no GPU): not a sample until a later evaluation supersedes it.
      {ResultStatus::not_evaluated, "not_evaluated", false, false, ""},
      // An agent spent a budget (steps, tokens, wall or GPU seconds) before submitting: a failed sample, not judged.
      {ResultStatus::budget_exhausted, "budget_exhausted", true, false, "budget"},
      // pkb's own machinery failed (the reference pass): no verdict, not a sample; `pkb run` evaluates it again.
      {ResultStatus::harness_error, "harness_error", false, false, ""},
  };
  return kTable;
}

const StatusInfo& status_info(ResultStatus s) {
  for (const auto& e : result_statuses())
    if (e.status == s) return e;
  throw Error("result status without a table entry");  // a new enumerator without its row: a bug
}

const char* result_status_name(ResultStatus s) { return status_info(s).name; }

const StatusInfo* find_status(std::string_view name) {
  for (const auto& e : result_statuses())
    if (name == e.name) return &e;
  return nullptr;
}

std::string sample_key(const std::string& folder, std::optional<int> sample, const std::string& sha256) {
  return sample ? folder + "#" + std::to_string(*sample) : folder + "@" + sha256;
}

std::string ResultRecord::sample_key() const { return pkb::sample_key(problem_folder, sample, candidate_sha256); }

ResultRecord record_from_json(const json& j) {
  if (!j.is_object() || j.value("schema", "") != kResultSchema)
    throw Error(std::string("schema is not ") + kResultSchema);
  ResultRecord r;
  r.fields = j;
  r.time = text(j, {"time"});
  auto id = value<int>(j, {"problem", "id"});
  if (!id) throw Error("missing integer field problem.id");
  r.problem_id = *id;
  r.problem_slug = text(j, {"problem", "slug"});
  r.problem_folder = text(j, {"problem", "folder"}, "problem.folder");
  r.problem_category = text(j, {"problem", "category"});
  r.candidate_path = text(j, {"candidate", "path"});
  r.candidate_sha256 = text(j, {"candidate", "sha256"}, "candidate.sha256");
  r.sample = value<int>(j, {"sample"});
  r.turn = value<int>(j, {"turn"});
  r.model = text(j, {"model"});
  r.world = value<int>(j, {"world"}).value_or(0);
  r.device = text(j, {"device"});
  r.dtype = text(j, {"dtype"});
  r.status = text(j, {"status"}, "status");
  r.message = text(j, {"message"});
  r.generation_status = text(j, {"generation", "status"});
  r.generation_message = text(j, {"generation", "message"});
  r.input_tokens = value<int64_t>(j, {"generation", "input_tokens"});
  r.output_tokens = value<int64_t>(j, {"generation", "output_tokens"});
  r.cost_usd = value<double>(j, {"generation", "cost_usd"});
  r.pkb_pass = value<bool>(j, {"checks", "pkb_pass"});
  r.speedup = value<double>(j, {"timing", "speedup"});
  r.baseline = text(j, {"timing", "baseline"});
  r.candidate_process = text(j, {"sandbox", "candidate_process"});
  r.timing_method = text(j, {"timing", "method"});
  r.speedup_pkb = value<double>(j, {"timing", "by_method", "pkb", "speedup"});
  r.speedup_paper = value<double>(j, {"timing", "by_method", "paper", "speedup"});
  r.speedup_device = value<double>(j, {"timing", "by_method", "device", "speedup"});
  r.sol_candidate = value<double>(j, {"roofline", "sol_candidate"});
  r.sol_baseline = value<double>(j, {"roofline", sol_baseline_field(r.baseline)});
  r.contended = value<bool>(j, {"timing", "contended"}).value_or(false);
  if (r.contended)
    r.speedup = r.speedup_pkb = r.speedup_paper = r.speedup_device = r.sol_candidate = r.sol_baseline = std::nullopt;
  const json* below = find(j, {"timing", "below_roofline"});
  r.below_roofline = below && below->is_object();
  if (r.below_roofline) r.speedup = r.speedup_pkb = r.speedup_paper = r.speedup_device = r.sol_candidate = std::nullopt;
  r.host_drift = value<bool>(j, {"timing", "host_drift"}).value_or(false);
  r.warmup = value<int>(j, {"timing_settings", "warmup"});
  r.iters = value<int>(j, {"timing_settings", "iters"});
  r.trials = value<int>(j, {"trials"});
  r.total_s = value<double>(j, {"wall", "total_s"});
  if (const json* p = find(j, {"provenance"}); p && p->is_object()) r.provenance = *p;
  return r;
}

json record_to_json(const ResultRecord& r) {
  json j = r.fields.is_object() ? r.fields : json::object();
  j["schema"] = kResultSchema;
  put(j, {"time"}, nonempty(r.time));
  j["problem"] = {
      {"id", r.problem_id}, {"slug", r.problem_slug}, {"folder", r.problem_folder}, {"category", r.problem_category}};
  j["candidate"] = {{"path", r.candidate_path}, {"sha256", r.candidate_sha256}};
  put(j, {"sample"}, r.sample);
  put(j, {"turn"}, r.turn);
  put(j, {"model"}, nonempty(r.model));
  j["world"] = r.world;
  j["device"] = r.device;
  j["dtype"] = r.dtype;
  j["status"] = r.status;
  j["message"] = r.message;
  if (!r.generation_status.empty() || !r.generation_message.empty()) {
    j["generation"]["status"] = r.generation_status;
    j["generation"]["message"] = r.generation_message;
  }
  put(j, {"generation", "input_tokens"}, r.input_tokens);
  put(j, {"generation", "output_tokens"}, r.output_tokens);
  put(j, {"generation", "cost_usd"}, r.cost_usd);
  put(j, {"checks", "pkb_pass"}, r.pkb_pass);
  put(j, {"timing", "speedup"}, r.speedup);
  put(j, {"timing", "baseline"}, nonempty(r.baseline));
  put(j, {"sandbox", "candidate_process"}, nonempty(r.candidate_process));
  put(j, {"timing", "method"}, nonempty(r.timing_method));
  put(j, {"timing", "by_method", "pkb", "speedup"}, r.speedup_pkb);
  put(j, {"timing", "by_method", "paper", "speedup"}, r.speedup_paper);
  put(j, {"timing", "by_method", "device", "speedup"}, r.speedup_device);
  if (r.contended) j["timing"]["contended"] = true;
  if (r.host_drift) j["timing"]["host_drift"] = true;
  if (r.below_roofline && !(j["timing"].contains("below_roofline") && j["timing"]["below_roofline"].is_object()))
    j["timing"]["below_roofline"] = json::object();
  put(j, {"roofline", "sol_candidate"}, r.sol_candidate);
  put(j, {"roofline", sol_baseline_field(r.baseline)}, r.sol_baseline);
  put(j, {"timing_settings", "warmup"}, r.warmup);
  put(j, {"timing_settings", "iters"}, r.iters);
  put(j, {"trials"}, r.trials);
  put(j, {"wall", "total_s"}, r.total_s);
  if (!r.provenance.empty()) j["provenance"] = r.provenance;
  return j;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return stamp;
}

std::string record_line(const ResultRecord& r) {
  return record_to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace pkb
