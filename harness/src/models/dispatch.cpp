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

bool BatchStop::note(const Reply& r, const std::string& group) {
  if (!reason_.empty()) return true;
  if (stops_batch(r.error)) {
    reason_ = std::string(error_kind_name(r.error)) + ": " + r.error_message;
  } else if (r.error == ErrorKind::bad_request) {
    std::set<std::string>& groups = groups_by_message_[r.error_message];
    groups.insert(group);
    if (groups.size() >= 2) {
      fault_message_ = r.error_message;
      reason_ = "bad_request: the same rejection for requests of " + std::to_string(groups.size()) +
                " different problems, so the configuration (model, parameters), not one request, is at fault: " +
                r.error_message;
    }
  }
  return !reason_.empty();
}

bool BatchStop::configuration_fault(const Reply& r) const {
  return !fault_message_.empty() && r.error == ErrorKind::bad_request && r.error_message == fault_message_;
}

std::vector<Reply> run_requests(Provider& provider, const std::vector<Request>& requests, const DispatchOptions& opt) {
  std::vector<Reply> replies(requests.size());
  std::mutex progress_mutex;
  size_t done = 0;

  std::mutex stop_mutex;
  BatchStop own_stop;
  BatchStop& stop = opt.stop ? *opt.stop : own_stop;  // once it has a reason, what is not cached is not sent
  auto stop_reason = [&] {
    std::lock_guard lock(stop_mutex);
    return stop.reason();
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
    {
      std::lock_guard lock(stop_mutex);
      stop.note(replies[i], i < opt.group_of.size() ? opt.group_of[i] : "#" + std::to_string(i));
    }
    std::lock_guard lock(progress_mutex);
    ++done;
    if (opt.on_reply) opt.on_reply(Progress{i, done, requests.size(), replies[i]});
  };
  parallel_for_each(requests.size(), opt.max_in_flight, send);
  return replies;
}

}  // namespace pkb::models
