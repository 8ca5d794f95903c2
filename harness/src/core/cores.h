// How many cores this process may really use: the CPUs of its affinity mask, capped by a cgroup CPU quota.
// Containers often show every host CPU (hardware_concurrency, nproc) while a quota allows a few; sizing thread
// pools by the former oversubscribes the quota and stalls every thread (spin-waiting pools most of all).
#pragma once

#include <optional>
#include <string>

namespace pkb {

// Cores of a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD" for none), rounded up; nullopt when unlimited
// or unreadable.
std::optional<int> cores_from_cpu_max(const std::string& text);

// min(affinity CPUs, the process's cgroup quota), at least 1. Cached.
int usable_cores();

}  // namespace pkb
