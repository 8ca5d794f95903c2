// ClockMonitor: GPU clocks and throttle reasons through NVML. libnvidia-ml ships with the driver, so it is
// loaded at run time (dlopen): builds and CPU runs need nothing, and a node without it records "unavailable".
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>

#include "worker/timing.h"

namespace pkb {

namespace {
using NvmlDevice = void*;
using InitFn = int (*)();
using HandleFn = int (*)(const char*, NvmlDevice*);
using ClockFn = int (*)(NvmlDevice, int, unsigned*);
using ReasonsFn = int (*)(NvmlDevice, unsigned long long*);
using UintFn = int (*)(NvmlDevice, unsigned*);
using TempFn = int (*)(NvmlDevice, int, unsigned*);
constexpr int kClockSm = 1, kClockMem = 2, kTempGpu = 0;

const char* const kReasonNames[] = {"gpu_idle",
                                    "applications_clocks_setting",
                                    "sw_power_cap",
                                    "hw_slowdown",
                                    "sync_boost",
                                    "sw_thermal_slowdown",
                                    "hw_thermal_slowdown",
                                    "hw_power_brake_slowdown",
                                    "display_clock_setting"};

template <class F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}
}  // namespace

struct ClockMonitor::Impl {
  void* lib = nullptr;
  NvmlDevice dev = nullptr;
  ClockFn clock = nullptr;
  ReasonsFn reasons = nullptr;
  UintFn power = nullptr;
  TempFn temp = nullptr;
  InitFn shutdown = nullptr;
};

std::vector<std::string> throttle_reason_names(unsigned long long reasons) {
  std::vector<std::string> names;
  for (int b = 0; b < 9; ++b)
    if ((reasons >> b) & 1 && ((1ull << b) & kThrottleMask)) names.push_back(kReasonNames[b]);
  return names;
}

ClockMonitor::ClockMonitor(int cuda_device) {
  if (cuda_device < 0) {
    note_ = "unavailable: CPU ranks";
    return;
  }
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    note_ = "unavailable: libnvidia-ml.so.1 not loadable";
    return;
  }
  auto init = sym<InitFn>(lib, "nvmlInit_v2");
  auto by_bus = sym<HandleFn>(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  char bus[32] = {0};
  NvmlDevice dev = nullptr;
  if (!init || !by_bus || init() != 0) {
    note_ = "unavailable: nvmlInit failed";
    dlclose(lib);
    return;
  }
  // By PCI bus id: NVML numbers every GPU of the node, CUDA only the visible ones.
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess || by_bus(bus, &dev) != 0) {
    note_ = "unavailable: NVML does not know this rank's GPU";
    if (auto off = sym<InitFn>(lib, "nvmlShutdown")) off();
    dlclose(lib);
    return;
  }
  impl_ = new Impl{lib,
                   dev,
                   sym<ClockFn>(lib, "nvmlDeviceGetClockInfo"),
                   sym<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksEventReasons"),
                   sym<UintFn>(lib, "nvmlDeviceGetPowerUsage"),
                   sym<TempFn>(lib, "nvmlDeviceGetTemperature"),
                   sym<InitFn>(lib, "nvmlShutdown")};
  if (!impl_->reasons) impl_->reasons = sym<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
}

ClockMonitor::~ClockMonitor() {
  if (!impl_) return;
  if (impl_->shutdown) impl_->shutdown();
  dlclose(impl_->lib);
  delete impl_;
}

void ClockMonitor::sample(int rep, const char* when) {
  if (!impl_) return;
  nlohmann::json s = {{"rep", rep}, {"when", when}};
  unsigned v = 0;
  if (impl_->clock && impl_->clock(impl_->dev, kClockSm, &v) == 0) s["sm_mhz"] = v;
  if (impl_->clock && impl_->clock(impl_->dev, kClockMem, &v) == 0) s["mem_mhz"] = v;
  if (impl_->temp && impl_->temp(impl_->dev, kTempGpu, &v) == 0) s["temp_c"] = v;
  if (impl_->power && impl_->power(impl_->dev, &v) == 0) s["power_w"] = v / 1000.0;
  unsigned long long r = 0;
  if (impl_->reasons && impl_->reasons(impl_->dev, &r) == 0) {
    char hex[24];
    std::snprintf(hex, sizeof hex, "0x%llx", r);
    s["reasons"] = hex;
    if (r & kThrottleMask) throttled_ = true, reasons_seen_ |= r & kThrottleMask;
  }
  samples_.push_back(s);
}

nlohmann::json ClockMonitor::to_json() const {
  if (!impl_) return {{"available", false}, {"note", note_}};
  return {{"available", true},
          {"throttled", throttled_},
          {"throttle_reasons", throttle_reason_names(reasons_seen_)},
          {"samples", samples_}};
}

}  // namespace pkb
