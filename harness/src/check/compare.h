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

#include "check/compare_values.h"  // Comparison, describe

namespace pkb {

// A contiguous CPU tensor as the torch-free checks read it (check/compare_values.h).
TensorView tensor_view(const at::Tensor& t);

// out_dtype: the dtype the output was produced in (its eps sets the robust slack).
Comparison compare(Policy policy, const at::Tensor& out, const at::Tensor& expected, const Tolerance& tol,
                   at::ScalarType out_dtype);

}  // namespace pkb
