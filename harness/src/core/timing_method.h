// The timing methods a record carries, named in one place: the rank programs measure them, the driver records
// them, the CLI offers them and scoring picks one (docs/design/timing.md).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/enum_names.h"

namespace pkb {

// barrier (named "pkb" in records and on the command line: pkb's own method): a cross-rank barrier before every call,
// slowest rank, median (the headline). paper: ParallelKernelBench's back-to-back calls, per-rank mean, maximum over
// ranks. device: GPU time behind a hold (GPUs at W = 1 only).
enum class TimingMethod { barrier, paper, device };
inline constexpr std::array<TimingMethod, 3> kTimingMethods = {TimingMethod::barrier, TimingMethod::paper,
                                                               TimingMethod::device};
template <>
struct EnumNames<TimingMethod> {
  static constexpr std::pair<TimingMethod, const char*> values[] = {
      {TimingMethod::barrier, "pkb"}, {TimingMethod::paper, "paper"}, {TimingMethod::device, "device"}};
};

inline const char* timing_method_name(TimingMethod m) { return enum_name(m); }
inline std::optional<TimingMethod> timing_method_from_name(std::string_view name) {
  return enum_from_name<TimingMethod>(name);
}
inline std::vector<std::string> timing_method_names() { return enum_names<TimingMethod>(); }

}  // namespace pkb
