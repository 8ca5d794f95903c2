// Host-side data parallelism for pkb's own loops (input generation above all), on std::thread.
// Not at::parallel_for: its OpenMP loop is a header template, so in code built without -fopenmp (pkb's) it runs
// serially whatever at::set_num_threads says. Measured on the H200 node: 846 input copies of problem 1 took 24 s
// of an evaluation at single-thread speed.
#pragma once

#include <cstdint>
#include <functional>

namespace pkb {

// Threads parallel_ranges may use in this process (default: usable_cores()); at least 1.
void set_host_threads(int threads);
int host_threads();

// Calls body(begin, end) on disjoint chunks covering [0, n), each at least `grain` long except the last, on up
// to host_threads() threads (the caller's among them). A call made from inside a chunk runs serially, so nested
// loops never multiply the thread count. The first exception a chunk throws is rethrown after all chunks end.
void parallel_ranges(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace pkb
