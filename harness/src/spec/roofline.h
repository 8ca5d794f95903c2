// The time floor of one run of a problem on a topology: its roofline formulas (link bytes per GPU, HBM bytes,
// FLOPs) divided by the topology's rates; the slowest of the three bounds. Shared by `pkb validate --time`
// (the baselines' SOL%) and `pkb eval` (the candidate's).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/problem_spec.h"

namespace pkb {

// {topology, link_bytes, hbm_bytes, flops, link_us, hbm_us, math_us, floor_us, bound}; bound names the term
// that sets the floor ("link", "hbm" or "math").
nlohmann::json roofline_floor(const ProblemSpec& spec, const RunShape& run, const std::string& topology_name);

// floor_us / median_us (the fraction of the roofline a measured time reaches), or null without a time.
nlohmann::json speed_of_light(const nlohmann::json& floor, double median_us);

}  // namespace pkb
