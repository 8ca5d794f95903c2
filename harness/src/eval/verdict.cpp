// What a result record says, read by pure functions of the driver's own records (pkb.result/1, docs/result-record.md;
// declared in eval/evaluate.h): a candidate time below the roofline floor, times that measure contention, and the
// verdict as one readable text. No rank record is read here.
#include <cstdio>
#include <sstream>

#include "eval/evaluate.h"
#include "launch/jobs.h"
#include "protocol/instruments.h"

namespace pkb {

using json = nlohmann::json;

json below_roofline(const json& roofline, const json& by_method) {
  const double floor = roofline.is_object() ? roofline.value("floor_us", 0.0) : 0.0;
  if (floor <= 0 || !by_method.is_object()) return nullptr;
  json methods = json::object();
  for (const auto& [m, x] : by_method.items()) {
    const double us = x.is_object() ? x.value("candidate_us", 0.0) : 0.0;
    if (us > 0 && us * kBelowRooflineFactor < floor) methods[m] = us;  // 0: no time claimed (repeat_faster)
  }
  if (methods.empty()) return nullptr;
  return {{"floor_us", floor},
          {"factor", kBelowRooflineFactor},
          {"bound", roofline.value("bound", "")},
          {"methods", methods}};
}

std::string contention_reason(const json& record) {
  if (const auto s = record.find("gpu_sharing"); s != record.end() && s->is_object())
    return s->value("note", std::string("ranks shared a GPU"));
  if (const auto m = record.find("runner_mps"); m != record.end() && m->is_string())
    return "the candidate's runner ran without MPS, its CUDA context taking turns with its monitor's: " +
           m->get<std::string>();
  return "";
}

std::string format_verdict(const json& r) {
  std::ostringstream s;
  s << r["problem"]["folder"].get<std::string>() << " W=" << r["world"] << " " << r["device"].get<std::string>() << " "
    << r["dtype"].get<std::string>() << ": " << r["status"].get<std::string>() << "\n";
  s << "  " << r.value("message", "") << "\n";
  if (r.contains("failure") && r["failure"].contains("stderr_tail")) {
    std::string tail = r["failure"]["stderr_tail"];
    if (tail.size() > kMessageTailBytes) tail = tail.substr(tail.size() - kMessageTailBytes);
    s << "  stderr (tail):\n" << tail << "\n";
  }
  if (r.contains("checks"))
    s << "  checks: robust " << (r["checks"]["robust_pass"].get<bool>() ? "pass" : "FAIL") << ", pkb (allclose 1e-2) "
      << (r["checks"]["pkb_pass"].get<bool>() ? "pass" : "FAIL") << "\n";
  if (r.contains("timing")) {
    const json& t = r["timing"];
    auto us = [](const json& x) { return x.is_object() ? x.value("median_us", 0.0) : 0.0; };
    char buf[512];
    auto cv = [](const json& x) { return x.is_object() ? 100 * x.value("cv", 0.0) : 0.0; };
    std::snprintf(buf, sizeof buf, "  median time: candidate %.1f us (cv %.1f%%)", us(t["candidate"]),
                  cv(t["candidate"]));
    s << buf;
    if (us(t["baseline_pytorch_eager"]) > 0) {
      std::snprintf(buf, sizeof buf, ", PyTorch eager %.1f us", us(t["baseline_pytorch_eager"]));
      s << buf;
    }
    // A speedup the record leaves null (a method that measured nothing, or a time below the roofline) is "none",
    // never a 0.00x that reads as a measured slowdown.
    auto speedup = [](const json& x) {
      char text[32] = "none";
      if (x.is_object() && x.contains("speedup") && x["speedup"].is_number())
        std::snprintf(text, sizeof text, "%.2fx", x["speedup"].get<double>());
      return std::string(text);
    };
    std::snprintf(buf, sizeof buf, ", libtorch reference %.1f us\n  speedup: %s vs %s (%s timing)%s%s\n",
                  us(t["baseline_libtorch_nccl"]), speedup(t).c_str(), t.value("baseline", "").c_str(),
                  t.value("method", "pkb").c_str(), t.value("stream_escape", false) ? " [stream escape flagged]" : "",
                  t.value("throttled", false) ? " [GPU throttled]" : "");
    s << buf;
    if (t.value("host_drift", false)) {
      std::snprintf(buf, sizeof buf,
                    "  [host drift: the candidate's host probe ran %.2fx the baseline's; the speedup carries it]\n",
                    t.value("host_speed_ratio", 0.0));
      s << buf;
    }
    // The two sides' instruments differ (a GPU runner's call gate against eager's own events): say which way.
    if (t.contains("instrument_note") && t["instrument_note"].is_string())
      s << "  note: " << t["instrument_note"].get<std::string>() << "\n";
    if (t.contains("by_method") && t["by_method"].is_object())
      for (const auto& [m, x] : t["by_method"].items()) {
        std::snprintf(buf, sizeof buf, "  %-5s method: candidate %.1f us, speedup %s\n", m.c_str(),
                      x.value("candidate_us", 0.0), speedup(x).c_str());
        s << buf;
      }
  }
  return s.str();
}

nlohmann::json timing_instruments(const EvalOptions& o, const char* eager_instrument) {
  nlohmann::json inst = {
      {"candidate", protocol::candidate_instrument(o.device, o.uses_runner(), protocol::gate_in_process_requested())},
      {"baseline_libtorch_nccl", protocol::libtorch_baseline_instrument(o.device, o.uses_runner())}};
  if (eager_instrument) inst["baseline_pytorch_eager"] = eager_instrument;
  return inst;
}

}  // namespace pkb
