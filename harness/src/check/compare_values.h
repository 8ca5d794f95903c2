// Output comparison without libtorch (check/compare.h says what the two policies are): the element loops, and tensors
// as views of their bytes. Torch-free so that the driver checks a candidate's outputs without loading libtorch (`pkb
// eval` with its reference pass cached starts ~1 s of CPU sooner), and so that the loops compile optimized without
// ATen's headers (compare.cpp at -O2 with ATen.h took 17.5 s of a 2-core CI build, this file ~1.5 s).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
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

// n elements of `type` at `data` as doubles, with ATen's own casts (c10's BFloat16 and Half).
void widen_to_doubles(const void* data, DType type, size_t n, double* out);

// The comparison of n widened elements. exact: integer or bool outputs (must match bit for bit); eps: the output
// dtype's epsilon (the robust slack's unit).
Comparison compare_doubles(Policy policy, const double* o, const double* e, int64_t n, const Tolerance& tol, bool exact,
                           double eps);

// A tensor's elements as the checks read them: contiguous, row-major, of `dtype`.
struct TensorView {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// `out` against `expected` elementwise (shapes must match); out_dtype: the dtype the output was produced in (its eps
// sets the robust slack; an integer or bool one must match exactly).
Comparison compare_views(Policy policy, const TensorView& out, const TensorView& expected, const Tolerance& tol,
                         DType out_dtype);

// One-line human summary ("ok max_abs=... rel_l2=..." or "12 of 1048576 mismatched, first at 17: ...").
std::string describe(const Comparison& c);

}  // namespace pkb
