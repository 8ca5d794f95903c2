#include "serve/slots.h"

#include <algorithm>

#include "core/error.h"
#include "core/files.h"
#include "core/utf8.h"
#include "launch/process.h"
#include "serve/submission.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kRecentLatencies = 1000;
constexpr size_t kErrorTailBytes = 2000;

std::vector<std::string> eval_argv(const Claim& c, const fs::path& source, const fs::path& dir, const SlotOptions& o) {
  std::vector<std::string> argv = {o.pkb.string(),
                                   "eval",
                                   source.string(),
                                   "--problem",
                                   c.item.problem,
                                   "-w",
                                   std::to_string(c.item.world),
                                   "--device",
                                   enum_name(o.device),
                                   "--dtype",
                                   c.item.dtype};
  for (const auto& [k, v] : c.item.params.items()) argv.insert(argv.end(), {"--param", k + "=" + v.dump()});
  for (const auto& a : timing_preset_args(c.item.timing)) argv.push_back(a);
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", o.candidate_timeout_s);
  argv.insert(argv.end(),
              {"--timeout", timeout, "--out", (dir / "out").string(), "--cache", o.cache_dir.string(), "--json"});
  argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  return argv;
}

std::string joined(const std::vector<std::string>& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + id;
  return s;
}

}  // namespace

Slots::Slots(Store& store, ChangeFeed& feed, SlotOptions options)
    : store_(store), feed_(feed), o_(std::move(options)), free_gpus_(o_.gpus) {}

Slots::~Slots() {
  stop_ = true;
  feed_.stop();
  gpus_freed_.notify_all();
  for (auto& t : threads_) t.join();
}

void Slots::start() {
  fs::create_directories(o_.work_dir);
  for (const auto& leftover : fs::directory_iterator(o_.work_dir)) fs::remove_all(leftover.path());  // a dead server's
  started_ = epoch_seconds();
  const size_t n = o_.device == DeviceKind::cuda ? std::max<size_t>(1, o_.gpus.size()) : std::max(1, o_.slots);
  running_since_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { slot_loop(i); });
}

void Slots::slot_loop(size_t slot) {
  while (!stop_) {
    const int64_t seen = feed_.current();
    std::optional<Claim> c;
    try {
      std::lock_guard lock(mu_);
      c = store_.claim_next(&cursor_);
    } catch (const Error& e) {  // the database was busy past its timeout: try again
      std::fprintf(stderr, "pkb serve: %s\n", e.what());
    }
    if (!c) {
      feed_.wait_after(seen, 1.0);
      continue;
    }
    feed_.bump();
    std::vector<std::string> gpus =
        o_.device == DeviceKind::cuda ? lease_gpus(c->item.world) : std::vector<std::string>{};
    const double t0 = epoch_seconds();
    {
      std::lock_guard lock(mu_);
      running_since_[slot] = t0;
    }
    evaluate(*c, gpus);
    const double t1 = epoch_seconds();
    {
      std::lock_guard lock(mu_);
      running_since_[slot] = 0;
      busy_s_ += t1 - t0;
      recent_.push_back({t0 - c->created, t1 - t0});
      if (recent_.size() > kRecentLatencies) recent_.pop_front();
    }
    if (!gpus.empty()) release_gpus(gpus);
    feed_.bump();
  }
}

void Slots::evaluate(const Claim& c, const std::vector<std::string>& gpus) {
  const fs::path dir = o_.work_dir / c.id;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path source = dir / (o_.device == DeviceKind::cuda ? "candidate.cu" : "candidate.cpp");
  write_file_atomically(source, c.item.source);
  ProcessOptions po;
  po.timeout_s = o_.evaluation_deadline_s;
  po.stdout_path = dir / "stdout.json";
  po.stderr_path = dir / "stderr.txt";
  if (!gpus.empty()) po.env["CUDA_VISIBLE_DEVICES"] = joined(gpus);
  bool running = false;
  po.poll = [&] {
    if (!running && fs::exists(dir / "out" / "runs")) {  // the candidate pass has started
      running = true;
      store_.set_running(c.id, c.attempt);
      feed_.bump();
    }
    auto state = store_.state_of(c.id);
    return !(state && *state == EvalState::cancelled);
  };
  try {
    ProcessResult r = run_process(eval_argv(c, source, dir, o_), po);
    if (!r.cancelled) conclude(c, dir, r.wall_s, r.summary());
  } catch (const std::exception& e) {  // pkb eval could not be started
    store_.finish(c, EvalState::failed, "", "", std::string("could not run pkb eval: ") + e.what(), 0);
  }
  fs::remove_all(dir);
}

// The child's verdict into the store: its record (done; failed for a harness_error), or why there is none.
void Slots::conclude(const Claim& c, const fs::path& dir, double child_wall_s, const std::string& summary) {
  json record = json::parse(file_tail(dir / "stdout.json", 1 << 26), nullptr, false);
  if (!record.is_object() || !record.contains("status") || !record["status"].is_string()) {
    std::string tail = utf8_prefix(file_tail(dir / "stderr.txt", kErrorTailBytes), kErrorTailBytes);
    store_.finish(c, EvalState::failed, "", "", "pkb eval gave no record (" + summary + "): " + tail, child_wall_s);
    return;
  }
  const std::string status = record["status"];
  const bool harness = status == "harness_error";
  store_.finish(c, harness ? EvalState::failed : EvalState::done, status, record.dump(),
                harness ? record.value("message", "harness error") : "", child_wall_s);
}

std::vector<std::string> Slots::lease_gpus(int world) {
  std::unique_lock lock(mu_);
  gpus_freed_.wait(lock, [&] { return stop_ || static_cast<int>(free_gpus_.size()) >= world; });
  std::vector<std::string> mine(free_gpus_.begin(), free_gpus_.begin() + std::min<size_t>(world, free_gpus_.size()));
  free_gpus_.erase(free_gpus_.begin(), free_gpus_.begin() + static_cast<long>(mine.size()));
  return mine;
}

void Slots::release_gpus(const std::vector<std::string>& ids) {
  {
    std::lock_guard lock(mu_);
    free_gpus_.insert(free_gpus_.end(), ids.begin(), ids.end());
  }
  gpus_freed_.notify_all();
}

double Slots::busy_fraction() const {
  std::lock_guard lock(mu_);
  const double now = epoch_seconds();
  double busy = busy_s_;
  for (double since : running_since_)
    if (since > 0) busy += now - since;
  const double total = (now - started_) * static_cast<double>(running_since_.size());
  return total > 0 ? std::min(1.0, busy / total) : 0;
}

std::vector<Latency> Slots::recent() const {
  std::lock_guard lock(mu_);
  return {recent_.begin(), recent_.end()};
}

}  // namespace pkb::serve
