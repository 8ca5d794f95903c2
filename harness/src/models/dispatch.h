// Running many requests against one provider with at most N in flight. Results come back in request order.
// With a cache, hits are answered without HTTP and every new cacheable reply is stored the moment it arrives,
// so an interrupted batch keeps everything it already paid for.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "models/cache.h"
#include "models/provider.h"
#include "models/types.h"

namespace pkb::models {

struct Progress {
  size_t index;  ///< position of this request in the input
  size_t done;   ///< replies finished so far, this one included
  size_t total;
  const Reply& reply;
};

/// When a batch's failures show that every request would fail, so that sending the rest only burns time and
/// quota: a 401/403 or a quota error (stops_batch) at once; a 400 (bad_request) only when the same one (the same
/// message) came back for requests of two different groups (problems). A 400 for one group's requests alone is
/// about those requests (a prompt too long for the context): the batch goes on. Not thread-safe.
class BatchStop {
 public:
  /// Notes the reply to a request of `group`; true when the batch must stop (now or earlier).
  bool note(const Reply& r, const std::string& group);
  /// Why the batch stopped ("auth: HTTP 401 ...", "bad_request: ..."), or "" while it goes on.
  const std::string& reason() const { return reason_; }
  /// A 400 that turned out to be the configuration's fault: the batch stopped on its message.
  bool configuration_fault(const Reply& r) const;

 private:
  std::string reason_, fault_message_;
  std::map<std::string, std::set<std::string>> groups_by_message_;  // 400 message -> groups that got it
};

struct DispatchOptions {
  int max_in_flight = 4;              ///< concurrent HTTP requests (threads), at least 1
  const ReplyCache* cache = nullptr;  ///< optional
  /// Called once per request, from worker threads but never concurrently.
  std::function<void(const Progress&)> on_reply;
  /// What each request is about (its problem), by request index, for BatchStop; empty: each request its own.
  std::vector<std::string> group_of;
  /// Where the batch's stop decisions are kept, for the caller to read after; nullptr: a private one.
  BatchStop* stop = nullptr;
};

/// One request through the cache: a hit sends nothing; a miss calls the provider and stores the reply.
Reply complete_cached(Provider& provider, const ReplyCache* cache, const Request& req);

/// After a reply that stops the batch (BatchStop: 401/403, quota, the same 400 for two groups), requests not yet
/// sent come back as not_sent with that error in their message; those already in flight finish.
std::vector<Reply> run_requests(Provider& provider, const std::vector<Request>& requests,
                                const DispatchOptions& opt = {});

}  // namespace pkb::models
