#include "serve/slots.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;

constexpr size_t kRecentLatencies = 1000;

}  // namespace

std::optional<Claim> LocalWork::claim(int max_world, double wait_s) {
  const int64_t seen = feed_.current();
  ClaimOptions o;
  o.max_world = max_world;
  std::optional<Claim> c = store_.claim_next(o);
  if (c)
    feed_.bump();
  else
    feed_.wait_after(seen, wait_s);
  return c;
}

void LocalWork::started(const Claim& c) {
  store_.set_running(c.id, c.attempt);
  feed_.bump();
}

bool LocalWork::keep(const Claim& c) {
  auto state = store_.state_of(c.id);
  return !(state && *state == EvalState::cancelled);
}

void LocalWork::finish(const Claim& c, const Outcome& o) {
  store_.finish(c, o.state, o.status, o.record, o.error, o.child_wall_s);
  feed_.bump();
}

Slots::Slots(WorkSource& source, SlotOptions options) : source_(source), o_(std::move(options)), free_gpus_(o_.gpus) {}

Slots::~Slots() { stop(); }

void Slots::stop() {
  stop_ = true;
  gpus_freed_.notify_all();
  source_.nudge();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Slots::start() {
  fs::create_directories(o_.eval.work_dir);
  for (const auto& leftover : fs::directory_iterator(o_.eval.work_dir))
    fs::remove_all(leftover.path());  // a dead one's
  started_ = last_end_ = epoch_seconds();
  size_t n = static_cast<size_t>(std::max(0, o_.slots));
  if (o_.eval.device == DeviceKind::cuda && n > 0) n = o_.gpus.size();
  running_since_.assign(n, 0);
  for (size_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { slot_loop(i); });
}

// The next claim, and on GPUs the W GPUs it runs on; none when nothing fits now (or the slots stop).
std::optional<Claim> Slots::next_claim(std::vector<std::string>* gpus) {
  std::lock_guard claiming(claim_mu_);
  int max_world = 1 << 30;
  if (o_.eval.device == DeviceKind::cuda) {
    std::unique_lock lock(mu_);
    gpus_freed_.wait(lock, [&] { return stop_ || !free_gpus_.empty(); });
    if (stop_) return std::nullopt;
    max_world = static_cast<int>(free_gpus_.size());
  }
  std::optional<Claim> c;
  try {
    c = source_.claim(max_world, o_.claim_wait_s);
  } catch (const std::exception& e) {  // the database was busy past its timeout, the server failed: try again
    std::fprintf(stderr, "pkb: %s\n", e.what());
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (c && o_.eval.device == DeviceKind::cuda) {  // only the claiming slot takes GPUs: these are still free
    std::lock_guard lock(mu_);
    gpus->assign(free_gpus_.begin(), free_gpus_.begin() + c->item.world);
    free_gpus_.erase(free_gpus_.begin(), free_gpus_.begin() + c->item.world);
  }
  return c;
}

void Slots::slot_loop(size_t slot) {
  while (!stop_) {
    std::vector<std::string> gpus;
    std::optional<Claim> c = next_claim(&gpus);
    if (!c) continue;
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
      busy_s_ += t1 - t0, last_end_ = t1, ++evaluated_;
      recent_.push_back({t0 - c->created, t1 - t0});
      if (recent_.size() > kRecentLatencies) recent_.pop_front();
    }
    if (!gpus.empty()) release_gpus(gpus);
  }
}

void Slots::evaluate(const Claim& c, const std::vector<std::string>& gpus) {
  EvalHooks hooks;
  hooks.started = [&] { source_.started(c); };
  hooks.keep = [&] { return source_.keep(c); };
  hooks.finish = [&](const Outcome& o) {  // not called when `keep` ended it: nothing to tell then
    try {
      source_.finish(c, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pkb: evaluation %s: its outcome was not stored: %s\n", c.id.c_str(), e.what());
    }
  };
  run_evaluation(c, o_.eval, gpus, hooks);
}

void Slots::release_gpus(const std::vector<std::string>& ids) {
  {
    std::lock_guard lock(mu_);
    free_gpus_.insert(free_gpus_.end(), ids.begin(), ids.end());
  }
  gpus_freed_.notify_all();
  source_.nudge();
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

double Slots::idle_s() const {
  std::lock_guard lock(mu_);
  for (double since : running_since_)
    if (since > 0) return 0;
  return epoch_seconds() - last_end_;
}

int Slots::evaluated() const {
  std::lock_guard lock(mu_);
  return evaluated_;
}

}  // namespace pkb::serve
