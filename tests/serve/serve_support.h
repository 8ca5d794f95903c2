// pkb serve as the tests run it: a real server process on a loopback port (any free one), `pkb worker` processes
// pointed at it, a client over real HTTP (cpp-httplib, the server's own library), and the CPU fixtures as items.
#pragma once

#include <httplib.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../unit/leftovers.h"
#include "../unit/test_util.h"

namespace pkb::test {

using json = nlohmann::json;

// One `pkb serve` process; kill9() is `kill -9` of it (its process group; its `pkb eval` children lead groups of
// their own and die by their parent-death signal, as they would under a real kill -9).
class ServeProcess {
 public:
  explicit ServeProcess(std::filesystem::path data) : data_(std::move(data)) {}
  ~ServeProcess() {
    if (thread_.joinable()) kill9();
  }
  void start(std::vector<std::string> flags = {}) {
    stop_ = false;
    const auto out = data_ / ("stdout-" + std::to_string(starts_++));
    std::vector<std::string> argv = {PKB_BINARY, "serve", "--data",  data_.string(), "--port",    "0",
                                     "--device", "cpu",   "--cache", PKB_TEST_CACHE, "--timeout", "20"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    thread_ = std::thread([this, argv, out] {
      ProcessOptions o;
      o.timeout_s = 600;
      o.stdout_path = out;
      o.stderr_path = data_ / "stderr";
      o.poll = [this] { return !stop_.load(); };
      o.poll_interval_s = 0.02;
      run_process(argv, o);
    });
    const std::regex listening("listening on http://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      std::smatch m;
      std::string text = file_tail(out);
      if (std::regex_search(text, m, listening))
        port_ = std::stoi(m[1]);
      else
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (port_ == 0) throw std::runtime_error("pkb serve did not start: " + file_tail(data_ / "stderr"));
  }
  void kill9() {
    stop_ = true;
    thread_.join();
    port_ = 0;
  }
  int port() const { return port_; }
  const std::filesystem::path& data() const { return data_; }

 private:
  std::filesystem::path data_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  int port_ = 0, starts_ = 0;
};

// One `pkb worker --server http://127.0.0.1:PORT --name NAME --dir DIR` process (its token in
// $PKB_WORKER_TOKEN); kill9() as ServeProcess's. Its stdout and stderr go to DIR.out and DIR.err.
class WorkerProcess {
 public:
  explicit WorkerProcess(std::filesystem::path dir) : dir_(std::move(dir)) {}
  ~WorkerProcess() {
    if (thread_.joinable()) kill9();
  }
  void start(int port, const std::string& token, const std::string& name, std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {PKB_BINARY, "worker", "--server", "http://127.0.0.1:" + std::to_string(port),
                                     "--name",   name,     "--dir",    dir_.string(),
                                     "--device", "cpu",    "--cache",  PKB_TEST_CACHE};
    argv.insert(argv.end(), flags.begin(), flags.end());
    thread_ = std::thread([this, argv, token] {
      ProcessOptions o;
      o.timeout_s = 600;
      o.stdout_path = dir_.string() + ".out";
      o.stderr_path = dir_.string() + ".err";
      o.env = {{"PKB_WORKER_TOKEN", token}};
      o.poll = [this] { return !stop_.load(); };
      o.poll_interval_s = 0.02;
      result_ = run_process(argv, o);
      done_ = true;
    });
  }
  void kill9() {
    stop_ = true;
    thread_.join();
  }
  // The exit code once it exits by itself within `timeout_s` (-1: it did not; it is killed).
  int wait(double timeout_s) {
    for (int i = 0; i < timeout_s * 20 && !done_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const bool exited = done_;
    kill9();
    return exited && result_.exited ? result_.exit_code : -1;
  }
  std::string output() const {
    return file_tail(dir_.string() + ".out", 1 << 16) + file_tail(dir_.string() + ".err", 1 << 16);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, done_{false};
  ProcessResult result_;
};

// A client's token, from `pkb serve token add` (a worker's with --worker).
inline std::string add_client(const std::filesystem::path& data, const std::string& name, bool worker = false) {
  std::vector<std::string> args = {"serve", "token", "add", name, "--data", data.string()};
  if (worker) args.push_back("--worker");
  CliRun r = run_cli(PKB_BINARY, args);
  if (r.exit_code != 0) throw std::runtime_error("token add failed: " + r.err);
  return r.out.substr(0, r.out.find('\n'));
}

struct Reply {
  int status = 0;
  json body;
  std::string text, retry_after;
};

class Client {
 public:
  Client(int port, std::string token) : http_("127.0.0.1", port), token_(std::move(token)) {
    http_.set_read_timeout(120, 0);
  }
  Reply post(const std::string& path, const std::string& body) {
    return reply(http_.Post(path.c_str(), headers(), body, "application/json"));
  }
  Reply get(const std::string& path) { return reply(http_.Get(path.c_str(), headers())); }
  Reply del(const std::string& path) { return reply(http_.Delete(path.c_str(), headers())); }
  // The server-sent events of a stream until it ends: (event, data) pairs.
  std::vector<std::pair<std::string, json>> events(const std::string& path) {
    std::string buffer;
    std::vector<std::pair<std::string, json>> out;
    http_.Get(path.c_str(), headers(), [&](const char* data, size_t n) {
      buffer.append(data, n);
      for (size_t end; (end = buffer.find("\n\n")) != std::string::npos; buffer.erase(0, end + 2)) {
        std::string block = buffer.substr(0, end), event, payload;
        std::stringstream lines(block);
        for (std::string line; std::getline(lines, line);) {
          if (line.rfind("event: ", 0) == 0) event = line.substr(7);
          if (line.rfind("data: ", 0) == 0) payload = line.substr(6);
        }
        if (!event.empty()) out.emplace_back(event, json::parse(payload));
      }
      return true;
    });
    return out;
  }

 private:
  httplib::Headers headers() const {
    return token_.empty() ? httplib::Headers{} : httplib::Headers{{"Authorization", "Bearer " + token_}};
  }
  static Reply reply(const httplib::Result& r) {
    if (!r) throw std::runtime_error("HTTP request failed: " + httplib::to_string(r.error()));
    Reply out{r->status, json::parse(r->body, nullptr, false), r->body, r->get_header_value("Retry-After")};
    return out;
  }
  httplib::Client http_;
  std::string token_;
};

// One item of problem 1 at the CLI tests' small shape, a CPU fixture as its source.
inline json fixture_item(const std::string& fixture, const std::string& key = "") {
  json j = {{"problem", 1},
            {"world", 2},
            {"params", {{"M", 64}, {"N", 48}}},
            {"timing", "quick"},
            {"source", cpu_fixture(fixture)}};
  if (!key.empty()) j["idempotency_key"] = key;
  return j;
}

// A row of an evaluation that has finished: done, failed or cancelled.
inline bool finished(const json& row) {
  const std::string s = row.value("state", "");
  return s == "done" || s == "failed" || s == "cancelled";
}

// Polls GET /v1/evaluations/ID until `done(row)` or the timeout; the last row.
template <class Pred>
json wait_for(Client& c, const std::string& id, Pred done, double timeout_s = 120) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  json row;
  while (std::chrono::steady_clock::now() < until) {
    row = c.get("/v1/evaluations/" + id).body;
    if (done(row)) return row;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return row;
}

// Processes whose command line mentions `needle` (children of a server, found by its data directory).
// Processes whose command line contains `needle` (one that exits mid-read is not counted: leftovers.h).
inline int processes_mentioning(const std::string& needle) { return processes_with(needle); }

}  // namespace pkb::test
