// check/output_views.h's checks for libtorch tensors (`pkb validate`'s references and oracle).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "check/compare.h"
#include "check/output_views.h"
#include "io/safetensors.h"
#include "spec/problem_spec.h"

namespace pkb {

// check_output_views over libtorch tensors (on any device, in any layout).
std::vector<OutputCheck> check_outputs(const ProblemSpec& spec, const RunShape& run, Policy policy,
                                       const std::vector<std::vector<at::Tensor>>& got,
                                       const std::vector<std::vector<at::Tensor>>& expected, bool check_replication);

// The problem's outputs from a safetensors file, in spec.outputs order (throws pkb::Error for a missing one).
std::vector<at::Tensor> outputs_in_order(const ProblemSpec& spec, const NamedTensors& file);

}  // namespace pkb
