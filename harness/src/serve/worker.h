// `pkb worker --server URL`: evaluation slots on another machine (a Slurm node, say) that claim evaluations from a
// pkb serve over HTTP (serve/work_api.cpp) and post their records back (docs/serve.md, "Slurm workers"). Each
// evaluation runs exactly as the server's own slots run it (serve/slots.h, serve/evaluation.h), with the server's
// settings (device, --timeout, --deadline, sandbox: /v1/work/hello). A claim holds a lease that the worker's
// heartbeats renew while the child runs; a worker that dies or loses the server loses its claims once the lease
// lapses (they run again elsewhere), and a record posted for a claim that is no longer current is refused.
// Known limits: a worker's claims are not handed back when it stops (they wait out their lease); a result the
// server cannot take for a minute is dropped (the claim's lease then lapses and it runs again).
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/slots.h"

namespace pkb::serve {

struct WorkerOptions {
  std::string server;               // the server's URL, http://HOST:PORT (https behind a TLS proxy)
  std::string token;                // a worker token (`pkb serve token add NAME --worker`)
  std::string name;                 // this worker's name in the server's records (default HOST:PID)
  std::string device = "cpu";       // cpu or cuda: must be the server's
  int slots = 1;                    // CPU ranks: evaluations at once (GPUs: one slot per visible GPU)
  std::filesystem::path dir;        // work/ (scratch) and cache/ (default $TMPDIR/pkb-worker-NAME)
  std::filesystem::path cache_dir;  // pkb eval --cache (default DIR/cache)
  double idle_exit_s = 0;           // > 0: exit once no evaluation has run for this long
  double claim_wait_s = 2;          // how long one claim waits at the server for work
};

// Claims from a server over HTTP. Heartbeats every third of the lease while an evaluation runs.
class RemoteWork : public WorkSource {
 public:
  RemoteWork(const WorkerOptions& o, DeviceKind device);
  // The server's evaluation settings (/v1/work/hello); throws pkb::Error when it refuses (a token that is not a
  // worker's, another device) or cannot be reached.
  nlohmann::json hello();
  std::optional<Claim> claim(int max_world, double wait_s) override;
  void started(const Claim& c) override;
  bool keep(const Claim& c) override;
  void finish(const Claim& c, const Outcome& o) override;

 private:
  struct Beat {
    double last = 0;       // when the last heartbeat went (seconds since the epoch)
    bool running = false;  // the candidate pass started
    bool current = true;   // false once the server said the claim is no longer current
  };
  bool heartbeat(const Claim& c, bool running);

  const WorkerOptions& o_;
  DeviceKind device_;
  double lease_s_ = 60;
  std::mutex mu_;
  std::map<std::string, Beat> beats_;  // by evaluation id, while it runs here
};

// Runs until killed, or until idle for o.idle_exit_s. Exit codes: 0 (idle exit), 2 (the server refused the worker
// or could not be reached at start).
int run_worker(WorkerOptions o);

}  // namespace pkb::serve
