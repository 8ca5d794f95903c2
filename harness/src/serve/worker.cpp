#include "serve/worker.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/error.h"
#include "launch/gpus.h"
#include "launch/mpirun.h"
#include "models/http.h"
#include "spec/catalog.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr double kResultRetry_s = 60;  // how long a record is offered to a server that does not answer

struct Answer {
  long status = 0;  // 0: no answer (the transport failed)
  json body;
  std::string why;  // the server's error message, or the transport's
};

Answer post(const WorkerOptions& o, const std::string& path, const json& body, double timeout_s) {
  std::string url = o.server;
  while (!url.empty() && url.back() == '/') url.pop_back();
  models::HttpRequest req{
      url + path, {"Authorization: Bearer " + o.token, "Content-Type: application/json"}, body.dump()};
  models::HttpOptions ho;
  ho.connect_timeout_s = 10;
  ho.total_timeout_s = timeout_s;
  models::HttpResponse r = models::http_post(req, ho);
  Answer a;
  a.status = r.completed() ? r.status : 0;
  a.body = json::parse(r.body, nullptr, false);
  if (!r.completed())
    a.why = r.transport_error;
  else if (a.body.is_object() && a.body.contains("error"))
    a.why = a.body["error"].value("field", "") + ": " + a.body["error"].value("message", "");
  return a;
}

Claim claim_from(const json& j, const std::string& worker) {
  Claim c;
  c.id = j.at("id"), c.attempt = j.at("attempt"), c.created = j.value("created", 0.0), c.worker = worker;
  c.item.problem = j.at("problem"), c.item.world = j.at("world"), c.item.dtype = j.at("dtype");
  c.item.params = j.at("params"), c.item.timing = j.at("timing"), c.item.source = j.at("source");
  return c;
}

void log_line(const std::string& line) { std::cerr << "pkb worker: " + line + "\n" << std::flush; }

}  // namespace

RemoteWork::RemoteWork(const WorkerOptions& o, DeviceKind device) : o_(o), device_(device) {}

json RemoteWork::hello() {
  Answer a = post(o_, "/v1/work/hello", {{"worker", o_.name}, {"device", enum_name(device_)}}, 30);
  if (a.status != 200 || !a.body.is_object())
    throw Error("server " + o_.server + " refused this worker (" +
                (a.status ? "HTTP " + std::to_string(a.status) : "no answer") + "): " + a.why);
  lease_s_ = a.body.value("lease_s", 60.0);
  return a.body;
}

std::optional<Claim> RemoteWork::claim(int max_world, double wait_s) {
  const double t0 = epoch_seconds();
  json body = {{"worker", o_.name}, {"device", enum_name(device_)}, {"max_world", max_world}, {"wait_s", wait_s}};
  Answer a = post(o_, "/v1/work/claim", body, wait_s + 30);
  if (a.status == 200 && a.body.is_object()) {
    Claim c = claim_from(a.body, o_.name);
    std::lock_guard lock(mu_);
    beats_[c.id] = Beat{epoch_seconds(), false, true};
    return c;
  }
  if (a.status != 204)
    throw Error("claim: " + (a.status ? "HTTP " + std::to_string(a.status) : "no answer") + ": " + a.why);
  // Answered at once (the server holds enough waiting claims already): wait here instead.
  const double left = wait_s - (epoch_seconds() - t0);
  if (left > 0) std::this_thread::sleep_for(std::chrono::duration<double>(left));
  return std::nullopt;
}

// One heartbeat; false when the server says the claim is no longer current (an unreachable server is not that).
bool RemoteWork::heartbeat(const Claim& c, bool running) {
  Answer a = post(o_, "/v1/work/" + c.id + "/heartbeat",
                  {{"worker", o_.name}, {"attempt", c.attempt}, {"running", running}}, 10);
  if (a.status == 409) return false;
  if (a.status != 200) log_line(c.id + ": heartbeat not taken (" + std::to_string(a.status) + "): " + a.why);
  return true;
}

void RemoteWork::started(const Claim& c) {
  bool current = heartbeat(c, true);
  std::lock_guard lock(mu_);
  beats_[c.id] = Beat{epoch_seconds(), true, current};
}

bool RemoteWork::keep(const Claim& c) {
  Beat b;
  {
    std::lock_guard lock(mu_);
    b = beats_[c.id];
  }
  if (!b.current) return false;
  if (epoch_seconds() - b.last < lease_s_ / 3) return true;
  b.current = heartbeat(c, b.running);
  b.last = epoch_seconds();
  if (!b.current) log_line(c.id + ": the claim is no longer current (cancelled, or its lease lapsed): stopped");
  std::lock_guard lock(mu_);
  beats_[c.id] = b;
  return b.current;
}

void RemoteWork::finish(const Claim& c, const Outcome& o) {
  {
    std::lock_guard lock(mu_);
    beats_.erase(c.id);
  }
  json body = {{"worker", o_.name},
               {"attempt", c.attempt},
               {"record", o.record.empty() ? json() : json::parse(o.record)},
               {"error", o.error},
               {"child_wall_s", o.child_wall_s}};
  const double until = epoch_seconds() + std::max(kResultRetry_s, lease_s_);
  for (;;) {
    Answer a = post(o_, "/v1/work/" + c.id + "/result", body, 60);
    if (a.status == 200)
      return log_line(c.id + " (attempt " + std::to_string(c.attempt) + "): " + a.body.value("state", "") + " " +
                      a.body.value("status", ""));
    if (a.status == 409) return log_line(c.id + ": record refused: " + a.why);
    const bool transient = a.status == 0 || a.status == 429 || a.status >= 500;
    if (!transient || epoch_seconds() > until)
      return log_line(c.id + ": record not stored (" + std::to_string(a.status) + "): " + a.why);
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
}

}  // namespace pkb::serve

namespace pkb::serve {
namespace {

std::string default_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return std::string(host) + ":" + std::to_string(getpid());
}

// The name as a file name: anything but letters, digits, '.', '_' and '-' becomes '_'.
std::string file_name_of(std::string s) {
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') ch = '_';
  return s;
}

SlotOptions worker_slots(const WorkerOptions& o, DeviceKind device, const nlohmann::json& settings) {
  SlotOptions s;
  s.eval.device = device;
  s.eval.pkb = executable_dir() / "pkb";
  s.eval.work_dir = fs::absolute(o.dir / "work");
  s.eval.cache_dir = fs::absolute(o.cache_dir.empty() ? o.dir / "cache" : o.cache_dir);
  s.eval.candidate_timeout_s = settings.value("timeout_s", 60.0);
  s.eval.evaluation_deadline_s = settings.value("deadline_s", 3600.0);
  s.eval.sandbox = settings.value("sandbox", true);
  s.slots = o.slots;
  if (device == DeviceKind::cuda) s.gpus = visible_gpus();
  s.claim_wait_s = o.claim_wait_s;
  return s;
}

}  // namespace

int run_worker(WorkerOptions o) {
  const DeviceKind device = o.device == "cuda" ? DeviceKind::cuda : DeviceKind::cpu;
  if (o.name.empty()) o.name = default_name();
  if (o.dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    o.dir = fs::path(tmp && *tmp ? tmp : "/tmp") / ("pkb-worker-" + file_name_of(o.name));
  }
  RemoteWork remote(o, device);
  json settings;
  try {
    settings = remote.hello();
  } catch (const Error& e) {
    std::cerr << "pkb worker: error: " << e.what() << "\n";
    return 2;
  }
  if (settings.value("revision", "") != repo_revision())
    log_line("warning: the server runs pkb " + settings.value("revision", "?") + ", this worker pkb " +
             repo_revision() + ": their records may differ");
  SlotOptions so = worker_slots(o, device, settings);
  if (device == DeviceKind::cuda && so.gpus.empty()) {
    std::cerr << "pkb worker: error: --device cuda, but no GPU is visible\n";
    return 2;
  }
  Slots slots(remote, so);
  slots.start();
  std::cout << "pkb worker " << o.name << ": claiming from " << o.server << " (" << enum_name(device) << ", "
            << slots.count() << " slot(s), lease " << settings.value("lease_s", 0.0) << " s, work "
            << so.eval.work_dir.string() << ")" << std::endl;
  while (o.idle_exit_s <= 0 || slots.idle_s() < o.idle_exit_s) std::this_thread::sleep_for(std::chrono::seconds(1));
  std::cout << "pkb worker " << o.name << ": idle for " << o.idle_exit_s << " s: stopping" << std::endl;
  slots.stop();  // what a slot claimed meanwhile runs to its end and is posted
  std::cout << "pkb worker " << o.name << ": exiting after " << slots.evaluated() << " evaluation(s)" << std::endl;
  return 0;
}

}  // namespace pkb::serve
