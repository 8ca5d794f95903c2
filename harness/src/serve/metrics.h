// GET /metrics: the service in Prometheus' text format (version 0.0.4): queue depth and evaluations by state
// (gauges), finished evaluations by outcome (a counter: rate() gives evaluations per second by status), the slots'
// busy fraction since start (GPU slots on GPUs), and p50/p99 of the time in queue and in evaluation over the last
// 1000 evaluations this process finished (summaries).
#pragma once

#include <string>

#include "serve/slots.h"
#include "serve/store.h"

namespace pkb::serve {

std::string metrics_text(Store& store, const Slots& slots);

// The q-quantile (0..1) of `values` by nearest rank; 0 for none.
double quantile(std::vector<double> values, double q);

}  // namespace pkb::serve
