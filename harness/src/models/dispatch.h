// Running many requests against one provider with at most N in flight. Results come back in request order.
// With a cache, hits are answered without HTTP and every new cacheable reply is stored the moment it arrives,
// so an interrupted batch keeps everything it already paid for.
#pragma once

#include <cstddef>
#include <functional>
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

struct DispatchOptions {
  int max_in_flight = 4;              ///< concurrent HTTP requests (threads), at least 1
  const ReplyCache* cache = nullptr;  ///< optional
  /// Called once per request, from worker threads but never concurrently.
  std::function<void(const Progress&)> on_reply;
};

/// One request through the cache: a hit sends nothing; a miss calls the provider and stores the reply.
Reply complete_cached(Provider& provider, const ReplyCache* cache, const Request& req);

/// After a reply whose error stops_batch() (401/403, quota, 400), requests not yet sent come back as not_sent
/// with that error in their message; those already in flight finish.
std::vector<Reply> run_requests(Provider& provider, const std::vector<Request>& requests,
                                const DispatchOptions& opt = {});

}  // namespace pkb::models
