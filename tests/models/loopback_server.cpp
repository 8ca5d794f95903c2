#include "loopback_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace pkb::testing {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 402:
      return "Payment Required";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 529:
      return "Overloaded";
    default:
      return "Status";
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool send_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

void parse_head(const std::string& head, RecordedRequest& req) {
  size_t line_end = head.find("\r\n");
  std::string first = head.substr(0, line_end);
  size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
  req.method = first.substr(0, sp1);
  req.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
  for (size_t pos = line_end + 2; pos < head.size();) {
    size_t end = head.find("\r\n", pos);
    if (end == std::string::npos) end = head.size();
    std::string line = head.substr(pos, end - pos);
    if (size_t colon = line.find(':'); colon != std::string::npos)
      req.headers[lower(line.substr(0, colon))] = trim(line.substr(colon + 1));
    pos = end + 2;
  }
}

}  // namespace

ScriptedResponse json_response(int status, std::string body) {
  ScriptedResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

std::string sse_event(const std::string& name, const std::string& data) {
  std::string out = name.empty() ? "" : "event: " + name + "\n";
  for (size_t pos = 0;;) {
    size_t nl = data.find('\n', pos);
    out += "data: " + data.substr(pos, nl - pos) + "\n";
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return out + "\n";
}

ScriptedResponse sse_response(const std::vector<std::string>& events, double pause_s) {
  ScriptedResponse r;
  r.headers = {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}};
  for (const auto& e : events) r.stream.push_back({e, pause_s});
  return r;
}

LoopbackServer::LoopbackServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listen_fd_, 64) != 0)
    throw std::runtime_error("loopback server: bind/listen failed");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

LoopbackServer::~LoopbackServer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  acceptor_.join();
  ::close(listen_fd_);
  for (auto& t : workers_) t.join();
}

void LoopbackServer::push(ScriptedResponse r) {
  std::lock_guard lock(mu_);
  script_.push_back(std::move(r));
}

void LoopbackServer::set_fallback(ScriptedResponse r) {
  std::lock_guard lock(mu_);
  fallback_ = std::move(r);
  has_fallback_ = true;
}

void LoopbackServer::set_responder(std::function<ScriptedResponse(const RecordedRequest&)> fn) {
  std::lock_guard lock(mu_);
  responder_ = std::move(fn);
}

std::vector<RecordedRequest> LoopbackServer::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

RecordedRequest LoopbackServer::last_request() const {
  std::lock_guard lock(mu_);
  return requests_.empty() ? RecordedRequest{} : requests_.back();
}

void LoopbackServer::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    workers_.emplace_back([this, fd] { serve(fd); });
  }
}

ScriptedResponse LoopbackServer::next_response(const RecordedRequest& req) {
  std::function<ScriptedResponse(const RecordedRequest&)> responder;
  {
    std::lock_guard lock(mu_);
    if (!script_.empty()) {
      ScriptedResponse r = std::move(script_.front());
      script_.pop_front();
      return r;
    }
    if (!responder_ && has_fallback_) return fallback_;
    responder = responder_;
  }
  if (responder) return responder(req);
  return json_response(500, R"({"error":{"message":"loopback server: script exhausted"}})");
}

bool LoopbackServer::wait_or_stop(double seconds) {
  std::unique_lock lock(mu_);
  return !stop_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stop_.load(); });
}

// Reads one request (headers, then Content-Length bytes of body) with a poll loop that notices shutdown.
static bool read_request(int fd, const std::atomic<bool>& stop, RecordedRequest& req) {
  std::string data;
  size_t head_end = std::string::npos, need = 0;
  char buf[16384];
  while (!stop) {
    if (head_end != std::string::npos && data.size() >= head_end + 4 + need) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    data.append(buf, size_t(n));
    if (head_end == std::string::npos && (head_end = data.find("\r\n\r\n")) != std::string::npos) {
      parse_head(data.substr(0, head_end), req);
      if (auto it = req.headers.find("content-length"); it != req.headers.end()) need = std::stoul(it->second);
      if (req.headers.count("expect")) send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
  }
  if (stop) return false;
  req.body = data.substr(head_end + 4, need);
  return true;
}

void LoopbackServer::serve(int fd) {
  RecordedRequest req;
  if (!read_request(fd, stop_, req)) {
    ::close(fd);
    return;
  }
  {
    std::lock_guard lock(mu_);
    requests_.push_back(req);
  }
  ++requests_seen_;
  int now = ++in_flight_;
  for (int prev = max_in_flight_; now > prev && !max_in_flight_.compare_exchange_weak(prev, now);) {
  }
  ScriptedResponse r = next_response(req);
  bool alive = r.drop ? false : wait_or_stop(r.delay_s);
  if (alive && !r.stream.empty()) {
    serve_stream(fd, r);
    return;
  }
  if (alive) {
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
    for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
    head += "Content-Length: " + std::to_string(r.keepalive_lines + r.body.size()) + "\r\nConnection: close\r\n\r\n";
    alive = send_all(fd, head);
    for (int i = 0; alive && i < r.keepalive_lines; ++i)
      alive = send_all(fd, "\n") && wait_or_stop(r.keepalive_interval_s);
  }
  // Counted out before the last bytes go: a client holding the whole reply may send its next request at once, and
  // that one must not overlap this one in max_concurrent().
  --in_flight_;
  if (alive) send_all(fd, r.body);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

static std::string chunk(const std::string& bytes) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  return size + bytes + "\r\n";
}

void LoopbackServer::serve_stream(int fd, const ScriptedResponse& r) {
  std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason_phrase(r.status) + "\r\n";
  for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
  head += "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  bool alive = send_all(fd, head);
  bool counted_out = false;  // as in serve(): out of in_flight_ before the last bytes go
  auto count_out = [&] {
    if (!counted_out) --in_flight_, counted_out = true;
  };
  for (size_t i = 0; alive && i < r.stream.size(); ++i) {
    alive = wait_or_stop(r.stream[i].pause_s);
    if (i + 1 == r.stream.size() && r.hang_s == 0) count_out();
    if (alive) alive = send_all(fd, chunk(r.stream[i].bytes));
  }
  if (alive && r.hang_s > 0) alive = wait_or_stop(r.hang_s);
  count_out();
  if (alive && !r.cut) send_all(fd, "0\r\n\r\n");
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

int unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // never listened on: connecting is refused
  return ntohs(addr.sin_port);
}

}  // namespace pkb::testing
