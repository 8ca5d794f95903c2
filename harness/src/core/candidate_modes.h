// How a candidate is hosted and fed during timing: chosen on the command line (`pkb eval`, `pkb run`), passed to the
// rank programs, recorded (docs/architecture.md, "The verdict outside the candidate's process" and "Timing copies
// drawn where they are used").
#pragma once

#include <utility>

#include "core/enum_names.h"

namespace pkb {

// automatic: CPU ranks run the candidate in pkb-runner, frozen between calls; GPUs in the rank program. runner: GPUs
// too, their calls and the baselines' timed by the runner's host window.
enum class CandidateProcess { automatic, runner };
template <>
struct EnumNames<CandidateProcess> {
  static constexpr std::pair<CandidateProcess, const char*> values[] = {{CandidateProcess::automatic, "auto"},
                                                                        {CandidateProcess::runner, "runner"}};
};

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
