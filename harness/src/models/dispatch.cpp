#include "models/dispatch.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

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
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  size_t done = 0;

  std::mutex stop_mutex;
  std::string stopped;  // the first batch-stopping failure: what is not in the cache by then is not sent
  auto stop_reason = [&] {
    std::lock_guard lock(stop_mutex);
    return stopped;
  };
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < requests.size();) {
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
    }
  };

  size_t n = std::min(requests.size(), size_t(std::max(1, opt.max_in_flight)));
  std::vector<std::jthread> threads;
  for (size_t t = 0; t < n; ++t) threads.emplace_back(worker);
  threads.clear();  // joins
  return replies;
}

}  // namespace pkb::models
