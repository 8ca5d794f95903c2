// Every rank's outputs against expected ones, output by output, in the problem's output order, without libtorch: one
// loop for `pkb validate` (references against the oracle, reference.py against reference.cpp; check/outputs.h gives it
// libtorch tensors) and `pkb eval` (a candidate against the reference pass, as the files' bytes), so both apply the
// same dtype and replication rules.
#pragma once

#include <string>
#include <vector>

#include "check/compare_values.h"
#include "io/safetensors_encode.h"
#include "spec/problem_spec.h"

namespace pkb {

struct OutputCheck {
  int rank = 0;
  std::string output;
  bool replication = false;  // a comparison of this rank's replicated output with rank 0's, not with `expected`
  Comparison result;
  std::string where() const;  // "rank 1 output 'out'" (+ " vs rank 0 (replicated)")
};

// got[r] and expected[r] hold rank r's tensors in spec.outputs order. An output of the wrong dtype fails with
// an error naming both dtypes. With check_replication, every replicated output of rank r > 0 must also agree
// with rank 0's under the robust policy.
std::vector<OutputCheck> check_output_views(const ProblemSpec& spec, const RunShape& run, Policy policy,
                                            const std::vector<std::vector<TensorView>>& got,
                                            const std::vector<std::vector<TensorView>>& expected,
                                            bool check_replication);

// The problem's outputs from a file's tensors, in spec.outputs order (throws pkb::Error for a missing one); the views
// point into `file`.
std::vector<TensorView> output_views_in_order(const ProblemSpec& spec, const HostTensors& file);

}  // namespace pkb
