// pkb serve's slots in process (serve/slots.h), with a WorkSource of the test's own and a stand-in for `pkb eval`
// (a shell script that logs its GPUs, naps and prints a record): GPUs are leased to one evaluation at a time, a
// claim asks only for what the free GPUs can hold (so a smaller W is taken past a larger one), outcomes come back
// from the record, and a claim that `keep` gives up is killed without an outcome. Torch-free and in one process:
// scripts/tsan.sh runs it under ThreadSanitizer.
#include "serve/slots.h"

#include <gtest/gtest.h>

#include <thread>

#include "../unit/test_util.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;

// Hands out `queue` in order, each claim taking the first item that fits; records what it was asked and told.
class FakeSource : public WorkSource {
 public:
  explicit FakeSource(std::vector<Claim> queue) : queue_(std::move(queue)) {}
  std::optional<Claim> claim(int max_world, double wait_s) override {
    {
      std::lock_guard lock(mu_);
      asked_.push_back(max_world);
      for (auto it = queue_.begin(); it != queue_.end(); ++it)
        if (it->item.world <= max_world) {
          Claim c = *it;
          queue_.erase(it);
          return c;
        }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(wait_s, 0.05)));
    return std::nullopt;
  }
  void started(const Claim& c) override {
    std::lock_guard lock(mu_);
    started_.push_back(c.id);
  }
  bool keep(const Claim& c) override { return c.id != "give_up"; }
  void finish(const Claim& c, const Outcome& o) override {
    std::lock_guard lock(mu_);
    outcomes_[c.id] = o;
  }
  std::map<std::string, Outcome> outcomes() {
    std::lock_guard lock(mu_);
    return outcomes_;
  }
  std::vector<std::string> started_ids() {
    std::lock_guard lock(mu_);
    return started_;
  }

 private:
  std::mutex mu_;
  std::vector<Claim> queue_;
  std::vector<int> asked_;
  std::vector<std::string> started_;
  std::map<std::string, Outcome> outcomes_;
};

Claim claim_of(const std::string& id, int world) {
  Claim c;
  c.id = id, c.attempt = 1, c.item.problem = "001_allreduce", c.item.world = world, c.item.timing = "quick";
  c.item.source = "x";
  return c;
}

// A `pkb eval` stand-in: logs "start|end ID GPUS TIME", starts its candidate pass (out/runs), naps `nap_s`, prints a
// record (source "wrong" -> incorrect, else correct).
fs::path fake_pkb(const fs::path& dir, double nap_s) {
  const fs::path script = dir / "fake-pkb";
  test::write_file(script,
                   "#!/bin/sh\nsrc=$2; out=''\nwhile [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; shift; done\n"
                   "id=$(basename \"$(dirname \"$out\")\")\n"  // WORK/ID/out (sources are stored by content)
                   "echo \"start $id $CUDA_VISIBLE_DEVICES $(date +%s.%N)\" >>" +
                       (dir / "log").string() +
                       "\n"
                       "mkdir -p \"$out/runs\"; sleep " +
                       std::to_string(nap_s) +
                       "\n"
                       "echo \"end $id $CUDA_VISIBLE_DEVICES $(date +%s.%N)\" >>" +
                       (dir / "log").string() +
                       "\n"
                       "grep -q wrong \"$src\" && s=incorrect || s=correct\n"
                       "echo \"{\\\"schema\\\": \\\"pkb.result/1\\\", \\\"status\\\": \\\"$s\\\"}\"\n");
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

SlotOptions gpu_slots(const fs::path& dir, double nap_s, std::vector<std::string> gpus) {
  SlotOptions o;
  o.eval.device = DeviceKind::cuda;
  o.eval.pkb = fake_pkb(dir, nap_s);
  o.eval.work_dir = dir / "work";
  o.eval.cache_dir = dir / "cache";
  o.gpus = std::move(gpus);
  o.claim_wait_s = 0.05;
  return o;
}

struct Span {
  std::string gpus;
  double start = 0, end = 0;
};

// The log as id -> (GPUs, start, end).
std::map<std::string, Span> spans(const fs::path& log) {
  std::map<std::string, Span> out;
  std::ifstream in(log);
  for (std::string what, id, gpus, t; in >> what >> id >> gpus >> t;) {
    out[id].gpus = gpus;
    (what == "start" ? out[id].start : out[id].end) = std::stod(t);
  }
  return out;
}

template <class Pred>
bool eventually(Pred p, double timeout_s = 30) {
  for (int i = 0; i < timeout_s * 50; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return p();
}

TEST(Slots, ASmallerWorldIsTakenPastOneThatMustWaitForGpus) {
  test::TempDir tmp;
  FakeSource source({claim_of("big1", 2), claim_of("big2", 2), claim_of("small", 1)});
  {
    Slots slots(source, gpu_slots(tmp.path(), 1.0, {"0", "1", "2"}));
    slots.start();
    EXPECT_EQ(slots.count(), 3) << "one slot per GPU";
    ASSERT_TRUE(eventually([&] { return source.outcomes().size() == 3; }));
  }
  auto s = spans(tmp.path() / "log");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s["big1"].gpus.size(), 3u) << "W = 2: two GPUs, e.g. 0,1: " << s["big1"].gpus;
  EXPECT_EQ(s["small"].gpus.size(), 1u);
  EXPECT_LT(s["small"].start, s["big1"].end) << "W = 1 ran beside the first W = 2 on the GPU left free";
  EXPECT_GE(s["big2"].start, s["big1"].end) << "the second W = 2 waited for GPUs";
  for (const auto& [a, x] : s)
    for (const auto& [b, y] : s)
      if (a < b && x.start < y.end && y.start < x.end)
        for (char g : x.gpus)
          if (g != ',') EXPECT_EQ(y.gpus.find(g), std::string::npos) << a << " and " << b << " shared GPU " << g;
  for (const auto& [id, o] : source.outcomes()) {
    EXPECT_EQ(o.state, EvalState::done) << id;
    EXPECT_EQ(o.status, "correct") << id;
  }
  EXPECT_EQ(source.started_ids().size(), 3u) << "each candidate pass's start was told";
}

TEST(Slots, AClaimGivenUpIsKilledWithoutAnOutcome) {
  test::TempDir tmp;
  Claim wrong = claim_of("wrong_one", 2);
  wrong.item.source = "wrong";
  FakeSource source({claim_of("give_up", 2), wrong});
  SlotOptions o = gpu_slots(tmp.path(), 2.0, {"0", "1"});
  {
    Slots slots(source, o);
    slots.start();
    ASSERT_TRUE(eventually([&] { return source.outcomes().count("wrong_one") == 1; }));
  }
  EXPECT_EQ(source.outcomes().count("give_up"), 0u);
  EXPECT_EQ(source.outcomes()["wrong_one"].status, "incorrect");
  auto s = spans(tmp.path() / "log");
  EXPECT_EQ(s["give_up"].end, 0) << "killed during its nap";
}

}  // namespace
}  // namespace pkb::serve
