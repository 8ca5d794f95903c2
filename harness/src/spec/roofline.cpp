#include "spec/roofline.h"

#include <algorithm>

#include "spec/topology.h"

namespace pkb {

nlohmann::json roofline_floor(const ProblemSpec& spec, const RunShape& run, const std::string& topology_name) {
  Topology topo = find_topology(roofline_topology(topology_name));
  Variables v = run.vars();
  double link = static_cast<double>(spec.roofline.at("link_bytes").eval(v));
  double hbm = static_cast<double>(spec.roofline.at("hbm_bytes").eval(v));
  double flops = static_cast<double>(spec.roofline.at("flops").eval(v));
  double link_us = link / (topo.roofline_link_GBps() * 1e3);
  double hbm_us = hbm / (topo.hbm_GBps * 1e3);
  // The dtype's rate: an fp32 run measured against the bf16 tensor-core rate would report a floor ~10x too low.
  double rate = topo.math_TFLOPs(run.float_dtype);
  double math_us = rate > 0 ? flops / (rate * 1e6) : 0;  // unknown rate: no math bound rather than a wrong one
  double floor_us = std::max({link_us, hbm_us, math_us});
  const char* bound = floor_us == link_us ? "link" : floor_us == hbm_us ? "hbm" : "math";
  return {{"topology", topo.name},
          {"link_bytes", link},
          {"hbm_bytes", hbm},
          {"flops", flops},
          {"math_TFLOPs", rate > 0 ? nlohmann::json(rate) : nlohmann::json()},
          {"link_us", link_us},
          {"hbm_us", hbm_us},
          {"math_us", math_us},
          {"floor_us", floor_us},
          {"bound", bound}};
}

nlohmann::json speed_of_light(const nlohmann::json& floor, double median_us) {
  if (median_us <= 0) return nullptr;
  return floor.at("floor_us").get<double>() / median_us;
}

}  // namespace pkb
