// One HTTP POST over libcurl, no retries (see retry.h). Each call uses its own easy handle, so calls from
// many threads are safe.
// Buffered (no sink): only the total timeout bounds a request, deliberately no low-speed abort, because a
// non-streamed reply sends nothing while a reasoning model thinks and DeepSeek sends keep-alive blank lines.
// Streamed (a sink): a 2xx body goes to the sink as it arrives and the attempt is bounded by an idle timeout
// (no byte for idle_timeout_s) plus a generous total cap, so a 30-minute answer that keeps flowing is never cut.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pkb::models {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"; may hold secrets, so never logged
  std::string body;
};

struct HttpOptions {
  double connect_timeout_s = 10;  ///< TCP + TLS handshake (seconds)
  double total_timeout_s = 1800;  ///< whole buffered transfer; generous because long reasoning is normal (seconds)
  /// Streamed: longest silence (no byte at all) before the attempt fails (seconds). As long as the buffered
  /// total by default, so streaming never cuts what buffering kept: OpenAI's Chat Completions stream sends
  /// nothing while a reasoning model thinks, which can take many minutes.
  double idle_timeout_s = 1800;
  double stream_timeout_s = 7200;  ///< streamed: cap on the whole attempt, a safety net (seconds)
  /// Headers and body together, buffered or streamed: an answer is at most a few MiB even as an event stream,
  /// so a server sending more is faulty or hostile and must not exhaust the driver's memory (bytes).
  size_t max_response_bytes = size_t{64} << 20;
};

struct HttpResponse {
  long status = 0;                             ///< 0 when no HTTP status line arrived
  std::map<std::string, std::string> headers;  ///< names lowercased; last value wins
  std::string body;                            ///< the whole body, except a 2xx body given to a sink
  int curl_code = 0;                           ///< CURLcode; 0 = transfer completed
  std::string transport_error;                 ///< curl's message when curl_code != 0
  bool timed_out = false;                      ///< connect, total or idle timeout
  bool idle_timed_out = false;                 ///< streamed: no byte arrived for idle_timeout_s
  bool sink_stopped = false;                   ///< the sink asked to stop (it saw an error event or a malformed one)
  bool transient = false;     ///< transport failure worth retrying (refused, reset, timeout, empty reply)
  size_t streamed_bytes = 0;  ///< bytes of a 2xx body handed to the sink
  bool too_large = false;     ///< aborted past HttpOptions::max_response_bytes

  bool completed() const { return curl_code == 0; }
  std::string header(const std::string& lower_name) const;
};

/// Receives a 2xx body as it arrives: (Content-Type of the response, the next bytes). Returning false aborts
/// the transfer (HttpResponse::sink_stopped). Non-2xx bodies never reach it: they are buffered into
/// HttpResponse::body, so an HTTP error before the stream starts is handled like a buffered one.
using BodySink = std::function<bool(std::string_view content_type, std::string_view bytes)>;

/// Buffered POST (sink empty) or streamed POST (sink set; idle and stream timeouts apply).
HttpResponse http_post(const HttpRequest& req, const HttpOptions& opt, const BodySink& sink = {});

}  // namespace pkb::models
