#include "worker/call_gate.h"

#include <algorithm>
#include <new>

#include "core/error.h"

namespace pkb {

CallGate::CallGate(Runtime& rt, void* segment, size_t segment_bytes, runner::GateHostFlags* host,
                   runner::GateDeviceFlags* device)
    : rt_(rt), host_(host), device_(device) {
  char* mapped = static_cast<char*>(rt.map_host_memory(segment, segment_bytes));
  auto device_address = [&](const void* p) {
    return reinterpret_cast<const uint32_t*>(mapped + (static_cast<const char*>(p) - static_cast<char*>(segment)));
  };
  armed_ = device_address(&host->armed);
  abort_ = device_address(&host->abort);
}

int block_calls_per_wake(size_t input_copy_bytes, int inputs, int outputs) {
  const size_t ops = 9 + 2 * static_cast<size_t>(inputs) + 2 * static_cast<size_t>(outputs);
  const size_t by_bytes = kBlockBufferBytes / std::max<size_t>(input_copy_bytes, 1);
  return static_cast<int>(std::clamp<size_t>(std::min(kBlockOpsPerWake / ops, by_bytes), 1, runner::kMaxBlockCalls));
}

void CallGate::open_block(uint32_t first_seq, const std::vector<CallBracket>& brackets) {
  if (brackets.empty()) return;
  if (brackets[0].inputs) brackets[0].inputs();
  rt_.gate_hold(armed_, first_seq, kGateMaxUs);
  // Every rank's window starts once every rank's runner is armed: one woken late would otherwise hold its peers'
  // calls (waiting for it in the candidate's barrier) inside their windows.
  if (rt_.world() > 1) rt_.barrier();
  for (size_t i = 0; i < brackets.size(); ++i) {
    const CallBracket& b = brackets[i];
    const uint32_t seq = first_seq + static_cast<uint32_t>(i);
    // A later call's inputs only once the call ahead of it wrote done and its outputs were read back.
    if (i > 0 && b.inputs) b.inputs();
    if (b.prepare) b.prepare();
    if (b.start_timer >= 0) rt_.record(b.start_timer);
    rt_.flag_write(&device_->go, seq);
    rt_.flag_wait(&device_->done, abort_, seq, kGateDoneWaitUs);
    if (b.start_timer >= 0) rt_.record(b.start_timer + 1);
    if (b.after_window) b.after_window();
  }
}

void CallGate::close(uint32_t seq) {
  host_->armed.store(seq, std::memory_order_release);  // a runner that died before arming: the hold ends now
  host_->abort.store(seq, std::memory_order_release);
  rt_.flag_release(&device_->done, seq);
}

nlohmann::json CallGate::to_json() {
  const Runtime::GateTrace t = rt_.gate_trace();
  return {{"holds", t.holds},
          {"timeouts", t.timeouts},
          {"mean_wait_us", t.mean_wait_us},
          {"max_wait_us", t.max_wait_us},
          {"max_us", kGateMaxUs},
          {"flags", rt_.flag_mechanism()}};
}

namespace {

// Everything but the timers goes to `inner`; reports is_cuda() false (no device view, no escape probe, no holds).
class GatedView : public Runtime {
 public:
  explicit GatedView(Runtime& inner) : Runtime(MPI_COMM_WORLD), in_(inner) {}
  bool is_cuda() const override { return false; }
  int device() const override { return in_.device(); }
  void* stream() const override { return in_.stream(); }
  void copy(void* dst, const void* src, size_t bytes) override { in_.copy(dst, src, bytes); }
  void fill(void* dst, uint8_t byte, size_t bytes) override { in_.fill(dst, byte, bytes); }
  void copy_async(void* dst, const void* src, size_t bytes) override { in_.copy_async(dst, src, bytes); }
  void draw(void* dst, const ElementDraw& d, int64_t n) override { in_.draw(dst, d, n); }
  bool same_bytes(const void* a, const void* b, size_t bytes) override { return in_.same_bytes(a, b, bytes); }
  void* private_alloc(size_t bytes) override { return in_.private_alloc(bytes); }
  std::string synchronize() override { return in_.synchronize(); }
  std::string stream_synchronize() override { return in_.stream_synchronize(); }
  void timers_reserve(int n) override { in_.timers_reserve(n); }
  double elapsed_ms(int i, int j) override { return in_.elapsed_ms(i, j); }
  bool reached(int) override { return true; }
  void hold(double, int) override {}
  void* const* heap_bases_device() const override { return in_.heap_bases_device(); }
  void barrier() override { in_.barrier(); }

 protected:
  Runtime& in_;
};

class CandidateWindowView final : public GatedView {
 public:
  CandidateWindowView(Runtime& inner, int& next_window) : GatedView(inner), next_(next_window) {}
  void record(int i) override {
    if (i % 2 == 0) next_ = i;  // the gate records i and i + 1 with the next call
  }

 private:
  int& next_;
};

// The baseline's calls as a runner's are made: a CallGate on `monitor` (a stream of this process's own) enqueues the
// monitor's part, and the baseline's stream plays the runner's.
class BaselineWindowView final : public GatedView {
 public:
  // `owned`: the monitor's runtime where the view made it (gated_baseline_view(baseline)), else null.
  BaselineWindowView(Runtime& monitor, Runtime& baseline, std::unique_ptr<Runtime> owned = nullptr)
      : GatedView(monitor), owned_(std::move(owned)), baseline_(baseline) {
    // A page of its own, registered with the runtime until the runtime goes (so never freed here: a page a timing).
    constexpr size_t kPage = 4096;
    page_ = new (new (std::align_val_t{kPage}) char[kPage]) runner::GateHostFlags{};
    flags_ = static_cast<runner::GateDeviceFlags*>(monitor.private_alloc(sizeof(runner::GateDeviceFlags)));
    monitor.fill(flags_, 0, sizeof(runner::GateDeviceFlags));
    if (std::string err = monitor.stream_synchronize(); !err.empty()) throw Error("the baselines' gate: " + err);
    gate_ = std::make_unique<CallGate>(monitor, page_, kPage, page_, flags_);
  }
  // record(2i): the gate and window of the call (the monitor's part), the runner's wait for go, then "armed" (the
  // monitor issues the call at once, as a woken runner does); record(2i + 1): the runner's done after its work.
  void record(int i) override {
    if (i % 2 == 0) {
      gate_->open(++seq_, CallBracket{.start_timer = i});
      baseline_.flag_wait(&flags_->go, nullptr, seq_, kGateDoneWaitUs);
      page_->armed.store(seq_, std::memory_order_release);
    } else {
      baseline_.flag_write(&flags_->done, seq_);
    }
  }

 private:
  std::unique_ptr<Runtime> owned_;
  Runtime& baseline_;
  runner::GateHostFlags* page_ = nullptr;
  runner::GateDeviceFlags* flags_ = nullptr;
  std::unique_ptr<CallGate> gate_;
  uint32_t seq_ = 0;
};

}  // namespace

std::unique_ptr<Runtime> gated_window_view(Runtime& inner, int& next_window) {
  return std::make_unique<CandidateWindowView>(inner, next_window);
}

std::unique_ptr<Runtime> gated_baseline_view(Runtime& monitor, Runtime& baseline) {
  return std::make_unique<BaselineWindowView>(monitor, baseline);
}

std::unique_ptr<Runtime> gated_baseline_view(Runtime& baseline) {
  std::unique_ptr<Runtime> monitor = make_cuda_runtime(MPI_COMM_WORLD, size_t{1} << 20);
  Runtime& m = *monitor;
  return std::make_unique<BaselineWindowView>(m, baseline, std::move(monitor));
}

}  // namespace pkb
