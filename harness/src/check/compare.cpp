#include "check/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "inputs/inputs.h"

namespace pkb {
namespace {

// The elements as doubles, widened on this thread: the driver compares calls on several threads at once
// (eval/evaluate.cpp), and ATen's conversion would start an OpenMP team inside each. The same casts as ATen's.
std::vector<double> as_doubles(const at::Tensor& in) {
  const at::Tensor t = in.device().is_cpu() && in.is_contiguous() ? in : in.to(at::kCPU).contiguous();
  std::vector<double> out(static_cast<size_t>(t.numel()));
  AT_DISPATCH_ALL_TYPES_AND3(at::kBFloat16, at::kHalf, at::kBool, t.scalar_type(), "as_doubles", [&] {
    const scalar_t* p = t.data_ptr<scalar_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

}  // namespace

Comparison compare(Policy policy, const at::Tensor& out_in, const at::Tensor& expected_in, const Tolerance& tol,
                   at::ScalarType out_dtype) {
  Comparison c;
  if (out_in.sizes() != expected_in.sizes()) {
    c.error = "shape " + c10::str(out_in.sizes()) + " != expected " + c10::str(expected_in.sizes());
    return c;
  }
  const std::vector<double> out = as_doubles(out_in), exp = as_doubles(expected_in);
  c.numel = static_cast<int64_t>(out.size());
  const double* o = out.data();
  const double* e = exp.data();
  bool exact = !at::isFloatingType(out_dtype);

  // Scale and relative L2 over the finite expected elements: an expected +-inf (a masked log-prob) must be matched
  // exactly, and must not make the slack infinite (every finite element would pass) or the L2 ratio 0/inf.
  double sum_sq_exp = 0, sum_sq_diff = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < c.numel; ++i)
    if (std::isfinite(e[i])) sum_sq_exp += e[i] * e[i], ++finite;
  double rms = finite ? std::sqrt(sum_sq_exp / finite) : 0;
  double slack = policy == Policy::robust ? tol.gamma * dtype_epsilon(from_aten(out_dtype)) * rms : 0;

  for (int64_t i = 0; i < c.numel; ++i) {
    bool ok;
    if (std::isnan(o[i]) || std::isnan(e[i])) {
      c.nan_count += std::isnan(o[i]);
      ok = false;
    } else if (std::isinf(o[i]) || std::isinf(e[i])) {
      ok = o[i] == e[i];
    } else {
      double diff = std::fabs(o[i] - e[i]);
      sum_sq_diff += diff * diff;
      c.max_abs_err = std::max(c.max_abs_err, diff);
      c.max_rel_err = std::max(c.max_rel_err, diff / std::max(std::fabs(e[i]), 1e-30));
      if (exact)
        ok = diff == 0;
      else if (policy == Policy::paper_allclose)
        ok = diff <= tol.atol + tol.rtol * std::fabs(o[i]);
      else
        ok = diff <= tol.atol + tol.rtol * std::fabs(e[i]) + slack;
    }
    if (!ok) {
      if (c.first_bad < 0) c.first_bad = i;
      ++c.mismatches;
    }
  }
  c.rel_l2 = sum_sq_exp > 0 ? std::sqrt(sum_sq_diff / sum_sq_exp) : std::sqrt(sum_sq_diff);
  c.pass = c.mismatches == 0;
  if (policy == Policy::robust && !exact && c.rel_l2 > tol.max_rel_l2) c.pass = false;
  return c;
}

std::string describe(const Comparison& c) {
  if (!c.error.empty()) return c.error;
  char buf[256];
  if (c.pass) {
    std::snprintf(buf, sizeof buf, "ok max_abs=%.3g rel_l2=%.3g", c.max_abs_err, c.rel_l2);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "%lld of %lld mismatched (%lld NaN), first at %lld; max_abs=%.3g rel_l2=%.3g",
                static_cast<long long>(c.mismatches), static_cast<long long>(c.numel),
                static_cast<long long>(c.nan_count), static_cast<long long>(c.first_bad), c.max_abs_err, c.rel_l2);
  return buf;
}

}  // namespace pkb
