// `pkb serve`: pkb's verdicts as an HTTP/JSON service (docs/serve.md). The HTTP layer is cpp-httplib (Debian's
// libcpp-httplib-dev), the queue and results one SQLite database (serve/store.h), the evaluations `pkb eval`
// children run by the slots (serve/slots.h) or by `pkb worker`s that claim them over HTTP (serve/worker.h), the
// rewards serve/rewards.h. Clients and workers authenticate with bearer tokens that `pkb serve token add` prints
// once; the database keeps only their sha256.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/device_kind.h"

namespace pkb::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8737;                  // 0: any free port (the listening line says which)
  std::filesystem::path data_dir;   // serve.db and work/ (default: results/serve)
  std::filesystem::path cache_dir;  // pkb eval --cache (default: DATA/cache)
  std::string device = "auto";      // cpu, cuda, auto (cuda where GPUs are visible)
  int slots = 1;                    // CPU ranks: concurrent evaluations; 0 (CPU or GPUs): none, workers only
  double lease_s = 60;              // a worker's claim lapses this long after its last heartbeat (s)
  double candidate_timeout_s = 60;
  double evaluation_deadline_s = 3600;
  bool sandbox = true;
  // Per client: evaluations queued or running, requests per second (a token bucket of `burst`).
  int max_queued = 20000;
  double rate = 50, burst = 100;
  size_t max_body_bytes = 64 << 20, max_source_bytes = 256 << 10, max_batch = 5000;
  int http_threads = 32;  // each open event stream holds one
};

// Serves until killed. Prints "pkb serve: listening on http://HOST:PORT" on stdout once it accepts requests.
// Returns 2 when it cannot start (the port is taken, the database cannot be opened).
int run_server(const ServeOptions& o);

// A new token for client (or worker) `name` in DATA/serve.db, returned (to print once); throws pkb::Error if the
// name exists.
std::string add_token(const std::filesystem::path& data_dir, const std::string& name, bool worker = false);
bool revoke_token(const std::filesystem::path& data_dir, const std::string& name);
// The names, a worker's followed by " (worker)".
std::vector<std::string> token_names(const std::filesystem::path& data_dir);

}  // namespace pkb::serve
