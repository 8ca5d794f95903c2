#include "serve/submission.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "spec/problem_spec.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;

struct Preset {
  const char* name;
  std::vector<std::string> args;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> p = {
      {"standard", {}},
      {"quick",
       {"--trials", "2", "--warmup", "1", "--iters", "5", "--paper-warmup", "1", "--paper-iters", "3", "--min-reps",
        "1", "--max-reps", "2"}},
  };
  return p;
}

const std::vector<std::string> kFields = {"problem", "source", "world",           "dtype",
                                          "params",  "timing", "idempotency_key", "priority"};

FieldError bad(const std::string& field, const std::string& message, int status = 422) {
  return FieldError{status, field, message};
}

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The problem named by an id (number or string), a slug or a folder.
std::variant<const ProblemSpec*, FieldError> find_problem(const json& j, const Catalog& catalog) {
  if (!j.contains("problem")) return bad("problem", "missing: a problem id or slug");
  const json& p = j["problem"];
  if (!p.is_string() && !p.is_number_integer()) return bad("problem", "must be a problem id or slug");
  const std::string name = p.is_string() ? p.get<std::string>() : std::to_string(p.get<int64_t>());
  // By id, slug or folder, without Catalog::select's selection grammar (its regexes cost ms an item at -O0).
  if (!name.empty() && name.size() < 9 && name.find_first_not_of("0123456789") == std::string::npos)
    if (const ProblemSpec* spec = catalog.find(std::stoi(name))) return spec;
  for (const auto& spec : catalog.problems)
    if (spec.slug == name || spec.folder() == name) return &spec;
  return bad("problem", "unknown problem '" + name + "' (GET /v1/problems lists them)");
}

std::optional<FieldError> check_fields(const json& j, bool body_repaired) {
  for (const auto& [key, value] : j.items()) {
    if (std::find(kFields.begin(), kFields.end(), key) == kFields.end())
      return bad(key,
                 "unknown field (fields: problem, source, world, dtype, params, timing, priority, "
                 "idempotency_key)");
    if (body_repaired && value.is_string() && value.get<std::string>().find(kReplacement) != std::string::npos)
      return bad(key, "holds bytes that are not UTF-8", 400);
  }
  return std::nullopt;
}

std::optional<FieldError> read_source(json& j, const SubmitLimits& limits, Item& it) {
  if (!j.contains("source") || !j["source"].is_string() || j["source"].get_ref<const std::string&>().empty())
    return bad("source", "missing: the candidate's source as a string");
  const size_t size = j["source"].get_ref<const std::string&>().size();
  if (size > limits.max_source_bytes)
    return bad("source", std::to_string(size) + " bytes, over the limit of " + std::to_string(limits.max_source_bytes),
               413);
  it.source = std::move(j["source"].get_ref<std::string&>());
  return std::nullopt;
}

std::optional<FieldError> read_settings(const json& j, Item& it) {
  if (j.contains("world") && !j["world"].is_number_integer()) return bad("world", "must be an integer");
  it.world = j.value("world", 2);
  if (j.contains("dtype") && (!j["dtype"].is_string() || !dtype_from_name(j["dtype"].get<std::string>()) ||
                              (j["dtype"] != "bf16" && j["dtype"] != "fp32")))
    return bad("dtype", "must be bf16 or fp32");
  it.dtype = j.value("dtype", "bf16");
  const auto& names = timing_preset_names();
  if (j.contains("timing") && (!j["timing"].is_string() ||
                               std::find(names.begin(), names.end(), j["timing"].get<std::string>()) == names.end()))
    return bad("timing", "unknown preset (presets: quick, standard)");
  it.timing = j.value("timing", "standard");
  if (j.contains("priority") && !j["priority"].is_number_integer()) return bad("priority", "must be an integer");
  it.priority = j.value("priority", 0);
  if (j.contains("idempotency_key") &&
      (!j["idempotency_key"].is_string() || j["idempotency_key"].get<std::string>().size() > 200))
    return bad("idempotency_key", "must be a string of at most 200 bytes");
  it.idempotency_key = j.value("idempotency_key", "");
  if (j.contains("params")) {
    if (!j["params"].is_object()) return bad("params", "must be an object of integer parameters");
    for (const auto& [k, v] : j["params"].items())
      if (!v.is_number_integer()) return bad("params." + k, "must be an integer");
    it.params = j["params"];
  }
  return std::nullopt;
}

// W and the parameters against the problem (and this server's GPUs).
std::optional<FieldError> check_shape(const ProblemSpec& spec, const SubmitLimits& limits, const Item& it) {
  std::map<std::string, int64_t> overrides, params = spec.parameters;
  for (const auto& [k, v] : it.params.items()) overrides[k] = params[k] = v.get<int64_t>();
  for (const auto& [k, v] : overrides)
    if (!spec.parameters.count(k)) return bad("params." + k, "problem " + spec.folder() + " has no such parameter");
  if (it.world < 1) return bad("world", "must be at least 1");
  if (auto why = world_size_violation(spec, it.world, params)) return bad("world", *why);
  if (limits.device == DeviceKind::cuda && it.world > limits.gpus)
    return bad("world", "W = " + std::to_string(it.world) + " needs more GPUs than this server has (" +
                            std::to_string(limits.gpus) + ")");
  try {
    resolve_run(spec, it.world, *dtype_from_name(it.dtype), overrides);
  } catch (const Error& e) {
    return bad("params", e.what());
  }
  return std::nullopt;
}

}  // namespace

json FieldError::to_json() const { return {{"field", field}, {"message", message}, {"status", http_status}}; }

const std::vector<std::string>& timing_preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& p : presets()) n.emplace_back(p.name);
    return n;
  }();
  return names;
}

std::vector<std::string> timing_preset_args(const std::string& name) {
  for (const auto& p : presets())
    if (name == p.name) return p.args;
  throw Error("unknown timing preset '" + name + "'");
}

std::variant<Item, FieldError> parse_item(json& j, const Catalog& catalog, const SubmitLimits& limits,
                                          bool body_repaired) {
  if (!j.is_object()) return bad("item", "must be a JSON object", 400);
  if (auto e = check_fields(j, body_repaired)) return *e;
  auto problem = find_problem(j, catalog);
  if (auto* e = std::get_if<FieldError>(&problem)) return *e;
  const ProblemSpec& spec = *std::get<const ProblemSpec*>(problem);
  Item it;
  it.problem = spec.folder();
  if (auto e = read_source(j, limits, it)) return *e;
  if (auto e = read_settings(j, it)) return *e;
  if (auto e = check_shape(spec, limits, it)) return *e;
  return it;
}

}  // namespace pkb::serve
