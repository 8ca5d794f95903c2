// The routes of remote workers (`pkb worker`, serve/worker.h; docs/serve.md, "Slurm workers"), each a POST with a
// worker's token (a client's is refused, and a worker's is refused on the clients' routes):
//   /v1/work/hello            the evaluation settings workers must use (device, timeouts, sandbox, lease)
//   /v1/work/claim            the next evaluation of W <= max_world, with a lease; 204 when none came in wait_s
//   /v1/work/{id}/heartbeat   renews the lease (and marks the evaluation running); 409 once the claim is not current
//   /v1/work/{id}/result      the child's record: stored only while the claim is current (409 otherwise)
// A claim is named by the evaluation's id and its attempt, and held by TOKEN_NAME/WORKER (the worker's own name),
// so a worker can renew or finish only its own claims, and only the latest claim of an evaluation finishes it.
#include <httplib.h>

#include <atomic>

#include "core/error.h"
#include "core/utf8.h"
#include "serve/api.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;
using httplib::Request;
using httplib::Response;

constexpr double kMaxClaimWait_s = 30;

// The request's body as an object with a worker's name (and, for a claim's routes, its attempt); none after
// answering 400 or 422.
std::optional<json> worker_body(const Request& req, Response& res, bool with_attempt) {
  json j = json::parse(valid_utf8(req.body), nullptr, false);
  if (!j.is_object()) {
    send_error(res, 400, "body", "must be a JSON object");
    return std::nullopt;
  }
  if (!j.contains("worker") || !j["worker"].is_string() || j["worker"].get<std::string>().empty() ||
      j["worker"].get<std::string>().size() > 200) {
    send_error(res, 422, "worker", "must be the worker's name, 1 to 200 bytes");
    return std::nullopt;
  }
  if (with_attempt && (!j.contains("attempt") || !j["attempt"].is_number_integer() || j["attempt"].get<int>() < 1)) {
    send_error(res, 422, "attempt", "must be the claim's attempt, an integer >= 1");
    return std::nullopt;
  }
  return j;
}

// False after answering 422 when the worker evaluates on another device than the server's.
bool same_device(ApiContext& ctx, const json& body, Response& res) {
  if (body.value("device", ctx.device) == ctx.device) return true;
  send_error(res, 422, "device",
             "this server evaluates on " + ctx.device + ": start the worker with --device " + ctx.device);
  return false;
}

void hello(ApiContext& ctx, const Request& req, Response& res) {
  auto name = authenticate(ctx, nullptr, req, res, TokenRole::worker);
  if (!name) return;
  auto body = worker_body(req, res, false);
  if (!body || !same_device(ctx, *body, res)) return;
  send_json(res, 200,
            {{"schema", "pkb.serve/1"},
             {"revision", repo_revision()},
             {"device", ctx.device},
             {"timeout_s", ctx.eval.candidate_timeout_s},
             {"deadline_s", ctx.eval.evaluation_deadline_s},
             {"sandbox", ctx.eval.sandbox},
             {"lease_s", ctx.options.lease_s}});
}

json claim_json(const Claim& c, double lease_s) {
  return {{"id", c.id},
          {"attempt", c.attempt},
          {"problem", c.item.problem},
          {"world", c.item.world},
          {"dtype", c.item.dtype},
          {"params", c.item.params},
          {"timing", c.item.timing},
          {"source", c.item.source},
          {"created", c.created},
          {"lease_s", lease_s}};
}

// Long polls of claims held now: past half the HTTP threads a claim answers at once (the worker waits a little
// before its next), so waiting workers never hold every thread.
std::atomic<int> g_waiting{0};

// One claim counted among the waiting ones while it lives (also when the store throws).
struct WaitingClaim {
  int others = g_waiting.fetch_add(1);
  ~WaitingClaim() { g_waiting.fetch_sub(1); }
};

void claim(ApiContext& ctx, const Request& req, Response& res) {
  auto name = authenticate(ctx, nullptr, req, res, TokenRole::worker);
  if (!name) return;
  auto body = worker_body(req, res, false);
  if (!body || !same_device(ctx, *body, res)) return;
  ClaimOptions o;
  o.worker = *name + "/" + (*body)["worker"].get<std::string>();
  o.lease_s = ctx.options.lease_s;
  if (body->contains("max_world") && (*body)["max_world"].is_number_integer()) o.max_world = (*body)["max_world"];
  const bool may_wait = body->contains("wait_s") && (*body)["wait_s"].is_number();
  double wait_s = may_wait ? std::clamp((*body)["wait_s"].get<double>(), 0.0, kMaxClaimWait_s) : 0.0;
  WaitingClaim waiting;
  if (waiting.others >= ctx.options.http_threads / 2) wait_s = 0;
  const double until = epoch_seconds() + wait_s;
  std::optional<Claim> c;
  while (true) {
    const int64_t seen = ctx.feed.current();
    c = ctx.store.claim_next(o);
    const double left = until - epoch_seconds();
    if (c || left <= 0 || ctx.feed.stopped()) break;
    ctx.feed.wait_after(seen, left);
  }
  if (!c) {
    res.status = 204;
    return;
  }
  ctx.feed.bump();
  send_json(res, 200, claim_json(*c, o.lease_s));
}

// The claim a heartbeat or a result names: the evaluation's id (the path), the attempt, the worker.
Claim named_claim(const std::string& token_name, const Request& req, const json& body) {
  Claim c;
  c.id = req.matches[1];
  c.attempt = body["attempt"];
  c.worker = token_name + "/" + body["worker"].get<std::string>();
  return c;
}

void not_current(Response& res, const Claim& c) {
  send_error(res, 409, "attempt",
             "claim " + std::to_string(c.attempt) + " of " + c.id +
                 " is not current: cancelled, finished, or its lease lapsed and it was queued again");
}

void heartbeat(ApiContext& ctx, const Request& req, Response& res) {
  auto name = authenticate(ctx, nullptr, req, res, TokenRole::worker);
  if (!name) return;
  auto body = worker_body(req, res, true);
  if (!body) return;
  const Claim c = named_claim(*name, req, *body);
  const bool running = body->contains("running") && (*body)["running"].is_boolean() && (*body)["running"].get<bool>();
  if (!ctx.store.renew(c, ctx.options.lease_s, running)) return not_current(res, c);
  if (running) ctx.feed.bump();
  send_json(res, 200, {{"id", c.id}, {"attempt", c.attempt}, {"lease_s", ctx.options.lease_s}});
}

void result(ApiContext& ctx, const Request& req, Response& res) {
  auto name = authenticate(ctx, nullptr, req, res, TokenRole::worker);
  if (!name) return;
  auto body = worker_body(req, res, true);
  if (!body) return;
  const Claim c = named_claim(*name, req, *body);
  const json record = body->value("record", json());
  const std::string error = body->contains("error") && (*body)["error"].is_string() ? (*body)["error"] : "";
  const double wall = body->contains("child_wall_s") && (*body)["child_wall_s"].is_number()
                          ? (*body)["child_wall_s"].get<double>()
                          : 0.0;
  const Outcome o = outcome_of(record, error, wall);  // the server's rule, whatever the worker concluded
  if (!ctx.store.finish(c, o.state, o.status, o.record, o.error, o.child_wall_s)) return not_current(res, c);
  ctx.feed.bump();
  send_json(res, 200, {{"id", c.id}, {"attempt", c.attempt}, {"state", state_name(o.state)}, {"status", o.status}});
}

}  // namespace

void install_work_routes(httplib::Server& server, ApiContext& ctx) {
  server.Post("/v1/work/hello", [&](const Request& q, Response& r) { hello(ctx, q, r); });
  server.Post("/v1/work/claim", [&](const Request& q, Response& r) { claim(ctx, q, r); });
  server.Post(R"(/v1/work/([A-Za-z0-9_]+)/heartbeat)", [&](const Request& q, Response& r) { heartbeat(ctx, q, r); });
  server.Post(R"(/v1/work/([A-Za-z0-9_]+)/result)", [&](const Request& q, Response& r) { result(ctx, q, r); });
}

}  // namespace pkb::serve
