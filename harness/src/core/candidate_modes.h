// How a candidate is hosted and fed during timing: chosen on the command line (`pkb eval`, `pkb run`), passed to the
// rank programs, recorded (docs/design/runner-and-gate.md, and docs/design/timing-checks.md, "Timing copies drawn
// where they are used").
#pragma once

#include <utility>

#include "core/enum_names.h"

namespace pkb {

// runner (and automatic): the candidate in pkb-runner, frozen between calls; on GPUs under MPS, its calls and the
// baselines' timed on the device through the call gate (worker/call_gate.h). in_process: a GPU candidate loaded into
// the rank program, timed by its events there (what pkb did before the runner; CPU ranks always use the runner).
enum class CandidateProcess { automatic, runner, in_process };
template <>
struct EnumNames<CandidateProcess> {
  static constexpr std::pair<CandidateProcess, const char*> values[] = {{CandidateProcess::automatic, "auto"},
                                                                        {CandidateProcess::runner, "runner"},
                                                                        {CandidateProcess::in_process, "in-process"}};
};
// Whether a candidate runs in pkb-runner (the one rule for EvalOptions and WorkerOptions).
inline bool candidate_in_runner(CandidateProcess p, bool cuda) { return !cuda || p != CandidateProcess::in_process; }

// on: the rank's runtime draws every timing copy into its slot (none made on the host); off: made on the host and
// copied in; automatic: the measured choice per device.
enum class DrawCopies { automatic, on, off };
template <>
struct EnumNames<DrawCopies> {
  static constexpr std::pair<DrawCopies, const char*> values[] = {
      {DrawCopies::automatic, "auto"}, {DrawCopies::on, "on"}, {DrawCopies::off, "off"}};
};

// When a correct candidate's baselines are timed again beside it (EvalOptions::retime_baseline).
enum class RetimePolicy { automatic, drift, always, never };
template <>
struct EnumNames<RetimePolicy> {
  static constexpr std::pair<RetimePolicy, const char*> values[] = {{RetimePolicy::automatic, "auto"},
                                                                    {RetimePolicy::drift, "drift"},
                                                                    {RetimePolicy::always, "always"},
                                                                    {RetimePolicy::never, "never"}};
};

}  // namespace pkb
