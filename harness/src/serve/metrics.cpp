#include "serve/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace pkb::serve {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void summary(std::string& out, const char* name, const char* help, const std::vector<double>& values) {
  header(out, name, "summary", help);
  for (double q : {0.5, 0.99})
    out += std::string(name) + "{quantile=\"" + number(q) + "\"} " + number(quantile(values, q)) + "\n";
  out += std::string(name) + "_sum " + number(std::accumulate(values.begin(), values.end(), 0.0)) + "\n";
  out += std::string(name) + "_count " + std::to_string(values.size()) + "\n";
}

}  // namespace

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::string metrics_text(Store& store, const Slots& slots) {
  std::string out;
  const auto states = store.count_by_state();
  header(out, "pkb_serve_queue_depth", "gauge", "Evaluations waiting for a slot.");
  out += "pkb_serve_queue_depth " + std::to_string(states.at("queued")) + "\n";
  header(out, "pkb_serve_evaluations", "gauge", "Evaluations in the store by state.");
  for (const auto& [state, n] : states)
    out += "pkb_serve_evaluations{state=\"" + state + "\"} " + std::to_string(n) + "\n";
  header(out, "pkb_serve_evaluations_finished_total", "counter",
         "Finished evaluations by outcome: the record's status when done, else failed or cancelled.");
  for (const auto& [status, n] : store.done_by_status())
    out += "pkb_serve_evaluations_finished_total{status=\"" + status + "\"} " + std::to_string(n) + "\n";
  for (const char* s : {"failed", "cancelled"})
    out += std::string("pkb_serve_evaluations_finished_total{status=\"") + s + "\"} " + std::to_string(states.at(s)) +
           "\n";
  header(out, "pkb_serve_slots", "gauge", "Evaluation slots (GPU slots on GPUs, CPU slots on CPU ranks).");
  out += "pkb_serve_slots " + std::to_string(slots.count()) + "\n";
  header(out, "pkb_serve_busy_fraction", "gauge", "Fraction of slot time spent evaluating since the server started.");
  out += "pkb_serve_busy_fraction " + number(slots.busy_fraction()) + "\n";
  std::vector<double> queue_s, eval_s;
  for (const Latency& l : slots.recent()) queue_s.push_back(l.queue_s), eval_s.push_back(l.evaluation_s);
  summary(out, "pkb_serve_queue_seconds", "Time from submission to a slot (last 1000 evaluations).", queue_s);
  summary(out, "pkb_serve_evaluation_seconds", "Time in a slot (last 1000 evaluations).", eval_s);
  return out;
}

}  // namespace pkb::serve
