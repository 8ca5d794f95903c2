// A scripted HTTP/1.1 server on 127.0.0.1 for testing the model client against real sockets and real
// libcurl. Each connection gets one thread and one response (then the connection is closed); responses are
// taken from a FIFO script, then from a fallback. Every request is recorded for assertions. A response is
// either one body with Content-Length or a stream: chunked pieces with pauses between them, optionally cut
// (no final chunk) or stalled (silence) at the end, as event-stream servers behave.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace pkb::testing {

struct StreamPiece {
  std::string bytes;
  double pause_s = 0;  ///< silence before this piece (seconds)
};

struct ScriptedResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  ///< besides Content-Length/Connection
  std::string body;
  double delay_s = 0;       ///< wait before sending anything (seconds)
  int keepalive_lines = 0;  ///< blank lines sent after the headers, before the body (DeepSeek)
  double keepalive_interval_s = 0.05;
  bool drop = false;  ///< close the connection without answering
  /// Non-empty: the body is these pieces, Transfer-Encoding: chunked, one chunk each; `body` is not sent.
  std::vector<StreamPiece> stream;
  bool cut = false;   ///< after the pieces, close without the final chunk (a connection lost mid-stream)
  double hang_s = 0;  ///< after the pieces, silence this long before the final chunk (a stalled stream)
};

ScriptedResponse json_response(int status, std::string body);
/// One server-sent event: "event: NAME" (when name is not empty), then one "data:" line per line of data.
std::string sse_event(const std::string& name, const std::string& data);
/// A 200 text/event-stream response, one event per piece, each after `pause_s`.
ScriptedResponse sse_response(const std::vector<std::string>& events, double pause_s = 0);

struct RecordedRequest {
  std::string method;
  std::string target;                          ///< path and query as sent
  std::map<std::string, std::string> headers;  ///< names lowercased
  std::string body;
};

class LoopbackServer {
 public:
  LoopbackServer();  // binds 127.0.0.1:0 and starts accepting
  ~LoopbackServer();
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void push(ScriptedResponse r);
  void set_fallback(ScriptedResponse r);
  /// Computes the response from the request; used when the script is empty, before the fallback.
  void set_responder(std::function<ScriptedResponse(const RecordedRequest&)> fn);

  int request_count() const { return requests_seen_.load(); }
  int max_concurrent() const { return max_in_flight_.load(); }
  std::vector<RecordedRequest> requests() const;
  RecordedRequest last_request() const;

 private:
  void accept_loop();
  void serve(int fd);
  void serve_stream(int fd, const ScriptedResponse& r);
  ScriptedResponse next_response(const RecordedRequest& req);
  bool wait_or_stop(double seconds);  // false if the server is stopping

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  std::deque<ScriptedResponse> script_;
  ScriptedResponse fallback_;
  bool has_fallback_ = false;
  std::function<ScriptedResponse(const RecordedRequest&)> responder_;
  std::vector<RecordedRequest> requests_;
  std::vector<std::thread> workers_;
  std::atomic<int> requests_seen_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
int unused_port();

}  // namespace pkb::testing
