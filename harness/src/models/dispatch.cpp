#include "models/dispatch.h"

#include <mutex>
#include <optional>
#include <string>

#include "core/parallel.h"

namespace pkb::models {

Reply complete_cached(Provider& provider, const ReplyCache* cache, const Request& req) {
  if (cache) {
    if (auto hit = cache->load(provider.name(), req)) return *hit;
  }
  Reply reply = provider.complete(req);
  if (cache) cache->store(provider.name(), req, reply);
  return reply;
}

std::vector<Reply> run_requests(Provider& provider, const std::vector<Request>& requests, const DispatchOptions& opt) {
  std::vector<Reply> replies(requests.size());
  std::mutex progress_mutex;
  size_t done = 0;

  std::mutex stop_mutex;
  std::string stopped;  // the first batch-stopping failure: what is not in the cache by then is not sent
  auto stop_reason = [&] {
    std::lock_guard lock(stop_mutex);
    return stopped;
  };
  auto send = [&](size_t i) {
    std::optional<Reply> hit = opt.cache ? opt.cache->load(provider.name(), requests[i]) : std::nullopt;
    if (hit) {
      replies[i] = *hit;
    } else if (std::string why = stop_reason(); !why.empty()) {
      replies[i].error = ErrorKind::not_sent;
      replies[i].error_message = "not sent: the batch stopped after " + why;
    } else {
      replies[i] = complete_cached(provider, opt.cache, requests[i]);
    }
    if (stops_batch(replies[i].error)) {
      std::lock_guard lock(stop_mutex);
      if (stopped.empty()) stopped = std::string(error_kind_name(replies[i].error)) + ": " + replies[i].error_message;
    }
    std::lock_guard lock(progress_mutex);
    ++done;
    if (opt.on_reply) opt.on_reply(Progress{i, done, requests.size(), replies[i]});
  };
  parallel_for_each(requests.size(), opt.max_in_flight, send);
  return replies;
}

}  // namespace pkb::models
