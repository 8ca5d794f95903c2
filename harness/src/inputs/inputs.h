// The inputs as libtorch tensors: pkb's draws (inputs/draw.h) finished by the problem's prepare step, where it
// registers one (reference/reference.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inputs/draw.h"
#include "spec/problem_spec.h"

namespace pkb {

at::ScalarType to_aten(DType d);
DType from_aten(at::ScalarType t);

struct RankInputs {
  std::vector<at::Tensor> tensors;  // tensor inputs in problem.json order, on the CPU
  std::vector<std::string> names;   // their names
};

// Draws, then applies the problem's registered prepare function if it has one.
RankInputs make_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial, uint64_t base_seed);
// Whether the problem registers a prepare step: its inputs need libtorch (the candidate pass then runs in pkb-rank,
// not in the torch-free pkb-candidate).
bool has_prepare_step(const ProblemSpec& spec);
// The tensor owning t's buffer (no copy).
at::Tensor to_aten_tensor(HostTensor&& t);

struct OracleContext;
// The context an oracle (and a prepare function) sees for this run.
OracleContext oracle_context(const ProblemSpec& spec, const RunShape& run);

}  // namespace pkb
