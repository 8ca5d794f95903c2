// The call gate: how a monitor times a GPU runner's calls on the device, with its own events, though the calls' work
// runs in another process's CUDA context (docs/design/runner-and-gate.md, "The call gate").
//
// Before it wakes the runner for call `seq`, the monitor enqueues on its stream:
//   hold     every SM taken until the runner is about to call (host flag `armed`), or kGateMaxUs passed: nothing of
//            the candidate's runs on an SM while its process wakes up
//   barrier  (W > 1) the monitors' device barrier: every rank's window starts once every runner is armed
//   poison   the outputs, so whatever anything wrote into them before the window is gone
//   start    the window's first event
//   go       a device flag the runner's stream waits on before the call's work
//   wait     until the runner's stream writes `done` after the call's work (or the monitor aborts the call)
//   end      the window's last event
//   after    the readback of the outputs (the capture, or scratch) and the post-window probe, at once
// The window thus holds the call's device work and none of the host's doorbell, like an event pair in process. A
// `done` written early ends the window early but leaves the work running: the readback right after it sees the
// outputs unfinished (poison), and the post-window hold finds the SMs busy. Every flag the runner can reach is a
// claim; the release of the hold's blocks and its trace live in memory only the monitor maps.
// A block (open_block: the paper method's back-to-back calls in one wake of the runner, runner::kRunBlock) has one
// hold and one barrier, then per call its inputs, poison, start, go, wait, end and after, in that order on the stream
// with no host between the calls: no call's inputs are in its slot before the call ahead of it wrote done and was
// read back, and each call's window holds its own go and done only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "runtime/runtime.h"
#include "worker/runner_protocol.h"

namespace pkb {

// How long the gate's hold waits for the runner to wake: a woken runner is armed within microseconds; one that takes
// longer has the rest of this inside its window. The free time a subverted runner can take before the window (its
// inputs are in place, its SMs are not) is bounded by it.
constexpr double kGateMaxUs = 200;
// How long the monitor's stream waits for `done` (an aborted call ends the wait at once).
constexpr double kGateDoneWaitUs = 600e6;

// What the monitor enqueues around one call besides the gate: the call's inputs into its slot (in a block: before the
// hold for the first call, right after the call ahead's `after_window` for the others; a single call's come before
// open), what comes right before the window (the outputs' poison), the window's timers (start_timer, start_timer + 1;
// -1: untimed) and what comes right after the window.
struct CallBracket {
  std::function<void()> inputs;
  std::function<void()> prepare;
  int start_timer = -1;
  std::function<void()> after_window;
};

// How many calls one wake of a GPU runner's block (CallGate::open_block, runner::kRunBlock) holds. The monitor enqueues
// all of a wake's work before it wakes the runner, and a CUDA stream takes about a thousand pending operations before
// the next launch blocks the host, which would then wait for a runner it has not woken: a wake enqueues at most
// kBlockOpsPerWake (a call's: each input's draw or copy and readback, the L2 flush, each output's poison and readback,
// two events, go, the wait for done with its event, the probe). Its copies' inputs fit kBlockBufferBytes (host-made
// copies wait in the monitor's device memory until the block moves them in), and it has at most runner::kMaxBlockCalls.
constexpr size_t kBlockOpsPerWake = 384, kBlockBufferBytes = size_t{1} << 30;
int block_calls_per_wake(size_t input_copy_bytes, int inputs, int outputs);

class CallGate {
 public:
  // host: this rank's GateHostFlags in the host segment `segment` (page-aligned, `segment_bytes`) that the runner maps
  // too; device: this rank's GateDeviceFlags in its heap.
  CallGate(Runtime& rt, void* segment, size_t segment_bytes, runner::GateHostFlags* host,
           runner::GateDeviceFlags* device);
  // Before the runner is woken for call `seq` (it is frozen): the gate with `bracket`'s work in it.
  void open(uint32_t seq, const CallBracket& bracket) { open_block(seq, {bracket}); }
  // Before the runner is woken for a block (runner::kRunBlock) of brackets.size() calls, numbered first_seq on: one
  // hold (until the runner arms first_seq), the barrier, then each call's bracket and flags in turn.
  void open_block(uint32_t first_seq, const std::vector<CallBracket>& brackets);
  // Once the runner has stopped (or died): nothing on the stream waits for call `seq`, or any call before it, any
  // more (every flag compares as "at or past").
  void close(uint32_t seq);
  nlohmann::json to_json();  // the holds' waits and timeouts (waits for the stream)

 private:
  Runtime& rt_;
  runner::GateHostFlags* host_;
  runner::GateDeviceFlags* device_;
  const uint32_t* armed_ = nullptr;  // the host flags' device addresses
  const uint32_t* abort_ = nullptr;
};

// The timing loop's view of gated calls: record(2i) names the timers of the next call's window, which the gate
// enqueues with the call (`next_window` holds it until the call takes it; record(2i + 1) does nothing); elapsed_ms,
// barriers and synchronizes are `inner`'s. It reports is_cuda() false: no device view (its holds are the gate's now)
// and no escape probe (the post-window probe stands in for it).
std::unique_ptr<Runtime> gated_window_view(Runtime& inner, int& next_window);

// The baselines timed under the same protocol: `monitor` (a runtime with a stream of its own) takes the monitor's
// part of each timed call's gate (hold, events, go, the wait for done) and `baseline` (the baseline's stream) the
// runner's (the wait for go before the call's work, done after it), so a baseline's window holds the same flag
// operations, on two streams, as a candidate's. Barriers are the monitor stream's.
std::unique_ptr<Runtime> gated_baseline_view(Runtime& monitor, Runtime& baseline);
// The same on a GPU, with a CUDA runtime of its own as the monitor (the view keeps it).
std::unique_ptr<Runtime> gated_baseline_view(Runtime& baseline);

}  // namespace pkb
