#include "serve/api.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "prompt/prompt.h"
#include "serve/metrics.h"
#include "serve/rewards.h"

namespace pkb::serve {
namespace {

using json = nlohmann::json;
using httplib::Request;
using httplib::Response;

// The shaping a read asks for (?shaping=), or none after answering 400.
std::optional<std::string> shaping_of(const Request& req, Response& res) {
  std::string s = req.has_param("shaping") ? req.get_param_value("shaping") : shaping_names().front();
  if (known_shaping(s)) return s;
  send_error(res, 400, "shaping", "unknown shaping '" + s + "' (ladder-v1, binary-v1, speedup-v1)");
  return std::nullopt;
}

json row_json(const EvalRow& r, const std::string& shaping, bool with_record) {
  json j = {{"id", r.id},
            {"batch", r.batch},
            {"state", state_name(r.state)},
            {"problem", r.item.problem},
            {"world", r.item.world},
            {"dtype", r.item.dtype},
            {"params", r.item.params},
            {"timing", r.item.timing},
            {"priority", r.item.priority},
            {"attempts", r.attempts},
            {"created", r.created}};
  if (!r.item.idempotency_key.empty()) j["idempotency_key"] = r.item.idempotency_key;
  if (r.started > 0) j["started"] = r.started, j["queue_s"] = r.started - r.created;
  if (r.finished > 0) j["finished"] = r.finished;
  if (r.started > 0 && r.finished > r.started) j["evaluation_s"] = r.finished - r.started;
  if (r.child_wall_s > 0) j["child_wall_s"] = r.child_wall_s;
  if (!r.status.empty()) j["status"] = r.status;
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.worker.empty()) j["worker"] = r.worker;
  if (!r.record.empty()) {
    json rec = json::parse(r.record, nullptr, false);
    if (r.state == EvalState::done) j["reward"] = compute_reward(rec, shaping).to_json();
    if (with_record) j["record"] = rec;
  }
  return j;
}

std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> ids;
  std::stringstream in(s);
  for (std::string id; std::getline(in, id, ',');)
    if (!id.empty()) ids.push_back(id);
  return ids;
}

// The body as JSON, bytes that are not UTF-8 replaced (*repaired says so), or none after answering 400.
std::optional<json> parse_body(const Request& req, Response& res, bool* repaired) {
  std::string body = valid_utf8(req.body);
  *repaired = body != req.body;
  try {
    json j = json::parse(body);
    if (j.is_object()) return j;
    send_error(res, 400, "body", "must be a JSON object: one item, or {\"items\": [...]}");
  } catch (const json::parse_error& e) {
    send_error(res, 400, "body", std::string("malformed JSON: ") + e.what());
  }
  return std::nullopt;
}

// The request's items: the body itself, or its "items" (pointers into `body`); none after answering.
std::optional<std::vector<json*>> request_items(ApiContext& ctx, json& body, Response& res) {
  if (!body.contains("items")) return std::vector<json*>{&body};
  if (!body["items"].is_array() || body["items"].empty()) {
    send_error(res, 400, "items", "must be a non-empty array of items");
    return std::nullopt;
  }
  if (body["items"].size() > ctx.options.max_batch) {
    send_error(
        res, 413, "items",
        std::to_string(body["items"].size()) + " items, over the limit of " + std::to_string(ctx.options.max_batch));
    return std::nullopt;
  }
  if (body.size() > 1) {
    send_error(res, 400, "items", "a batch holds only \"items\"");
    return std::nullopt;
  }
  std::vector<json*> items;
  for (json& j : body["items"]) items.push_back(&j);
  return items;
}

void answer_submission(Response& res, bool batch, const std::string& batch_id,
                       const std::vector<std::variant<Item, FieldError>>& parsed,
                       const std::vector<Accepted>& accepted) {
  json items = json::array();
  size_t next = 0;
  for (const auto& p : parsed) {
    if (const auto* e = std::get_if<FieldError>(&p)) {
      if (!batch) return send_error(res, e->http_status, e->field, e->message);
      FieldError named = *e;
      named.field = "items[" + std::to_string(items.size()) + "]." + e->field;
      items.push_back({{"error", named.to_json()}});
      continue;
    }
    const Accepted& a = accepted[next++];
    items.push_back({{"id", a.id}, {"state", state_name(a.state)}, {"duplicate", a.duplicate}});
  }
  if (!batch) {
    json one = items[0];
    one["batch"] = batch_id;
    return send_json(res, 202, one);
  }
  send_json(res, next > 0 ? 202 : 422, {{"batch", batch_id}, {"items", items}});
}

void submit(ApiContext& ctx, RateLimiter& limiter, const Request& req, Response& res) {
  auto client = authenticate(ctx, &limiter, req, res);
  if (!client) return;
  bool repaired = false;
  auto body = parse_body(req, res, &repaired);
  if (!body) return;
  auto raw = request_items(ctx, *body, res);
  if (!raw) return;
  std::vector<std::variant<Item, FieldError>> parsed;
  std::vector<Item> valid;
  for (json* j : *raw) {
    parsed.push_back(parse_item(*j, ctx.catalog, ctx.limits, repaired));
    if (auto* it = std::get_if<Item>(&parsed.back())) valid.push_back(std::move(*it));  // only errors are read again
  }
  const int queued = ctx.store.queued_count(*client);
  if (!valid.empty() && queued + static_cast<int>(valid.size()) > ctx.options.max_queued) {
    res.set_header("Retry-After", "10");
    return send_error(res, 429, "items",
                      std::to_string(queued) + " evaluations queued or running, " + std::to_string(valid.size()) +
                          " more would pass the limit of " + std::to_string(ctx.options.max_queued));
  }
  const std::string batch_id = random_id("b_");
  std::vector<Accepted> accepted = valid.empty() ? std::vector<Accepted>{} : ctx.store.insert(*client, batch_id, valid);
  ctx.feed.bump();
  answer_submission(res, body->contains("items"), batch_id, parsed, accepted);
  body.reset(), parsed.clear(), valid.clear();
  if (req.body.size() > (1 << 20)) malloc_trim(0);  // a large batch's copies go back to the system, not the arena
}

// The rows a read selects: ?ids=a,b or ?batch=B (the client's own only); none after answering 400.
std::optional<std::vector<EvalRow>> selected_rows(ApiContext& ctx, const std::string& client, const Request& req,
                                                  Response& res) {
  if (req.has_param("ids")) return ctx.store.rows(client, split_ids(req.get_param_value("ids")));
  if (req.has_param("batch")) return ctx.store.batch_rows(client, req.get_param_value("batch"));
  send_error(res, 400, "ids", "name the evaluations: ?ids=ID,ID,... or ?batch=BATCH");
  return std::nullopt;
}

void list(ApiContext& ctx, RateLimiter& limiter, const Request& req, Response& res) {
  auto client = authenticate(ctx, &limiter, req, res);
  if (!client) return;
  auto shaping = shaping_of(req, res);
  if (!shaping) return;
  auto rows = selected_rows(ctx, *client, req, res);
  if (!rows) return;
  const bool with_record = req.get_param_value("record") != "0";
  json items = json::array();
  std::vector<std::string> found;
  for (const auto& r : *rows) items.push_back(row_json(r, *shaping, with_record)), found.push_back(r.id);
  json missing = json::array();
  if (req.has_param("ids"))
    for (const auto& id : split_ids(req.get_param_value("ids")))
      if (std::find(found.begin(), found.end(), id) == found.end()) missing.push_back(id);
  send_json(res, 200, {{"items", items}, {"not_found", missing}});
}

void get_one(ApiContext& ctx, RateLimiter& limiter, const Request& req, Response& res) {
  auto client = authenticate(ctx, &limiter, req, res);
  if (!client) return;
  auto shaping = shaping_of(req, res);
  if (!shaping) return;
  auto row = ctx.store.get(*client, req.matches[1]);
  if (!row) return send_error(res, 404, "id", "no evaluation " + std::string(req.matches[1]) + " of yours");
  send_json(res, 200, row_json(*row, *shaping, true));
}

void cancel(ApiContext& ctx, RateLimiter& limiter, const Request& req, Response& res) {
  auto client = authenticate(ctx, &limiter, req, res);
  if (!client) return;
  const std::string id = req.matches[1];
  switch (ctx.store.cancel(*client, id)) {
    case CancelOutcome::not_found:
      return send_error(res, 404, "id", "no evaluation " + id + " of yours");
    case CancelOutcome::already_finished:
      return send_error(res, 409, "id", "evaluation " + id + " has finished already");
    case CancelOutcome::cancelled:
      ctx.feed.bump();  // a slot running it kills its child at its next poll
      return send_json(res, 200, {{"id", id}, {"state", "cancelled"}});
  }
}

// What an event stream remembers between its turns: the state it last sent for each evaluation.
struct StreamState {
  std::map<std::string, EvalState> sent;
};

// One turn of an event stream: every evaluation whose state changed since the last turn, then `end` once all are
// finished; else waits for a change (a comment line every 15 s keeps proxies from closing it).
bool stream_turn(ApiContext& ctx, const std::string& client, const Request& req, const std::string& shaping,
                 StreamState& st, httplib::DataSink& sink) {
  const int64_t seen = ctx.feed.current();
  std::vector<EvalRow> rows = req.has_param("ids") ? ctx.store.rows(client, split_ids(req.get_param_value("ids")))
                                                   : ctx.store.batch_rows(client, req.get_param_value("batch"));
  std::string out;
  bool all_finished = true;
  for (const auto& r : rows) {
    all_finished &= terminal(r.state);
    auto it = st.sent.find(r.id);
    if (it != st.sent.end() && it->second == r.state) continue;
    st.sent[r.id] = r.state;
    out += "event: state\ndata: " + row_json(r, shaping, false).dump() + "\n\n";
  }
  if (all_finished) out += "event: end\ndata: " + json{{"evaluations", rows.size()}}.dump() + "\n\n";
  if (!out.empty() && !sink.write(out.data(), out.size())) return false;
  if (all_finished) {
    sink.done();
    return true;
  }
  if (ctx.feed.wait_after(seen, 15.0) == seen && !sink.write(": keep-alive\n\n", 14)) return false;
  return !ctx.feed.stopped();
}

void events(ApiContext& ctx, RateLimiter& limiter, const Request& req, Response& res) {
  auto client = authenticate(ctx, &limiter, req, res);
  if (!client) return;
  auto shaping = shaping_of(req, res);
  if (!shaping) return;
  if (!req.has_param("ids") && !req.has_param("batch"))
    return send_error(res, 400, "batch", "name the evaluations: ?batch=BATCH or ?ids=ID,ID,...");
  auto st = std::make_shared<StreamState>();
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream",
                                   [&ctx, c = *client, req, s = *shaping, st](size_t, httplib::DataSink& sink) {
                                     return stream_turn(ctx, c, req, s, *st, sink);
                                   });
}

}  // namespace

void send_json(Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void send_error(Response& res, int status, const std::string& field, const std::string& message) {
  send_json(res, status, {{"error", {{"field", field}, {"message", message}, {"status", status}}}});
}

std::optional<std::string> authenticate(ApiContext& ctx, RateLimiter* limiter, const Request& req, Response& res,
                                        TokenRole role) {
  const std::string h = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  std::optional<std::string> name;
  if (h.rfind(prefix, 0) == 0) name = ctx.store.client_for_token(sha256_hex(h.substr(prefix.size())), role);
  if (!name) {
    res.set_header("WWW-Authenticate", "Bearer");
    send_error(res, 401, "Authorization",
               h.empty() ? "missing bearer token" : std::string("unknown token (for a ") + role_name(role) + ")");
    return std::nullopt;
  }
  if (auto wait = limiter ? limiter->take(*name) : std::nullopt) {
    res.set_header("Retry-After", std::to_string(static_cast<int>(std::ceil(*wait))));
    send_error(res, 429, "rate", "over " + std::to_string(ctx.options.rate) + " requests a second");
    return std::nullopt;
  }
  return name;
}

std::optional<double> RateLimiter::take(const std::string& client) {
  std::lock_guard lock(mu_);
  const double now = epoch_seconds();
  auto [it, fresh] = buckets_.try_emplace(client, Bucket{burst_, now});
  Bucket& b = it->second;
  b.tokens = std::min(burst_, b.tokens + (now - b.last) * rate_);
  b.last = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  return (1 - b.tokens) / rate_;
}

void install_problem_routes(httplib::Server& server, ApiContext& ctx);

void install_routes(httplib::Server& server, ApiContext& ctx, RateLimiter& limiter) {
  server.Post("/v1/evaluations", [&](const Request& q, Response& r) { submit(ctx, limiter, q, r); });
  server.Get("/v1/evaluations", [&](const Request& q, Response& r) { list(ctx, limiter, q, r); });
  server.Get(R"(/v1/evaluations/([A-Za-z0-9_]+))", [&](const Request& q, Response& r) { get_one(ctx, limiter, q, r); });
  server.Delete(R"(/v1/evaluations/([A-Za-z0-9_]+))",
                [&](const Request& q, Response& r) { cancel(ctx, limiter, q, r); });
  server.Get("/v1/events", [&](const Request& q, Response& r) { events(ctx, limiter, q, r); });
  install_problem_routes(server, ctx);
  install_work_routes(server, ctx);
  server.Get("/metrics", [&](const Request&, Response& r) {
    r.set_content(metrics_text(ctx.store, ctx.slots), "text/plain; version=0.0.4");
  });
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const Request&, Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string field = res.status == 413 ? "body" : res.status == 404 ? "path" : "";
    send_error(res, res.status, field,
               res.status == 404   ? "no such route"
               : res.status == 413 ? "request body over the server's limit"
                                   : "HTTP error " + std::to_string(res.status));
    return httplib::Server::HandlerResponse::Handled;
  }));
  server.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, "", "internal error: " + what);
  });
}

}  // namespace pkb::serve
