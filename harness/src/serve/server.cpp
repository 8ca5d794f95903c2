#include "serve/server.h"

#include <httplib.h>

#include <iostream>
#include <thread>

#include "core/error.h"
#include "core/sha256.h"
#include "launch/gpus.h"
#include "launch/mpirun.h"
#include "serve/api.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;

fs::path data_dir_or_default(const fs::path& d) { return d.empty() ? fs::path("results/serve") : d; }

std::unique_ptr<Store> open_store(const fs::path& data_dir) {
  fs::create_directories(data_dir);
  return std::make_unique<Store>(data_dir / "serve.db");
}

SlotOptions slot_options(const ServeOptions& o, const fs::path& data, DeviceKind device) {
  SlotOptions s;
  s.eval.device = device;
  s.slots = o.slots;
  if (device == DeviceKind::cuda) s.gpus = visible_gpus();
  s.eval.pkb = executable_dir() / "pkb";
  s.eval.work_dir = data / "work";
  s.eval.cache_dir = fs::absolute(o.cache_dir.empty() ? data / "cache" : o.cache_dir);
  s.eval.candidate_timeout_s = o.candidate_timeout_s;
  s.eval.evaluation_deadline_s = o.evaluation_deadline_s;
  s.eval.sandbox = o.sandbox;
  return s;
}

// Every second (or a quarter of the lease), workers' claims whose lease lapsed go back to the queue.
class LeaseKeeper {
 public:
  LeaseKeeper(Store& store, ChangeFeed& feed, double lease_s)
      : thread_([this, &store, &feed, interval = std::min(1.0, lease_s / 4)] {
          while (!stop_) {
            std::this_thread::sleep_for(std::chrono::duration<double>(interval));
            try {
              if (int n = store.requeue_expired()) {
                std::cerr << "pkb serve: " << n << " worker claim(s) lapsed: queued again\n";
                feed.bump();
              }
            } catch (const Error& e) {  // the database was busy past its timeout: next time
              std::cerr << "pkb serve: " << e.what() << "\n";
            }
          }
        }) {}
  ~LeaseKeeper() {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void configure(httplib::Server& server, const ServeOptions& o) {
  server.set_payload_max_length(o.max_body_bytes);
  const int threads = o.http_threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_read_timeout(30, 0);
}

}  // namespace

int run_server(const ServeOptions& o) {
  const fs::path data = fs::absolute(data_dir_or_default(o.data_dir));
  auto store = open_store(data);
  if (int n = store->requeue_in_flight())
    std::cerr << "pkb serve: " << n << " evaluation(s) in flight at the last stop run again\n";
  Catalog catalog = load_catalog(repo_root() / "problems");
  DeviceKind device = o.device == "cuda" ? DeviceKind::cuda : DeviceKind::cpu;
  if (o.device == "auto") device = visible_gpus().empty() ? DeviceKind::cpu : DeviceKind::cuda;
  ChangeFeed feed;
  LocalWork local(*store, feed);
  const SlotOptions so = slot_options(o, data, device);
  Slots slots(local, so);
  LeaseKeeper leases(*store, feed, o.lease_s);
  // Without slots of its own the server cannot know its workers' GPUs: any W the problem allows is accepted.
  const int gpus = o.slots == 0 ? (1 << 30) : static_cast<int>(visible_gpus().size());
  SubmitLimits limits{o.max_source_bytes, device, gpus};
  ApiContext ctx{o, *store, catalog, slots, feed, limits, enum_name(device), epoch_seconds(), so.eval};
  RateLimiter limiter(o.rate, o.burst);
  httplib::Server server;
  configure(server, o);
  install_routes(server, ctx, limiter);
  const int port = o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0) {
    std::cerr << "pkb serve: error: cannot listen on " << o.host << ":" << o.port << "\n";
    return 2;
  }
  slots.start();
  std::cout << "pkb serve: listening on http://" << o.host << ":" << port << " (" << enum_name(device) << ", "
            << slots.count() << " slot(s), data " << data.string() << ")" << std::endl;
  server.listen_after_bind();
  feed.stop();
  return 0;
}

std::string add_token(const fs::path& data_dir, const std::string& name, bool worker) {
  if (name.empty() || name.size() > 100) throw Error("a client's name must be 1 to 100 characters");
  auto store = open_store(data_dir_or_default(data_dir));
  const std::string token = random_id(worker ? "pkbw_" : "pkb_", 32);
  store->add_client(name, sha256_hex(token), worker ? TokenRole::worker : TokenRole::client);
  return token;
}

bool revoke_token(const fs::path& data_dir, const std::string& name) {
  return open_store(data_dir_or_default(data_dir))->remove_client(name);
}

std::vector<std::string> token_names(const fs::path& data_dir) {
  std::vector<std::string> names;
  for (const auto& [name, role] : open_store(data_dir_or_default(data_dir))->client_names())
    names.push_back(role == TokenRole::worker ? name + " (worker)" : name);
  return names;
}

}  // namespace pkb::serve
