#include "models/http.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>

namespace pkb::models {
namespace {

void global_init_once() {
  static std::once_flag flag;
  std::call_once(flag, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

using Clock = std::chrono::steady_clock;

// What the callbacks of one transfer share. last_byte is touched by header and body bytes alike: any byte
// proves the connection alive (an SSE comment or a DeepSeek keep-alive line included).
struct Transfer {
  CURL* handle = nullptr;
  HttpResponse* resp = nullptr;
  const BodySink* sink = nullptr;  // null: buffer everything
  Clock::time_point last_byte = Clock::now();
  size_t max_bytes = 0, received = 0;  // headers and body

  bool over_limit(size_t len) {  // counts len; past the cap the transfer is aborted
    received += len;
    if (received <= max_bytes) return false;
    resp->too_large = true;
    return true;
  }
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  t->last_byte = Clock::now();
  if (t->over_limit(len)) return 0;  // CURLE_WRITE_ERROR
  long status = 0;
  if (t->sink) curl_easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
  if (!t->sink || status < 200 || status >= 300) {
    t->resp->body.append(data, len);
    return len;
  }
  char* type = nullptr;
  curl_easy_getinfo(t->handle, CURLINFO_CONTENT_TYPE, &type);
  t->resp->streamed_bytes += len;
  if ((*t->sink)(type ? type : "", std::string_view(data, len))) return len;
  t->resp->sink_stopped = true;
  return 0;  // anything but len aborts the transfer with CURLE_WRITE_ERROR
}

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->last_byte = Clock::now();
  if (t->over_limit(size * n)) return 0;
  auto* headers = &t->resp->headers;
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {
    headers->clear();  // a new response (after 100 Continue or a redirect) starts a fresh header set
  } else if (size_t colon = line.find(':'); colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    (*headers)[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

bool is_transient(CURLcode c) {
  switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

using CurlPtr = std::unique_ptr<CURL, decltype(&curl_easy_cleanup)>;
using ListPtr = std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)>;
using MultiPtr = std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)>;

// The multi interface, so the loop wakes often enough to enforce an idle timeout of any length (libcurl's own
// LOW_SPEED_TIME counts whole seconds, and easy_perform calls progress callbacks only about once a second).
CURLcode perform_streamed(CURL* h, const Transfer& t, double idle_s, bool& idle_expired, std::string& err) {
  MultiPtr multi(curl_multi_init(), curl_multi_cleanup);
  curl_multi_add_handle(multi.get(), h);
  const auto idle = std::chrono::duration<double>(idle_s);
  const int poll_ms = std::clamp(static_cast<int>(idle_s * 1000 / 8), 5, 1000);
  int running = 0;
  CURLMcode mc = curl_multi_perform(multi.get(), &running);
  while (mc == CURLM_OK && running) {
    mc = curl_multi_poll(multi.get(), nullptr, 0, poll_ms, nullptr);
    if (mc == CURLM_OK) mc = curl_multi_perform(multi.get(), &running);
    if (running && Clock::now() - t.last_byte > idle) {
      idle_expired = true;
      break;
    }
  }
  CURLcode rc = CURLE_OK;
  if (idle_expired) {
    rc = CURLE_OPERATION_TIMEDOUT;
    char buf[128];
    std::snprintf(buf, sizeof buf, "no data for %.3g s (idle timeout)", idle_s);
    err = buf;
  } else if (mc != CURLM_OK) {
    rc = CURLE_RECV_ERROR;
    err = curl_multi_strerror(mc);
  } else {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left))
      if (msg->msg == CURLMSG_DONE) rc = msg->data.result;
  }
  curl_multi_remove_handle(multi.get(), h);
  return rc;
}

}  // namespace

std::string HttpResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_post(const HttpRequest& req, const HttpOptions& opt, const BodySink& sink) {
  global_init_once();
  HttpResponse resp;
  const bool streamed = static_cast<bool>(sink);
  CurlPtr curl(curl_easy_init(), curl_easy_cleanup);
  ListPtr list(nullptr, curl_slist_free_all);
  for (const auto& h : req.headers) list.reset(curl_slist_append(list.release(), h.c_str()));
  // An empty "Expect:" stops curl from waiting for "100 Continue" before sending large prompts.
  list.reset(curl_slist_append(list.release(), "Expect:"));
  char errbuf[CURL_ERROR_SIZE] = {0};

  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, list.get());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt.connect_timeout_s * 1000));
  double total_s = streamed ? opt.stream_timeout_s : opt.total_timeout_s;
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(total_s * 1000));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);       // timeouts without SIGALRM: required with threads
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);  // survive idle middleboxes during long generations
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  Transfer t{h, &resp, streamed ? &sink : nullptr, Clock::now(), opt.max_response_bytes, 0};
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

  std::string idle_error;
  CURLcode rc =
      streamed ? perform_streamed(h, t, opt.idle_timeout_s, resp.idle_timed_out, idle_error) : curl_easy_perform(h);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp.status);
  resp.curl_code = rc;
  if (rc != CURLE_OK) {
    resp.transport_error = !idle_error.empty() ? idle_error : *errbuf ? errbuf : curl_easy_strerror(rc);
    resp.timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    resp.transient = is_transient(rc);
  }
  if (resp.too_large) {
    resp.transport_error = "the response passed " + std::to_string(opt.max_response_bytes) +
                           " bytes: aborted (no model answer is that large)";
    resp.transient = false;
    resp.body.clear();  // the first 64 MiB of a flood are of no use, and must not travel into messages
  }
  return resp;
}

}  // namespace pkb::models
