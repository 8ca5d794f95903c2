// The timing methods a record carries, named in one place: the rank programs measure them, the driver records
// them, the CLI offers them and scoring picks one (docs/architecture.md, "Timing").
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pkb {

// pkb: a cross-rank barrier before every call, slowest rank, median (the headline). paper: ParallelKernelBench's
// back-to-back calls, per-rank mean, maximum over ranks. device: GPU time behind a hold (GPUs at W = 1 only).
enum class TimingMethod { pkb, paper, device };
inline constexpr std::array<TimingMethod, 3> kTimingMethods = {TimingMethod::pkb, TimingMethod::paper,
                                                               TimingMethod::device};

inline const char* timing_method_name(TimingMethod m) {
  return m == TimingMethod::pkb ? "pkb" : m == TimingMethod::paper ? "paper" : "device";
}

inline std::optional<TimingMethod> timing_method_from_name(std::string_view name) {
  for (TimingMethod m : kTimingMethods)
    if (name == timing_method_name(m)) return m;
  return std::nullopt;
}

inline std::vector<std::string> timing_method_names() {
  std::vector<std::string> names;
  for (TimingMethod m : kTimingMethods) names.emplace_back(timing_method_name(m));
  return names;
}

}  // namespace pkb
