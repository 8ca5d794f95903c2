// The read-only routes: GET /v1/problems, /v1/problems/{id}/prompt, /v1/health.
#include <httplib.h>

#include "core/dtype.h"
#include "core/error.h"
#include "prompt/prompt.h"
#include "serve/api.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;
using httplib::Request;
using httplib::Response;

void send(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void fail(Response& res, int status, const std::string& field, const std::string& message) {
  send(res, status, {{"error", {{"field", field}, {"message", message}, {"status", status}}}});
}

json problem_json(const ProblemSpec& p) {
  json constraints = json::array();
  for (const auto& c : p.world_size.constraints) constraints.push_back(c.text());
  json world = {{"min", p.world_size.min}, {"constraints", constraints}};
  if (p.world_size.max < kUnboundedWorld) world["max"] = p.world_size.max;
  return {{"id", p.id},
          {"slug", p.slug},
          {"folder", p.folder()},
          {"title", p.title},
          {"category", category_name(p.category)},
          {"world_size", world},
          {"parameters", p.parameters},
          {"test_parameters", p.test_parameters}};
}

// A request's integer query parameter, or `fallback`; none (after answering 422) when it is not an integer.
std::optional<int> int_param(const Request& req, Response& res, const std::string& name, int fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  try {
    size_t used = 0;
    int n = std::stoi(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {
  }
  fail(res, 422, name, "must be an integer, got '" + v + "'");
  return std::nullopt;
}

// GET /v1/problems/{id}/prompt?world=W[&variant=one-shot|zero-shot][&dtype=bf16|fp32][&topology=NAME]: the system
// and user prompts `pkb prompt` prints (prompt::build_prompt).
void prompt_route(ApiContext& ctx, const Request& req, Response& res) {
  const ProblemSpec* spec = nullptr;
  try {
    auto selected = ctx.catalog.select(req.matches[1]);
    if (selected.size() == 1) spec = selected[0];
  } catch (const Error&) {
  }
  if (!spec) return fail(res, 404, "problem", "unknown problem '" + std::string(req.matches[1]) + "'");
  auto world = int_param(req, res, "world", 2);
  if (!world) return;
  prompt::PromptOptions po;
  po.world = *world;
  if (auto why = world_size_violation(*spec, *world, spec->parameters)) return fail(res, 422, "world", *why);
  auto variant = prompt::variant_from_name(req.has_param("variant") ? req.get_param_value("variant") : "one-shot");
  if (!variant) return fail(res, 422, "variant", "must be one-shot or zero-shot");
  po.variant = *variant;
  const std::string dtype = req.has_param("dtype") ? req.get_param_value("dtype") : "bf16";
  if (dtype != "bf16" && dtype != "fp32") return fail(res, 422, "dtype", "must be bf16 or fp32");
  po.dtype = *dtype_from_name(dtype);
  po.topology = req.get_param_value("topology");
  try {
    prompt::Prompt p = prompt::build_prompt(*spec, po);
    send(res, 200,
         {{"problem", spec->folder()},
          {"world", *world},
          {"topology", p.topology},
          {"system", p.system},
          {"user", p.user}});
  } catch (const Error& e) {
    fail(res, 422, "topology", e.what());
  }
}

json health_json(ApiContext& ctx) {
  auto states = ctx.store.count_by_state();
  return {{"status", "ok"},
          {"schema", "pkb.serve/1"},
          {"revision", repo_revision()},
          {"device", ctx.device},
          {"slots", ctx.slots.count()},
          {"queued", states["queued"]},
          {"running", states["compiling"] + states["running"]},
          {"uptime_s", epoch_seconds() - ctx.started}};
}

}  // namespace

void install_problem_routes(httplib::Server& server, ApiContext& ctx) {
  server.Get("/v1/problems", [&](const Request&, Response& res) {
    json arr = json::array();
    for (const auto& p : ctx.catalog.problems) arr.push_back(problem_json(p));
    send(res, 200, {{"problems", arr}});
  });
  server.Get(R"(/v1/problems/([^/]+)/prompt)", [&](const Request& q, Response& r) { prompt_route(ctx, q, r); });
  server.Get("/v1/health", [&](const Request&, Response& res) { send(res, 200, health_json(ctx)); });
}

}  // namespace pkb::serve
