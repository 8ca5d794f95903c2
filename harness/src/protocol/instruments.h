// The names of the instruments that time each side of a speedup, as records spell them (`timing.instruments` in an
// evaluation's record and in validate's): one place, so that validate and an evaluation name the same instrument alike.
#pragma once

#include "core/device_kind.h"

namespace pkb::protocol {

// `gated`: the side is timed behind pkb's monitor (an evaluation with the candidate in a runner, or pkb validate
// --through-gate; on CPU ranks validate always times through the doorbell).
// events: its own events in its own process; call_gate: the monitor's device events across the call gate (GPUs);
// doorbell: the monitor's host clock around the runner's wake (CPU ranks).
constexpr const char* candidate_instrument(DeviceKind device, bool gated) {
  return !gated ? "events" : device == DeviceKind::cuda ? "call_gate" : "doorbell";
}
// The libtorch+NCCL baseline: through the gate it plays the runner on a second stream of its own process.
constexpr const char* libtorch_baseline_instrument(DeviceKind device, bool gated) {
  return !gated ? "events" : device == DeviceKind::cuda ? "call_gate_one_process" : "doorbell";
}
// reference.py times itself by its own events (ParallelKernelBench's instrument), whatever the candidate's.
constexpr const char* eager_baseline_instrument() { return "events"; }

}  // namespace pkb::protocol
