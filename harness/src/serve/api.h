// pkb serve's HTTP routes (docs/serve.md, "API") on a cpp-httplib server: authentication, limits, submissions,
// reads, cancels, event streams, problems and prompts, health and metrics. Every answer is JSON (the metrics'
// Prometheus text and the event stream aside); every error is {"error": {"field", "message", "status"}}.
#pragma once

#include <httplib.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "serve/feed.h"
#include "serve/server.h"
#include "serve/slots.h"
#include "serve/store.h"
#include "serve/submission.h"
#include "spec/catalog.h"

namespace pkb::serve {

// Token buckets per client: `rate` requests a second, up to `burst` at once.
class RateLimiter {
 public:
  RateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}
  // None: allowed (a token taken); else the seconds until one is there.
  std::optional<double> take(const std::string& client);

 private:
  struct Bucket {
    double tokens = 0, last = 0;
  };
  double rate_, burst_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

struct ApiContext {
  const ServeOptions& options;
  Store& store;
  const Catalog& catalog;
  Slots& slots;
  ChangeFeed& feed;
  SubmitLimits limits;
  std::string device;  // cpu or cuda
  double started = 0;  // seconds since the epoch
  EvalSettings eval;   // how evaluations run: a worker runs them alike
};

void install_routes(httplib::Server& server, ApiContext& ctx, RateLimiter& limiter);
// The routes of remote workers, /v1/work/... (serve/work_api.cpp).
void install_work_routes(httplib::Server& server, ApiContext& ctx);

void send_json(httplib::Response& res, int status, const nlohmann::json& body);
// {"error": {"field", "message", "status"}} with that HTTP status.
void send_error(httplib::Response& res, int status, const std::string& field, const std::string& message);
// The name a request's bearer token belongs to, if it has `role`; none after answering 401 (or 429 past the
// client's rate, when `limiter` is given).
std::optional<std::string> authenticate(ApiContext& ctx, RateLimiter* limiter, const httplib::Request& req,
                                        httplib::Response& res, TokenRole role = TokenRole::client);

}  // namespace pkb::serve
