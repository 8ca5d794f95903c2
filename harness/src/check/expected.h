// The one definition of "expected": a call's expected outputs are the problem's oracle on every rank's inputs.
// `pkb validate` proves each reference against them, `pkb eval` judges candidates against them under the robust
// policy (computed once per reference-cache entry and stored in it), and the problems' check tests use them, so a
// check test shows exactly what eval would decide.
#pragma once

#include <vector>

#include "reference/reference.h"
#include "spec/problem_spec.h"

namespace pkb {

// Every rank's inputs of one call (trial `trial`, prepared), on the CPU, in problem.json order (scalars excluded).
std::vector<Tensors> all_rank_inputs(const ProblemSpec& spec, const RunShape& run, int trial, uint64_t seed);

// Every rank's expected outputs for those inputs, in problem.json's output order. Throws pkb::Error naming the
// problem when it has no registered reference or its oracle returns the wrong number of ranks, outputs or shapes.
std::vector<Tensors> expected_outputs(const ProblemSpec& spec, const RunShape& run, const std::vector<Tensors>& inputs);

}  // namespace pkb
