// The GPU's clocks and throttle reasons around timed blocks (worker/clocks.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkb {

// GPU clocks and throttle reasons around timed blocks (NVML, loaded at run time; "unavailable" without it).
class ClockMonitor {
 public:
  explicit ClockMonitor(int cuda_device);  // -1: CPU ranks, always unavailable
  ~ClockMonitor();
  void sample(int rep, const char* when);
  bool throttled() const { return throttled_; }
  nlohmann::json to_json() const;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
  std::string note_;
  nlohmann::json samples_ = nlohmann::json::array();
  bool throttled_ = false;
  unsigned long long reasons_seen_ = 0;
};
// Names of the throttle-reason bits that count as throttling (power cap, thermal, hardware slowdown).
std::vector<std::string> throttle_reason_names(unsigned long long reasons);
constexpr unsigned long long kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

}  // namespace pkb
