// Deterministic random inputs. Every value is a pure function of (base seed, problem id, trial, input index,
// rank — or no rank for replicated inputs, element index), computed on the CPU with our own counter-based
// generator, so the reference pass, the candidate pass, the oracle and the Python runner all see the same bytes
// on any machine and any libtorch version.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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

// Scalar arguments by name, evaluated for this run.
std::map<std::string, int64_t> scalar_values(const ProblemSpec& spec, const RunShape& run);

// For each named group: member lists (world ranks ordered by key, ties by rank), one per color.
std::map<std::string, std::vector<std::vector<int>>> group_layout(const ProblemSpec& spec, const RunShape& run);

struct OracleContext;
// The context an oracle (and a prepare function) sees for this run.
OracleContext oracle_context(const ProblemSpec& spec, const RunShape& run);

// color and key of `rank` in group g, as the communicator split needs them.
std::pair<int, int> group_color_key(const GroupSpec& g, const RunShape& run, int rank);

}  // namespace pkb
