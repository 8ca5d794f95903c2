// Host-side parallelism for pkb's own loops, on std::thread: data-parallel chunks (input generation above all) and
// independent blocking tasks (compiles, GPU slots, model requests).
// Not at::parallel_for: its OpenMP loop is a header template, so in code built without -fopenmp (pkb's) it runs
// serially whatever at::set_num_threads says. Measured on the H200 node: 846 input copies of problem 1 took 24 s
// of an evaluation at single-thread speed.
#pragma once

#include <cstddef>
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

// Calls body(i) for every i in [0, n), in order of i, on min(n, workers) threads (the caller's among them): for
// tasks that wait (processes, GPUs, HTTP), so the count is the caller's and not host_threads(). Every item runs
// even when another throws; the first exception is rethrown once all have ended, so none ends pkb in
// std::terminate from a thread.
void parallel_for_each(size_t n, int workers, const std::function<void(size_t)>& body);

}  // namespace pkb
