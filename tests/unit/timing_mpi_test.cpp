// time_iterations under real MPI ranks (run with mpirun -np 2). Calls take known times on a per-rank virtual
// clock (a shared 2-core CI machine would stretch busy-waits unpredictably), so both methods' statistics are
// exact: rank 0's calls take 200 µs, rank 1's alternate 300 and 500 µs; pkb (slowest rank per call) sees
// 300/500 alternating, paper (per-rank mean, maximum over ranks) 400. The gathers, reductions and the stop
// decision's broadcast are MPI's. One more timing on the real CPU runtime with busy-waits checks lower bounds.
// With --cuda (GPU nodes, scripts/gpu_check.sh; any number of ranks on one GPU each): the device view on the real
// CUDA runtime, for a dispatch-bound call and for one that waits on the GPU inside.
// Exits non-zero if any check failed.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "worker/call_gate.h"
#include "worker/timing.h"

namespace {

int failures = 0;
int rank = 0, world = 1;

void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
}

// The CPU runtime's barrier (MPI), with a clock that only run() advances.
class VirtualClockRuntime : public pkb::Runtime {
 public:
  VirtualClockRuntime() : Runtime(MPI_COMM_WORLD) {}
  double now_us = 0;
  bool is_cuda() const override { return false; }
  int device() const override { return -1; }
  void* stream() const override { return nullptr; }
  void copy(void*, const void*, size_t) override {}
  void fill(void*, uint8_t, size_t) override {}
  void copy_async(void*, const void*, size_t) override {}
  void* private_alloc(size_t) override { return nullptr; }
  std::string synchronize() override { return ""; }
  std::string stream_synchronize() override { return ""; }
  void timers_reserve(int n) override { marks_.assign(n, 0); }
  void record(int i) override { marks_[i] = now_us; }
  double elapsed_ms(int i, int j) override { return (marks_[j] - marks_[i]) / 1e3; }
  bool reached(int) override { return true; }
  void hold(double, int) override {}
  void* const* heap_bases_device() const override { return nullptr; }
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

 private:
  std::vector<double> marks_;
};

// A virtual GPU: a host clock that issuing advances and a device clock for the end of the stream's queue. A launch
// issued at host time h starts at max(queue end, h); record() marks where the queue is; reached(i) is whether the
// device got to mark i by the host's present time; hold(us) queues a spin. So a call of n launches, c µs of host
// time and g µs of device time each, takes n*c + g on the events when the host issues it onto an idle stream
// (c > g: dispatch-bound), and n*g when a long enough hold queued it first.
class VirtualGpuRuntime : public pkb::Runtime {
 public:
  VirtualGpuRuntime() : Runtime(MPI_COMM_WORLD) {}
  double host_us = 0, queue_end_us = 0;
  void launch(double host_cost_us, double device_us) {
    host_us += host_cost_us;
    queue_end_us = std::max(queue_end_us, host_us) + device_us;
  }
  double host_now_us() const override { return host_us; }
  bool is_cuda() const override { return true; }
  int device() const override { return -1; }  // no NVML clocks
  void* stream() const override { return nullptr; }
  void copy(void*, const void*, size_t) override {}
  void fill(void*, uint8_t, size_t) override {}
  void copy_async(void*, const void*, size_t) override {}
  void* private_alloc(size_t) override { return nullptr; }
  std::string synchronize() override {
    host_us = std::max(host_us, queue_end_us);
    return "";
  }
  std::string stream_synchronize() override { return synchronize(); }
  void timers_reserve(int n) override { marks_.assign(n, 0); }
  void record(int i) override { marks_[i] = queue_end_us = std::max(queue_end_us, host_us); }
  double elapsed_ms(int i, int j) override { return (marks_[j] - marks_[i]) / 1e3; }
  bool reached(int i) override { return marks_[i] <= host_us; }
  void hold(double us, int slot) override {
    queue_end_us = std::max(queue_end_us, host_us) + us;
    slot_of_hold_.push_back(slot);
  }
  bool hold_fills_device() const override { return fills_device; }
  // Holds number `busy_from` onwards (counting every hold this runtime made) report a GPU busy with other work.
  std::vector<HoldTrace> hold_traces(int n) override {
    std::vector<HoldTrace> out(n);
    for (size_t h = 0; h < slot_of_hold_.size(); ++h)
      if (holds_seen_ + h >= busy_from && slot_of_hold_[h] < n)
        out[slot_of_hold_[h]].start_spread_us = 2 * pkb::kHoldBusySpreadUs;
    holds_seen_ += slot_of_hold_.size();
    slot_of_hold_.clear();
    return out;
  }
  size_t holds_made() const { return holds_seen_ + slot_of_hold_.size(); }
  bool fills_device = true;
  size_t busy_from = size_t{1} << 30;
  void* const* heap_bases_device() const override { return nullptr; }
  // Host and device both wait for every rank (the device flag barrier); the clocks stay per rank.
  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

 private:
  std::vector<double> marks_;
  std::vector<int> slot_of_hold_;
  size_t holds_seen_ = 0;
};

// A virtual GPU for the call gate (worker/call_gate.h): the operations the monitor enqueues are logged in order (op();
// `log` for the tests to read and clear, and a history the device model keeps), and the device's time of a window is
// modelled from what was enqueued between its two marks: each wait for a call's done costs that call's work on the
// runner's side (work_us, which the fake runner sets once woken), each flag operation kFlagUs, and anything else of
// the monitor's (an upload, a poison, a readback) kForeignUs, so a window that holds more than its own call's flags
// shows; whatever the host spent waking the runner is not in it.
class VirtualGateRuntime : public pkb::Runtime {
 public:
  VirtualGateRuntime() : Runtime(MPI_COMM_WORLD) {}
  static constexpr double kFlagUs = 1, kForeignUs = 1e6;
  std::vector<std::string> log;
  std::map<uint32_t, double> work_us;  // call seq -> its device work
  void op(const std::string& what) {
    log.push_back(what);
    history_.push_back(what);
  }
  bool is_cuda() const override { return true; }
  int device() const override { return -1; }
  void* stream() const override { return nullptr; }
  void copy(void*, const void*, size_t) override {}
  void fill(void*, uint8_t, size_t) override { op("fill"); }
  void copy_async(void*, const void*, size_t) override { op("copy"); }
  void* private_alloc(size_t bytes) override { return owned_.emplace_back(bytes).data(); }
  std::string synchronize() override { return ""; }
  std::string stream_synchronize() override { return ""; }
  void timers_reserve(int n) override { mark_at_.assign(n, 0); }
  void record(int i) override {
    op("record " + std::to_string(i));
    mark_at_[i] = history_.size();
  }
  double elapsed_ms(int i, int j) override {
    if (mark_at_[j] < mark_at_[i]) return 1e9;
    double us = 0;
    for (size_t at = mark_at_[i]; at + 1 < mark_at_[j]; ++at) {
      const std::string& e = history_[at];
      if (e.rfind("wait ", 0) == 0)
        us += kFlagUs + work_us[static_cast<uint32_t>(std::stoul(e.substr(5)))];
      else
        us += e.rfind("write ", 0) == 0 ? kFlagUs : kForeignUs;
    }
    return us / 1e3;
  }
  bool reached(int) override { return true; }
  void hold(double, int) override { op("probe"); }
  void* const* heap_bases_device() const override { return nullptr; }
  void barrier() override {
    op("barrier");
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void* map_host_memory(void* host, size_t) override { return host; }
  void gate_hold(const uint32_t* armed, uint32_t seq, double) override {
    armed_at_hold_ = *armed;
    op("hold " + std::to_string(seq));
  }
  void flag_write(uint32_t*, uint32_t v) override { op("write " + std::to_string(v)); }
  void flag_wait(const uint32_t*, const uint32_t*, uint32_t seq, double) override { op("wait " + std::to_string(seq)); }
  uint32_t armed_at_hold_ = 0;

 private:
  std::vector<std::string> history_;
  std::vector<size_t> mark_at_;  // timer i: the history's length once it was recorded
  std::deque<std::vector<char>> owned_;
};

void spin_us(double us) {
  auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() < us) {
  }
}

}  // namespace

// One timing: rank 1 alternates 300/500 µs, rank 0 spins 200 µs; records which copies every call used.
struct Run {
  pkb::TimingStats stats;
  std::vector<int> before_copies;          // every call's copy, in order
  std::vector<std::pair<int, int>> timed;  // (ordinal, copy) of every timed call
};

Run timed_run(VirtualClockRuntime& rt, const pkb::CopyPlan& plan, const pkb::TimingOptions& o) {
  Run r;
  int calls = 0;
  pkb::TimingHooks hooks;
  hooks.before = [&](int k) { r.before_copies.push_back(k); };
  hooks.after_timed = [&](int j, int k) { r.timed.push_back({j, k}); };
  r.stats = pkb::time_iterations(
      rt, plan, [&](int) { rt.now_us += rank == 0 ? 200 : (calls++ % 2 ? 500 : 300); }, o, &hooks);
  return r;
}

// The device view on a real GPU: 20 small device copies per call issue slower than the GPU runs them, so the pkb
// method sees the host's dispatch and the device view only the copies; a call that synchronizes its stream inside
// cannot be held and leaves the view unmeasured.
void cuda_checks() {
  using namespace pkb;
  auto rt = make_cuda_runtime(MPI_COMM_WORLD, size_t{1} << 20);
  void* src = rt->private_alloc(4096);
  void* dst = rt->private_alloc(4096);
  TimingOptions o;
  o.paper_warmup = 100, o.min_reps = 3, o.max_reps = 3, o.budget_s = 60;
  auto copies = [&](int) {
    for (int i = 0; i < 20; ++i) rt->copy_async(dst, src, 4096);
  };
  TimingStats s = time_iterations(*rt, CopyPlan{1, 1}, copies, o);
  if (rank == 0) {
    std::printf(
        "cuda: 20 copies of 4 KiB per call: pkb %.1f us, paper %.1f us, device view %.1f us (IQR %.2f, %d of "
        "%d calls unheld, hold %.0f us)\n",
        s.pkb.stats.median, s.paper.stats.median, s.device.method.stats.median,
        s.device.method.stats.q75 - s.device.method.stats.q25, s.device.unheld, s.device.calls, s.device.hold_us);
    check(s.device.calls == 3 * o.device_iters, "cuda: every device-view call made");
    check(s.device.measured() && s.device.unheld <= s.device.calls / 10, "cuda: the hold covers the issuing");
    check(s.device.method.stats.median < s.pkb.stats.median,
          "cuda: the device view leaves out the host's dispatch that the pkb method includes");
    // The hold takes every SM's thread slots, and on a GPU running nothing else its blocks all start together.
    std::printf("cuda: hold fills the GPU: %s; largest start spread %.2f us, longest gap %.2f us, %d busy\n",
                rt->hold_fills_device() ? "yes" : "no", s.device.max_start_spread_us, s.device.max_gap_us,
                s.device.busy);
    check(rt->hold_fills_device(), "cuda: the hold takes every SM's thread slots");
    check(
        s.device.busy == 0 && s.device.max_start_spread_us < kHoldBusySpreadUs && s.device.max_gap_us < kHoldBusyGapUs,
        "cuda: an idle GPU's holds are not busy");
  }
  // The same calls as a candidate's (untrusted, at W = 1): never below the host's issue time, which here exceeds
  // the copies' GPU time, so every counted call is host-bound.
  TimingHooks cand;
  cand.untrusted = true;
  TimingStats u = time_iterations(*rt, CopyPlan{1, 1}, copies, o, &cand);
  if (rank == 0) {
    std::printf("cuda: as a candidate: device view %.1f us, %d of %d counted calls host-bound, note '%s'\n",
                u.device.method.stats.median, u.device.host_bound, u.device.method.stats.n, u.device.note.c_str());
    if (world == 1)
      check(u.device.measured() && u.device.method.stats.median >= s.device.method.stats.median,
            "cuda: a candidate's device view is never below the GPU's time");
  }
  auto waits = [&](int) {
    copies(0);
    if (std::string err = rt->stream_synchronize(); !err.empty()) check(false, err);
    rt->copy_async(dst, src, 4096);
  };
  TimingStats w = time_iterations(*rt, CopyPlan{1, 1}, waits, o);
  if (rank == 0) {
    std::printf("cuda: a call that waits inside: %d of %d device-view calls unheld, note: %s\n", w.device.unheld,
                w.device.calls, w.device.note.c_str());
    // The first block's calls unheld, the view stopped; the later blocks' calls run untimed.
    check(!w.device.measured() && w.device.calls == 3 * o.device_iters && w.device.unheld == o.device_iters,
          "cuda: a waiting call is never held");
  }
}

// The generator on the device (Runtime::draw, a kernel) against the host's (core/element_draw.h), 4M elements of every
// distribution into the dtypes problems use: byte for byte (a monitor draws the copies whose outputs the driver checks
// against expected outputs made from the host's draws). Prints the mismatches (and how many are more than one
// encoding apart) and the draw's time per element.
void cuda_draw_checks() {
  using namespace pkb;
  auto rt = make_cuda_runtime(MPI_COMM_WORLD, size_t{1} << 20);
  const int64_t n = int64_t{1} << 22;
  using K = ElementDraw::Kind;
  struct Case {
    K kind;
    DType dtype;
    double a, b;
  };
  const Case cases[] = {
      {K::uniform, DType::bf16, -1, 1},       {K::uniform, DType::f32, 0, 4},     {K::uniform, DType::f16, -2, 2},
      {K::normal, DType::bf16, 0, 1},         {K::normal, DType::f32, 3, 2},      {K::normal, DType::f16, 0, 0.5},
      {K::bernoulli, DType::boolean, 0.3, 0}, {K::bernoulli, DType::f32, 0.7, 0}, {K::randint, DType::i64, 0, 0},
      {K::randint, DType::i32, 0, 0},         {K::randint, DType::u8, 0, 0}};
  void* device = rt->private_alloc(n * 8);
  std::vector<char> host(n * 8), back(n * 8);
  for (const Case& c : cases) {
    ElementDraw d;
    d.kind = c.kind, d.dtype = c.dtype, d.a = c.a, d.b = c.b, d.seed = 0x5eed0000u + static_cast<unsigned>(c.kind);
    d.int_low = -7, d.span = c.dtype == DType::u8 ? 200 : 100003;
    const size_t bytes = static_cast<size_t>(n) * dtype_size(c.dtype);
    draw_elements(d, host.data(), n);
    rt->draw(device, d, n);  // once to warm up, then timed
    check(rt->stream_synchronize().empty(), "draw kernel ran");
    auto t0 = std::chrono::steady_clock::now();
    rt->draw(device, d, n);
    rt->stream_synchronize();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    rt->copy(back.data(), device, bytes);
    int64_t differ = 0, beyond_last_bit = 0;
    const size_t width = dtype_size(c.dtype);
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(&host[i * width], &back[i * width], width) == 0) continue;
      ++differ;
      uint64_t h = 0, g = 0;
      std::memcpy(&h, &host[i * width], width), std::memcpy(&g, &back[i * width], width);
      beyond_last_bit += (h > g ? h - g : g - h) > 1;  // same sign and exponent: adjacent encodings
    }
    if (rank == 0)
      std::printf(
          "cuda draw: %s into %s: %lld of %lld elements differ from the host's (%lld by more than one ulp); "
          "%.1f us, %.3f ns per element\n",
          c.kind == K::uniform     ? "uniform"
          : c.kind == K::normal    ? "normal"
          : c.kind == K::bernoulli ? "bernoulli"
                                   : "randint",
          dtype_name(c.dtype), static_cast<long long>(differ), static_cast<long long>(n),
          static_cast<long long>(beyond_last_bit), us, 1000 * us / n);
    check(differ == 0, std::string("device draws are the host's bytes: ") + dtype_name(c.dtype));
  }
  // same_bytes on the device: equal buffers, a difference in the last byte of an odd length, and in the first word.
  void* other = rt->private_alloc(n * 8);
  ElementDraw d;
  d.kind = K::uniform, d.dtype = DType::u8, d.seed = 3;
  rt->draw(device, d, n), rt->draw(other, d, n);
  check(rt->same_bytes(device, other, n - 1), "same_bytes: equal draws");
  rt->fill(static_cast<char*>(other) + n - 2, 0x5A, 1);
  rt->fill(static_cast<char*>(device) + n - 2, 0xA5, 1);
  check(!rt->same_bytes(device, other, n - 1), "same_bytes: the tail's last byte differs");
  check(rt->same_bytes(device, other, n - 2), "same_bytes: equal up to it");
  rt->fill(other, 0x11, 1), rt->fill(device, 0x22, 1);
  check(!rt->same_bytes(device, other, 8), "same_bytes: the first word differs");
  check(rt->stream_synchronize().empty(), "same_bytes ran");
}

// A candidate's device view on the virtual GPU (TimingHooks::untrusted): it measures at W = 1 only, with a hold
// that fills the GPU; a call's time is never below the host's time to issue it; a hold that found the GPU busy does
// not count. Its device-view calls run, and are captured, wherever the view measures nothing.
void candidate_checks(pkb::TimingOptions v) {
  using namespace pkb;
  VirtualGpuRuntime gpu;
  v.device_iters = 8, v.max_reps = 2, v.min_reps = 2, v.rep_gap_ms = 0, v.budget_s = 60;
  const double host_cost = rank == 0 ? 5 : 8;
  auto launches = [&](int) {
    for (int i = 0; i < 20; ++i) gpu.launch(host_cost, 1);
  };
  int captured = 0;
  TimingHooks cand;
  cand.untrusted = true;
  cand.after_timed = [&](int, int) { ++captured; };
  TimingStats c1 = time_iterations(gpu, CopyPlan{3, 3}, launches, v, &cand);
  check(captured == 2 * v.calls_per_rep(), "a candidate's device-view calls are timed calls like the others");
  auto heavy = [&](int) {  // 20 launches of 5 us (rank 1: 8) on the host and 10 us on the GPU: GPU-bound
    for (int i = 0; i < 20; ++i) gpu.launch(host_cost, 10);
  };
  TimingStats c2 = time_iterations(gpu, CopyPlan{3, 3}, heavy, v, &cand);
  if (rank == 0 && world == 1) {
    check(c1.device.host_bound == 16 && c1.device.method.stats.min == 100 && c1.device.method.stats.max == 100,
          "a dispatch-bound candidate's device view is its issue time (100 us), got " +
              std::to_string(c1.device.method.stats.median) + ", host-bound " + std::to_string(c1.device.host_bound));
    check(c2.device.host_bound == 0 && c2.device.method.stats.median == 200,
          "a GPU-bound candidate's device view is the GPU's 200 us, got " +
              std::to_string(c2.device.method.stats.median));
    // Holds from the fourth on find the GPU busy: 3 calls count, the rest of the block is busy, and the next
    // block, with no call held, stops the view.
    gpu.busy_from = gpu.holds_made() + 3;
    TimingStats c3 = time_iterations(gpu, CopyPlan{3, 3}, heavy, v, &cand);
    check(c3.device.method.values_us.size() == 3 && c3.device.busy == 13 && c3.device.max_start_spread_us > 0,
          "busy holds do not count: " + std::to_string(c3.device.method.values_us.size()) + " counted, " +
              std::to_string(c3.device.busy) + " busy");
    gpu.busy_from = size_t{1} << 30;
    gpu.fills_device = false;
    TimingStats c4 = time_iterations(gpu, CopyPlan{3, 3}, heavy, v, &cand);
    check(!c4.device.measured() && c4.device.note.find("thread slots") != std::string::npos,
          "a hold that cannot fill the GPU gives a candidate no device view: " + c4.device.note);
    gpu.fills_device = true;
    // A candidate that issues its warm-up calls slowly (2 ms each) starts the view with a long hold, but after its
    // first held call the hold follows its real issue time down (2 x 100 + 50 us); a reference's hold stays long.
    int slow_calls = 0;
    auto slow_warmups = [&](int) {
      if (slow_calls++ < v.warmup) gpu.host_us += 2000;
      launches(0);
    };
    TimingStats c5 = time_iterations(gpu, CopyPlan{3, 3}, slow_warmups, v, &cand);
    check(c5.device.hold_us == initial_hold_us(100),
          "a candidate's hold shrinks to its issue: " + std::to_string(c5.device.hold_us));
    slow_calls = 0;
    TimingStats r0 = time_iterations(gpu, CopyPlan{3, 3}, slow_warmups, v);
    check(r0.device.hold_us == initial_hold_us(2100),
          "a reference's hold keeps its warm-up's size: " + std::to_string(r0.device.hold_us));
    // A trusted reference's device view stays the GPU's time however long the host took.
    TimingStats r1 = time_iterations(gpu, CopyPlan{3, 3}, launches, v);
    check(r1.device.host_bound == 0 && r1.device.method.stats.median == 20, "a reference's device view: 20 us");
  }
  if (rank == 0 && world > 1)
    check(!c1.device.measured() && c1.device.calls == 16 && c1.device.note.find("W > 1") != std::string::npos,
          "no device view for a candidate at W > 1: " + c1.device.note);
}

// The call gate through the timing loop, as a GPU runner's monitor drives it: every call gated (warm-ups too), each
// timed call's window the timers the loop asked for, around exactly that call's work: the loop's times are the work
// plus the window's two flag operations, whatever the runner's wake-up cost on the host. And the baselines' view: a
// gate armed at once, the flag operations inside the window.
void gate_checks() {
  using namespace pkb;
  VirtualGateRuntime rt;
  alignas(4096) static char segment[4096] = {};
  auto* host = new (segment) runner::GateHostFlags{};
  runner::GateDeviceFlags device{};
  CallGate gate(rt, segment, sizeof segment, host, &device);
  int next_window = -1;
  auto view = gated_window_view(rt, next_window);
  TimingOptions o;
  o.warmup = 2, o.iters = 6, o.paper_warmup = 3, o.paper_iters = 4, o.min_reps = 2, o.max_reps = 2, o.budget_s = 60;
  o.device_iters = 0;
  uint32_t seq = 0;
  int timed_windows = 0, untimed = 0;
  auto call = [&](int) {
    const bool timed = next_window >= 0;
    (timed ? timed_windows : untimed) += 1;
    ++seq;
    CallBracket bracket{
        .prepare = [&] { rt.op("poison"); }, .start_timer = next_window, .after_window = [&] { rt.op("after"); }};
    next_window = -1;
    rt.log.clear();
    gate.open(seq, bracket);
    // The runner wakes (host time the window must not see), arms, works 10 or 30 us on its stream, stops.
    spin_us(50);
    host->armed.store(seq);
    rt.work_us[seq] = seq % 2 ? 10 : 30;
    gate.close(seq);
    std::vector<std::string> want = {"hold " + std::to_string(seq)};
    if (world > 1) want.push_back("barrier");  // the ranks' windows start together, once every runner is armed
    want.push_back("poison");
    if (timed) want.push_back("record " + std::to_string(bracket.start_timer));
    want.push_back("write " + std::to_string(seq));
    want.push_back("wait " + std::to_string(seq));
    if (timed) want.push_back("record " + std::to_string(bracket.start_timer + 1));
    want.push_back("after");
    check(rt.log == want, "call " + std::to_string(seq) + ": the gate's operations out of order");
    check(host->abort.load() == seq, "close ends every wait of the call");
  };
  TimingStats s = time_iterations(*view, CopyPlan{4, 2}, call, o);
  check(untimed == o.warmup + o.paper_warmup, "warm-ups pass the gate without a window: " + std::to_string(untimed));
  check(timed_windows == 2 * (o.iters + o.paper_iters) + kEscapeProbeCalls,
        "every timed call gets its window: " + std::to_string(timed_windows));
  if (rank == 0)
    check(s.pkb.stats.min == 12 && s.pkb.stats.max == 32 && s.paper.stats.median == 22,
          "the windows are the work plus two flag operations, no wake-up: " + std::to_string(s.pkb.stats.min) + ".." +
              std::to_string(s.pkb.stats.max) + ", paper " + std::to_string(s.paper.stats.median));

  // The baselines' view, with the monitor's part on a stream of its own: hold, start, go, the wait for done, end, all
  // enqueued before the call; on the baseline's stream the wait for go, the work, done. Armed only once all of the
  // monitor's part is enqueued, as a woken runner arms it.
  VirtualGateRuntime monitor, base;
  auto baseline = gated_baseline_view(monitor, base);
  baseline->timers_reserve(2);
  baseline->record(0);
  base.op("work");
  baseline->record(1);
  std::vector<std::string> want_monitor = {"fill", "hold 1", "record 0", "write 1", "wait 1", "record 1"};
  if (world > 1) want_monitor.insert(want_monitor.begin() + 2, "barrier");
  check(monitor.log == want_monitor, "the baselines' gate: the monitor's part");
  check(base.log == std::vector<std::string>({"wait 1", "work", "write 1"}), "the baselines' gate: the runner's part");
  check(monitor.armed_at_hold_ == 0, "the baselines' gate is armed after its hold is enqueued");
}

// ---- The paper method's blocks in a GPU runner (TimingHooks::run_block, CallGate::open_block) ----

// The order a block's operations must keep on the monitor's stream, as rules over its log (inputs "upload K", "hold S",
// "barrier", "poison", "record T", "write S" for go, "wait S" for done, "readback K", "probe"): no call's inputs before
// the call ahead of it wrote done and was read back; one hold (for the first call) and, at W > 1, the barrier, before
// any poison; each call's poison after its inputs; its window exactly its own go and wait; its readback right after
// its window, before anything of the next call; a probe after each timed call's readback; every call of the block
// made and read back. Returns what broke ("" where nothing did).
std::string block_order_problem(const std::vector<std::string>& log, uint32_t first, const std::vector<int>& copies,
                                bool timed, int offset = 0) {
  const int n = static_cast<int>(copies.size());
  int uploaded = 0, poisoned = 0, started = 0, written = 0, waited = 0, ended = 0, read = 0, probes = 0, holds = 0;
  bool barrier = false;
  std::string prev;
  auto seq = [&](int c) { return std::to_string(first + static_cast<uint32_t>(c)); };
  for (size_t at = 0; at < log.size(); prev = log[at++]) {
    const std::string& e = log[at];
    const std::string where = " (operation " + std::to_string(at) + ": " + e + ")";
    if (e.rfind("upload ", 0) == 0) {
      if (uploaded >= n || e != "upload " + std::to_string(copies[uploaded])) return "inputs of no call next" + where;
      if (uploaded > 0 && (waited < uploaded || read < uploaded))
        return "call " + std::to_string(uploaded) + "'s inputs before the call ahead wrote done and was read back" +
               where;
      ++uploaded;
    } else if (e.rfind("hold ", 0) == 0) {
      if (holds++ || e != "hold " + seq(0) || poisoned) return "one hold, for the first call, before all else" + where;
    } else if (e == "barrier") {
      if (world == 1 || barrier || prev != "hold " + seq(0)) return "the barrier right after the hold (W > 1)" + where;
      barrier = true;
    } else if (e == "poison") {
      if (!holds || (world > 1 && !barrier)) return "poison before the hold and barrier" + where;
      if (uploaded != poisoned + 1 || read != poisoned) return "poison not between a call's inputs and window" + where;
      ++poisoned;
    } else if (e.rfind("record ", 0) == 0) {
      const bool start = started == ended;
      const int c = start ? started : ended, t = 2 * (offset + c) + (start ? 0 : 1);
      if (!timed || e != "record " + std::to_string(t)) return "a window's mark out of place" + where;
      if (start ? (poisoned != c + 1 || prev != "poison") : prev != "wait " + seq(c))
        return "a window holding more than its call's go and done" + where;
      (start ? started : ended) += 1;
    } else if (e.rfind("write ", 0) == 0) {
      if (e != "write " + seq(written) || poisoned != written + 1 || (timed && started != written + 1))
        return "go out of order" + where;
      if (prev != (timed ? "record " + std::to_string(2 * (offset + written)) : "poison"))
        return "go not at the start" + where;
      ++written;
    } else if (e.rfind("wait ", 0) == 0) {
      if (e != "wait " + seq(waited) || prev != "write " + seq(waited)) return "done not waited right after go" + where;
      ++waited;
    } else if (e.rfind("readback ", 0) == 0) {
      if (read >= n || e != "readback " + std::to_string(copies[read]) || waited != read + 1 ||
          (timed && ended != read + 1))
        return "a readback out of order" + where;
      if (prev != (timed ? "record " + std::to_string(2 * (offset + read) + 1) : "wait " + seq(read)))
        return "a readback not right after its window" + where;
      ++read;
    } else if (e == "probe") {
      if (!timed || probes != read - 1 || prev.rfind("readback ", 0) != 0)
        return "a probe not right after a timed call's readback" + where;
      ++probes;
    } else {
      return "an operation the block does not make" + where;
    }
  }
  if (uploaded != n || poisoned != n || written != n || waited != n || read != n || probes != (timed ? n : 0) ||
      holds != 1)
    return "not every call of the block made, windowed and read back (" + std::to_string(read) + " of " +
           std::to_string(n) + " read back)";
  return "";
}

// A GPU runner's monitor as the candidate pass drives it (worker/candidate_pass.cpp), on the virtual GPU: each call of
// its own (pkb method, escape probe) through its own gate, each paper-method block (and warm-up chunk) through one
// open_block, and a fake runner that wakes, arms and works work_us(seq) per call. Every call draws whether it is its
// copy's capture (CaptureDraw, before its readback is enqueued); `kept_position` remembers where each copy's kept call
// sat: its position in a paper-method block, or -1.
struct BlockRig {
  alignas(4096) char segment[4096] = {};
  VirtualGateRuntime rt;
  pkb::runner::GateHostFlags* host = new (segment) pkb::runner::GateHostFlags{};
  pkb::runner::GateDeviceFlags device{};
  pkb::CallGate gate{rt, segment, sizeof segment, host, &device};
  int next_window = -1;
  std::unique_ptr<pkb::Runtime> view = pkb::gated_window_view(rt, next_window);
  uint32_t seq = 0;
  pkb::CaptureDraw draw;
  std::vector<char> captured;
  std::vector<int> kept_position;
  bool broken = false;           // call i's prepare also uploads call i + 1's inputs: the order a test must refuse
  size_t calls_per_wake = 1000;  // a longer block is several wakes, as the candidate pass splits it
  struct Block {
    uint32_t first;
    std::vector<int> copies;
    bool timed;
    int offset;  // its first call's position in the block
    std::vector<std::string> log;
  };
  std::vector<Block> blocks;
  pkb::TimingHooks hooks;

  BlockRig(int copies, std::vector<char> checked, uint64_t seed = 1)
      : draw(copies, seed), captured(std::move(checked)) {
    kept_position.assign(copies, -2);  // -2: never kept
    hooks.run_block = [this](const std::vector<int>& c, bool timed) { run_block(c, timed); };
  }
  static double work_us(uint32_t s) { return 10.0 * (1 + s % 3); }
  void runner_works(uint32_t first, uint32_t last) {
    host->armed.store(first);  // woken (host time no window sees), armed, the calls' work on its stream
    for (uint32_t s = first; s <= last; ++s) rt.work_us[s] = work_us(s);
  }
  void keep(int copy, int position) {
    if (draw.keep(copy, captured[copy])) kept_position[copy] = position;
  }
  // A call of its own, as the candidate pass's run() makes it through the gate.
  void call(int k) {
    const bool timed = next_window >= 0;
    pkb::CallBracket b{.prepare = [this] { rt.op("poison"); }, .start_timer = std::exchange(next_window, -1)};
    b.after_window = [this, k, timed] {
      rt.op("readback " + std::to_string(k));
      if (timed) rt.op("probe");
    };
    rt.op("upload " + std::to_string(k));  // before_call, ahead of the gate
    keep(k, -1);
    gate.open(++seq, b);
    runner_works(seq, seq);
    gate.close(seq);
  }
  void run_block(const std::vector<int>& copies, bool timed) {
    for (size_t at = 0; at < copies.size(); at += calls_per_wake) {
      const size_t n = std::min(calls_per_wake, copies.size() - at);
      run_wake(std::vector<int>(copies.begin() + at, copies.begin() + at + n), timed, static_cast<int>(at));
    }
  }
  // One wake: the calls of copies, the first of them call `offset` of the block (its timers 2 * offset on).
  void run_wake(const std::vector<int>& copies, bool timed, int offset) {
    const size_t from = rt.log.size();
    const uint32_t first = seq + 1, last = seq + static_cast<uint32_t>(copies.size());
    std::vector<pkb::CallBracket> brackets(copies.size());
    for (size_t i = 0; i < copies.size(); ++i) {
      const int k = copies[i];
      keep(k, timed ? offset + static_cast<int>(i) : -1);
      pkb::CallBracket& b = brackets[i];
      if (!broken || i == 0) b.inputs = [this, k] { rt.op("upload " + std::to_string(k)); };
      b.prepare = [this, next = broken && i + 1 < copies.size() ? copies[i + 1] : -1] {
        rt.op("poison");
        if (next >= 0) rt.op("upload " + std::to_string(next));
      };
      b.start_timer = timed ? 2 * (offset + static_cast<int>(i)) : -1;
      b.after_window = [this, k, timed] {
        rt.op("readback " + std::to_string(k));
        if (timed) rt.op("probe");
      };
    }
    gate.open_block(first, brackets);
    runner_works(first, last);
    seq = last;
    gate.close(last);
    check(host->abort.load() == last && host->armed.load() == last, "close ends every wait of the block");
    blocks.push_back({first, copies, timed, offset, std::vector<std::string>(rt.log.begin() + from, rt.log.end())});
  }
  pkb::TimingStats time(const pkb::CopyPlan& plan, const pkb::TimingOptions& o) {
    return pkb::time_iterations(
        *view, plan, [this](int k) { call(k); }, o, &hooks);
  }
};

pkb::TimingOptions block_options() {
  pkb::TimingOptions o;
  o.warmup = 2, o.iters = 3, o.paper_warmup = 6, o.paper_iters = 5, o.min_reps = 2, o.max_reps = 2, o.budget_s = 60;
  o.device_iters = 0;
  return o;
}

// The paper method in a GPU runner through time_iterations: every warm-up chunk and every timed block one open_block,
// in exactly the order a block must keep (block_order_problem, and spelled out for one); the pkb method's calls each
// their own gate; each call's window its own work plus its two flags, so the paper value is the block's mean of them.
void block_order_checks() {
  using namespace pkb;
  const TimingOptions o = block_options();
  const CopyPlan plan = copy_plan(3 + o.max_timed_calls() + kEscapeProbeCalls, 3, o);
  BlockRig rig(plan.copies, std::vector<char>(plan.copies, 1));
  TimingStats s = rig.time(plan, o);
  // Warm-up: chunks of up to 50 calls, here one of 6; then one block of 5 per repetition.
  check(rig.blocks.size() == 1 + static_cast<size_t>(o.max_reps), "one block per warm-up chunk and per repetition");
  for (const BlockRig::Block& b : rig.blocks) {
    const std::string problem = block_order_problem(b.log, b.first, b.copies, b.timed, b.offset);
    check(problem.empty(), "a block's order: " + problem);
  }
  const BlockRig::Block& b = rig.blocks.at(1);
  std::vector<std::string> want = {"upload " + std::to_string(b.copies[0]), "hold " + std::to_string(b.first)};
  if (world > 1) want.push_back("barrier");
  for (size_t i = 0; i < b.copies.size(); ++i) {
    const std::string k = std::to_string(b.copies[i]), sq = std::to_string(b.first + i);
    if (i > 0) want.push_back("upload " + k);
    for (std::string e : {std::string("poison"), "record " + std::to_string(2 * i), "write " + sq, "wait " + sq,
                          "record " + std::to_string(2 * i + 1), "readback " + k, std::string("probe")})
      want.push_back(e);
  }
  check(b.timed && b.log == want, "the first timed block, operation by operation");
  check(!rig.blocks[0].timed && rig.blocks[0].copies.size() == 6 && rig.blocks[0].first == 1u + o.warmup,
        "the paper warm-up's chunk: one untimed block after the pkb warm-up's calls");
  // Each window is its own call's work plus go and done: the repetition's paper value is their mean over its block.
  if (rank == 0)
    for (int r = 0; r < o.max_reps; ++r) {
      const BlockRig::Block& t = rig.blocks.at(1 + r);
      double sum = 0;
      for (size_t i = 0; i < t.copies.size(); ++i)
        sum += BlockRig::work_us(t.first + i) + 2 * VirtualGateRuntime::kFlagUs;
      check(s.paper.values_us.at(r) == sum / t.copies.size(),
            "repetition " + std::to_string(r) + "'s paper value is its block's windows' mean: " +
                std::to_string(s.paper.values_us.at(r)) + ", want " + std::to_string(sum / t.copies.size()));
    }
  check(s.pkb.stats.min == 12 && s.pkb.stats.max == 32, "the pkb method's calls keep a gate each");

  // A block longer than a wake holds (block_calls_per_wake) is several wakes, each in the same order with its own hold,
  // the windows still each call's own: the paper values are the same as in one wake.
  BlockRig split(plan.copies, std::vector<char>(plan.copies, 1));
  split.calls_per_wake = 2;
  TimingStats s2 = split.time(plan, o);
  check(split.blocks.size() == 3 + 3 * static_cast<size_t>(o.max_reps), "wakes of 2, 2 and 2 (warm-up), 2, 2 and 1");
  for (const BlockRig::Block& w : split.blocks) {
    const std::string problem = block_order_problem(w.log, w.first, w.copies, w.timed, w.offset);
    check(problem.empty(), "a wake's order: " + problem);
  }
  if (rank == 0)
    for (int r = 0; r < o.max_reps; ++r) {
      double sum = 0;
      for (int w = 0; w < 3; ++w)
        for (size_t i = 0; i < split.blocks.at(3 + 3 * r + w).copies.size(); ++i)
          sum += BlockRig::work_us(split.blocks.at(3 + 3 * r + w).first + i) + 2 * VirtualGateRuntime::kFlagUs;
      check(s2.paper.values_us.at(r) == sum / o.paper_iters, "several wakes: each call's window its own");
    }
  // How many calls a wake holds: what the stream takes enqueued ahead of the wake, and the staging area's bytes.
  check(block_calls_per_wake(1 << 20, 2, 1) == static_cast<int>(kBlockOpsPerWake / 15), "2 inputs, 1 output");
  check(block_calls_per_wake(0, 0, 0) == static_cast<int>(kBlockOpsPerWake / 9), "nothing to move");
  check(block_calls_per_wake(kBlockBufferBytes / 3, 1, 1) == 3, "inputs of a third of the staging area: 3 calls");
  check(block_calls_per_wake(kBlockBufferBytes * 2, 1, 1) == 1 && block_calls_per_wake(64, 500, 1) == 1,
        "at least one call a wake");

  // The rules refuse a broken order: call i + 1's inputs uploaded before call i's done (brackets built wrong), and
  // logs with the next call's inputs, a readback or a window's mark moved.
  BlockRig bad(plan.copies, std::vector<char>(plan.copies, 1));
  bad.broken = true;
  bad.time(plan, o);
  for (const BlockRig::Block& x : bad.blocks)
    check(block_order_problem(x.log, x.first, x.copies, x.timed).find("before the call ahead wrote done") !=
              std::string::npos,
          "inputs uploaded before the call ahead wrote done are refused");
  auto moved = [&](const std::string& what, int by) {
    std::vector<std::string> log = want;
    auto at = std::find(log.begin(), log.end(), what);
    std::rotate(by < 0 ? at + by : at, by < 0 ? at : at + 1, by < 0 ? at + 1 : at + 1 + by);
    return block_order_problem(log, b.first, b.copies, true);
  };
  check(!moved("upload " + std::to_string(b.copies[1]), -4).empty(), "the next call's inputs before done: refused");
  check(!moved("readback " + std::to_string(b.copies[0]), 3).empty(),
        "a readback after the next call's poison: refused");
  check(!moved("record 2", -1).empty(), "a window that holds the poison: refused");
  check(!moved("wait " + std::to_string(b.first + 1), 1).empty(), "a window that ends before done: refused");
  std::vector<std::string> no_probe = want;
  no_probe.erase(std::find(no_probe.begin(), no_probe.end(), "probe"));
  check(!block_order_problem(no_probe, b.first, b.copies, true).empty(), "a timed call without its probe: refused");
  check(moved("readback " + std::to_string(b.copies[0]), 0).empty(), "the spelled-out order passes the rules");
}

// Any call of a block may be the checked one: over many timings, with the checked copies drawn as the reference pass
// draws them (CopyPlan::checked_copy) and each call's capture drawn by the monitor (CaptureDraw), every position of a
// paper-method block is some copy's kept call, where each timed call has a copy of its own and where calls revisit the
// warm-up copies (the reservoir then picks among all of a copy's calls).
void block_draw_checks() {
  using namespace pkb;
  const TimingOptions o = block_options();
  const CopyPlan fresh = copy_plan(3 + o.max_timed_calls() + kEscapeProbeCalls, 3, o), revisits{3, 3};
  std::mt19937_64 pick(7 + rank);
  for (const auto& [name, plan] : {std::pair{"fresh copies", fresh}, std::pair{"revisits", revisits}}) {
    std::vector<int> kept(o.paper_iters, 0);
    for (int t = 0; t < 60; ++t) {
      std::vector<char> checked(plan.copies, 0);
      for (int i = 0; i < o.max_reps + 3; ++i) checked[plan.checked_copy(i, pick(), o)] = 1;
      BlockRig rig(plan.copies, checked, pick());
      rig.time(plan, o);
      for (int k = 0; k < plan.copies; ++k)
        if (checked[k] && rig.kept_position[k] >= 0) ++kept[rig.kept_position[k]];
    }
    std::string counts;
    for (int c : kept) counts += " " + std::to_string(c);
    check(std::find(kept.begin(), kept.end(), 0) == kept.end(),
          std::string(name) + ": every position of a block is sometimes the checked call; kept per position:" + counts);
  }
}

// Where memory holds fewer copies than calls: a memoizer (calls on contents it met before take 100 us, others 1000 us)
// shows in the fresh and repeated calls' statistics, and an honest kernel whose first repetition a burst of load
// stretches tenfold does not: the plan spreads the fresh calls over every repetition, so the burst covers a quarter of
// each kind (while fresh calls were the first ordinals, it covered every one of them).
void repeat_checks(VirtualClockRuntime& rt) {
  using namespace pkb;
  TimingOptions o;
  o.warmup = 2, o.iters = 10, o.paper_warmup = 4, o.paper_iters = 10, o.min_reps = 4, o.max_reps = 4;
  o.device_iters = 0, o.budget_s = 60;
  const CopyPlan plan = copy_plan(3 + 12, 3, o);  // 12 fresh copies for 85 calls, 40 of them the pkb blocks'
  std::set<int> met;
  TimingStats memo = time_iterations(
      rt, plan, [&](int k) { rt.now_us += met.insert(k).second ? 1000 : 100; }, o);
  bool burst = false;
  TimingHooks hooks;
  hooks.before_calls = [&](int first, int) { burst = first < o.calls_per_rep(); };  // the first repetition's calls
  TimingStats honest = time_iterations(
      rt, plan, [&](int) { rt.now_us += burst ? 1000 : 100; }, o, &hooks);
  if (rank != 0) return;
  check(memo.fresh.n == 12 && memo.repeated.n == 28 && memo.repeated_content_iters == 28,
        "the pkb blocks' 40 calls: 12 on fresh contents, 28 on repeated ones, got " + std::to_string(memo.fresh.n) +
            " and " + std::to_string(memo.repeated.n));
  check(memo.fresh.ci_low == 1000 && memo.repeated.ci_high == 100,
        "a memoizer: every fresh call slow, every repeated one fast");
  check(
      honest.fresh.n == 12 && honest.fresh.median == 100 && honest.repeated.median == 100 && honest.fresh.ci_low == 100,
      "a burst over the first repetition stretches fresh and repeated calls alike: fresh median " +
          std::to_string(honest.fresh.median) + ", repeated " + std::to_string(honest.repeated.median));
  auto j = memo.to_json();
  check(j["fresh_median_us"] == 1000.0 && j["repeated_median_us"] == 100.0 && j["fresh_iters"] == 12 &&
            j["fresh_ci95_low_us"] == 1000.0 && j["repeated_ci95_high_us"] == 100.0,
        "the record carries both kinds' medians and intervals");
}

int main(int argc, char** argv) {
  using namespace pkb;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (argc > 1 && std::string(argv[1]) == "--cuda") {
    cuda_checks();
    cuda_draw_checks();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("timing_mpi_test --cuda: %s\n", total ? "FAILED" : "all checks passed");
    MPI_Finalize();
    return total ? 1 : 0;
  }
  long tag = static_cast<long>(getpid());
  MPI_Bcast(&tag, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  gate_checks();
  block_order_checks();
  block_draw_checks();
  if (world == 1) {
    candidate_checks(TimingOptions{});  // the rest needs two ranks
  } else {
    auto rt = std::make_unique<VirtualClockRuntime>();
    TimingOptions o;
    o.warmup = 2, o.iters = 10, o.paper_warmup = 4, o.paper_iters = 10, o.min_reps = 2, o.max_reps = 3;
    o.device_iters = 4;  // CPU ranks make the device view's calls untimed: ordinals and copies like a GPU's
    o.budget_s = 60;
    CopyPlan plan{3 + o.max_timed_calls() + kEscapeProbeCalls, 3};

    // The pkb method's per-call values alternate (the slowest rank's 300/500), so its median's interval stays
    // wide: the repetitions run to max_reps. The paper value (rank 1's mean, 400) is the maximum over ranks.
    Run a = timed_run(*rt, plan, o);
    if (rank == 0) {
      const TimingStats& s = a.stats;
      check(s.reps == 3 && s.stopped_by == "max_reps",
            "expected 3 repetitions stopped by max_reps, got " + std::to_string(s.reps) + " " + s.stopped_by);
      check(s.pkb.values_us.size() == 30, "pkb: 10 calls x 3 repetitions");
      check(s.paper.values_us.size() == 3, "paper: one value per repetition");
      check(s.pkb.stats.min == 300 && s.pkb.stats.max == 500 && s.pkb.stats.median == 400,
            "pkb takes the slowest rank per call: " + std::to_string(s.pkb.stats.min) + ".." +
                std::to_string(s.pkb.stats.max));
      for (double v : s.paper.values_us)
        check(v == 400, "paper: max over ranks of the per-rank mean is 400 us, got " + std::to_string(v));
      check(s.pkb.stats.ci_half_rel() > o.ci_target, "pkb's CI is wide for alternating calls");
      check(!s.stream_escape && !s.throttled, "no escape or throttling on CPU ranks");
      check(s.clocks["available"] == false, "clocks unavailable on CPU ranks");
    }
    // Hooks: warm-ups on the warm-up copies, each timed call on its own fresh copy, ordinals laid out per
    // repetition (pkb block's first, then the paper block's, then the device view's), and the probe after them, on
    // fresh copies too.
    check(a.before_copies.size() == static_cast<size_t>(o.warmup_calls() + 3 * o.calls_per_rep() + kEscapeProbeCalls),
          "before() runs for every call");
    for (int i = 0; i < o.warmup_calls(); ++i) check(a.before_copies[i] < 3, "warm-up call on a warm-up copy");
    std::set<int> seen;
    for (auto [j, k] : a.timed) {
      check(k == plan.timed_copy(j), "timed call uses its ordinal's copy");
      check(seen.insert(k).second, "no copy serves two timed calls");
    }
    check(a.timed.size() == 3 * (10 + 10 + 4), "every timed call of every block reported, the device view's too");
    for (size_t i = 0; i < a.timed.size(); ++i) {
      // Per repetition: pkb's 10 ordinals, paper's 10, the device view's 4; odd repetitions run paper's block first.
      const int rep = static_cast<int>(i) / o.calls_per_rep(), at = static_cast<int>(i) % o.calls_per_rep();
      const int want = rep * o.calls_per_rep() + (rep % 2 && at < 20 ? (at + 10) % 20 : at);
      check(a.timed[i].first == want, "ordinal " + std::to_string(a.timed[i].first) + " at position " +
                                          std::to_string(i) + ", want " + std::to_string(want));
    }
    for (size_t i = o.warmup_calls() + a.timed.size(); i < a.before_copies.size(); ++i)
      check(!seen.count(a.before_copies[i]) && a.before_copies[i] >= 3, "probe calls on fresh copies");

    // A loose target is met after min_reps; a spent budget stops after one repetition.
    o.ci_target = 0.9;
    Run b = timed_run(*rt, plan, o);
    if (rank == 0) check(b.stats.reps == 2 && b.stats.stopped_by == "ci_target", "loose target: stops at min_reps");
    o.ci_target = 0.01, o.budget_s = 1e-6;
    Run c = timed_run(*rt, plan, o);
    check(c.stats.reps == 1, "every rank stops when rank 0's budget is spent");
    if (rank == 0) check(c.stats.stopped_by == "budget", "stopped_by budget");
    auto j = c.stats.to_json();
    if (rank == 0)
      check(j.contains("median_us") && j["paper"].contains("median_us") && j.contains("iqr_us") && j["reps"] == 1,
            "record fields: pkb at the top level, paper beneath");

    // A pause before every repetition after the first, then the pkb warm-up again on the warm-up copies; the
    // host probe is sampled before every repetition.
    o.budget_s = 60, o.ci_target = 0.01, o.rep_gap_ms = 20;
    auto w0 = std::chrono::steady_clock::now();
    Run g = timed_run(*rt, plan, o);
    double gap_wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    check(gap_wall_ms >= 2 * 20, "two pauses of 20 ms between three repetitions: " + std::to_string(gap_wall_ms));
    check(g.before_copies.size() ==
              static_cast<size_t>(o.warmup_calls() + 2 * o.warmup + 3 * o.calls_per_rep() + kEscapeProbeCalls),
          "every pause is followed by the pkb warm-up");
    size_t first_rep_end = o.warmup_calls() + o.calls_per_rep();
    for (size_t i = first_rep_end; i < first_rep_end + o.warmup; ++i)
      check(g.before_copies[i] < 3, "the warm-up after a pause uses warm-up copies");
    if (rank == 0) {
      check(g.stats.host_probe_us.size() == 3, "one host probe per repetition");
      for (double p : g.stats.host_probe_us) check(p > 0 && p < 1e6, "host probe in µs: " + std::to_string(p));
      check(g.stats.to_json()["host_probe_us"].size() == 3, "the record carries the probes");
      check(g.stats.host_chase_probe_us.size() == 3, "one chase probe per repetition");
      for (double p : g.stats.host_chase_probe_us) check(p > 0 && p < 1e6, "chase probe in µs: " + std::to_string(p));
      check(g.stats.to_json()["host_chase_probe_us"].size() == 3, "the record carries the chase probes");
    }
    o.rep_gap_ms = 0;

    // The device view: absent where nothing can be queued (CPU ranks), and on the virtual CPU runtime above.
    check(!a.stats.to_json().contains("device"), "no device view on CPU ranks");

    // On the virtual GPU: 20 launches per call, each 5 µs of host time (rank 1: 8 µs) and 1 µs of device time.
    // pkb sees the slowest rank's dispatch (20 x 8 = 160 µs: the previous call's last launch ends 1 µs after the host
    // issued it, so this call's start mark is 1 µs late); the device view sees the GPU's 20 µs on every call: the
    // hold is sized per rank from its warm-up's slowest issue (rank 0: 100 µs, a 250 µs hold), and no call is unheld.
    {
      VirtualGpuRuntime gpu;
      TimingOptions v = o;
      v.device_iters = 8, v.max_reps = 2, v.min_reps = 2, v.rep_gap_ms = 0, v.budget_s = 60;
      const double host_cost = rank == 0 ? 5 : 8;
      auto launches = [&](int) {
        for (int i = 0; i < 20; ++i) gpu.launch(host_cost, 1);
      };
      TimingStats d = time_iterations(gpu, CopyPlan{3, 3}, launches, v);
      if (rank == 0) {
        check(d.pkb.stats.median == 160,
              "virtual GPU, pkb: dispatch-bound 160 us, got " + std::to_string(d.pkb.stats.median));
        check(d.device.calls == 16 && d.device.unheld == 0 && d.device.method.values_us.size() == 16,
              "device view: 8 calls x 2 repetitions, all held; unheld " + std::to_string(d.device.unheld));
        check(d.device.method.stats.min == 20 && d.device.method.stats.max == 20,
              "device view: the GPU's 20 us, got " + std::to_string(d.device.method.stats.median));
        check(d.device.hold_us == initial_hold_us(100),
              "rank 0's hold from its warm-up's issue: " + std::to_string(d.device.hold_us));
        auto j = d.to_json();
        check(j["device"]["median_us"] == 20.0 && j["device"]["unheld"] == 0 && j["device"]["call_us"].size() == 16,
              "the record's device view");
      }
      // Only the last rank's holds find the GPU busy, from its third on: a call takes its ranks' worst kind and the
      // largest start spread of any rank, so rank 0 counts 2 calls and 14 busy ones.
      if (rank == world - 1) gpu.busy_from = gpu.holds_made() + 2;
      TimingStats b = time_iterations(gpu, CopyPlan{3, 3}, launches, v);
      gpu.busy_from = size_t{1} << 30;
      if (rank == 0) {
        check(b.device.method.values_us.size() == 2 && b.device.busy == 14 &&
                  b.device.max_start_spread_us == 2 * kHoldBusySpreadUs,
              "one rank's busy holds make the calls busy: " + std::to_string(b.device.method.values_us.size()) +
                  " counted, " + std::to_string(b.device.busy) + " busy, spread " +
                  std::to_string(b.device.max_start_spread_us));
      }

      // A call that waits for its own work on the host (a .item(), a data-dependent shape) can never be held: every
      // call of the first block is unheld however the hold grows, the view stops after it and says why.
      auto waits = [&](int) {
        gpu.launch(host_cost, 1);
        gpu.synchronize();
        gpu.launch(host_cost, 1);
      };
      TimingStats w = time_iterations(gpu, CopyPlan{3, 3}, waits, v);
      if (rank == 0) {
        check(w.device.calls == 16 && w.device.unheld == 8 && !w.device.measured(),
              "a call that waits on the GPU: the first block's calls unheld, the second's untimed, got calls " +
                  std::to_string(w.device.calls) + ", unheld " + std::to_string(w.device.unheld));
        check(w.device.hold_us == kMaxHoldUs, "the hold grew to its cap");
        auto j = w.to_json();
        check(!j["device"].contains("median_us") &&
                  j["device"]["note"].get<std::string>().find("waits") != std::string::npos,
              "the record says why the device view measured nothing");
      }
      // A hold sized too short at first (a cold warm-up) grows: early calls are unheld, later ones held.
      v.warmup = 0;
      TimingStats g2 = time_iterations(gpu, CopyPlan{3, 3}, launches, v);
      if (rank == 0) {
        check(g2.device.unheld >= 1 && g2.device.method.values_us.size() >= 12 && g2.device.method.stats.max == 20,
              "a short first hold grows: unheld " + std::to_string(g2.device.unheld));
      }
    }
    candidate_checks(o);
    repeat_checks(*rt);

    // The real CPU runtime (shared-memory heap, MPI barrier, steady clock) with busy-waits: only lower bounds
    // hold on a loaded machine.
    auto cpu = make_cpu_runtime(MPI_COMM_WORLD, size_t{1} << 20, "timing-test-" + std::to_string(tag));
    o.budget_s = 60, o.max_reps = 2, o.min_reps = 2, o.paper_warmup = 2;
    TimingStats real = time_iterations(
        *cpu, plan, [&](int) { spin_us(rank == 0 ? 100 : 200); }, o);
    if (rank == 0) {
      check(real.pkb.stats.min >= 200, "real runtime, pkb: the slowest rank's 200 us at least");
      for (double v : real.paper.values_us) check(v >= 200, "real runtime, paper: rank 1's mean at least");
      check(real.reps == 2 && real.host_loop_us >= 2 * 20 * 200, "real runtime: two repetitions of 20 calls");
    }
  }
  int any = failures, total = 0;
  MPI_Allreduce(&any, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("timing_mpi_test: %s\n", total ? "FAILED" : "all checks passed");
  MPI_Finalize();
  return total ? 1 : 0;
}
