// Output comparison under two tolerance policies (docs/design/checking.md). Both are computed for every tensor
// and recorded; which one decides pass/fail is the caller's choice (robust by default).
//  - pkb:    elementwise allclose against the expected tensor: |out - exp| <= atol + rtol * |out| (PyTorch's
//            allclose with the candidate as `input`, as ParallelKernelBench calls it). NaN never passes.
//  - robust: against a precise expected tensor: |out - exp| <= atol + rtol * |exp| + gamma * eps(dtype) * rms(exp)
//            for every element, and ||out - exp||_2 / ||exp||_2 <= max_rel_l2. Integer and bool tensors must match
//            exactly under both policies.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "core/policy.h"
#include "spec/problem_spec.h"

namespace pkb {

struct Comparison {
  bool pass = false;
  std::string error;  // shape/dtype problem, or empty
  int64_t numel = 0;
  int64_t mismatches = 0;  // elements outside the tolerance (NaN included)
  int64_t nan_count = 0;   // NaN elements in the output
  int64_t first_bad = -1;  // flat index of the first failing element, -1 if none
  double max_abs_err = 0;  // over finite elements
  double max_rel_err = 0;  // |out - exp| / max(|exp|, tiny)
  double rel_l2 = 0;       // ||out - exp|| / ||exp||
};

// out_dtype: the dtype the output was produced in (its eps sets the robust slack).
Comparison compare(Policy policy, const at::Tensor& out, const at::Tensor& expected, const Tolerance& tol,
                   at::ScalarType out_dtype);

// One-line human summary ("ok max_abs=... rel_l2=..." or "12 of 1048576 mismatched, first at 17: ...").
std::string describe(const Comparison& c);

}  // namespace pkb
