// One HTTP POST over libcurl, no retries (see retry.h). Each call uses its own easy handle, so calls from
// many threads are safe. Deliberately no low-speed abort: reasoning models send nothing for minutes and
// DeepSeek sends keep-alive blank lines; only the total timeout bounds a request.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pkb::models {

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  ///< "Name: value"; may hold secrets, so never logged
  std::string body;
};

struct HttpOptions {
  double connect_timeout_s = 10;  ///< TCP + TLS handshake (seconds)
  double total_timeout_s = 1800;  ///< whole transfer; generous because long reasoning is normal (seconds)
};

struct HttpResponse {
  long status = 0;                             ///< 0 when no HTTP status line arrived
  std::map<std::string, std::string> headers;  ///< names lowercased; last value wins
  std::string body;
  int curl_code = 0;            ///< CURLcode; 0 = transfer completed
  std::string transport_error;  ///< curl's message when curl_code != 0
  bool timed_out = false;       ///< connect or total timeout
  bool transient = false;       ///< transport failure worth retrying (refused, reset, timeout, empty reply)

  bool completed() const { return curl_code == 0; }
  std::string header(const std::string& lower_name) const;
};

HttpResponse http_post(const HttpRequest& req, const HttpOptions& opt);

}  // namespace pkb::models
