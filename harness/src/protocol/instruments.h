// The names of the instruments that time each side of a speedup, as records spell them (`timing.instruments` in an
// evaluation's record and in validate's): one place, so that validate and an evaluation name the same instrument alike.
#pragma once

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "core/device_kind.h"

namespace pkb::protocol {

// A measurement's switch in the environment: on exactly when set to "1".
inline bool switched_on(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;
}

// PKB_GATE_IN_PROCESS=1, a measurement (scripts/gpu_check.sh's gate step; launch/mpirun.cpp passes it to the ranks): a
// GPU candidate in process is timed through the gate's flags on two streams of its own process, as the libtorch
// baseline's gated view is, so that the toll of crossing MPS clients (a runner) shows apart from the flags'.
inline bool gate_in_process_requested() { return switched_on("PKB_GATE_IN_PROCESS"); }

// `gated`: the side is timed behind pkb's monitor (an evaluation with the candidate in a runner, or pkb validate
// --through-gate; on CPU ranks validate always times through the doorbell).
// events: its own events in its own process; call_gate: the monitor's device events across the call gate (GPUs);
// doorbell: the monitor's host clock around the runner's wake (CPU ranks).
// `in_process_gate`: gate_in_process_requested(), which applies to a GPU candidate in process only.
constexpr const char* candidate_instrument(DeviceKind device, bool gated, bool in_process_gate = false) {
  if (!gated) return device == DeviceKind::cuda && in_process_gate ? "call_gate_one_process" : "events";
  return device == DeviceKind::cuda ? "call_gate" : "doorbell";
}
// The libtorch+NCCL baseline: through the gate it plays the runner on a second stream of its own process.
constexpr const char* libtorch_baseline_instrument(DeviceKind device, bool gated) {
  return !gated ? "events" : device == DeviceKind::cuda ? "call_gate_one_process" : "doorbell";
}
// reference.py times itself by its own events (ParallelKernelBench's instrument) unless it is asked to time through the
// gate's flags (eager_gate_requested()): its timing names its instrument (run_reference.py), and a timing that names
// none was its own events.
inline std::string eager_baseline_instrument(const std::optional<std::string>& timing_names) {
  return timing_names.value_or("events");
}
// PKB_EAGER_GATE=1, a measurement (scripts/gpu_check.sh's eager_gate step): where the libtorch baseline is timed
// through the gate (a GPU candidate in a runner, validate --through-gate), reference.py's calls are too, through
// runtime/eager_gate.cu's one-process gate. Not the default: host-bound eager pays the flags' issue inside its window,
// ~10 us a call on an H100 against a candidate's 3.8 us, which would bias speedups upward
// (docs/design/runner-and-gate.md, the gate's toll).
inline bool eager_gate_requested() { return switched_on("PKB_EAGER_GATE"); }

}  // namespace pkb::protocol
