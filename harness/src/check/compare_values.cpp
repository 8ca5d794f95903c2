#include "check/compare_values.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace pkb {
namespace {

template <typename T>
void widen(const void* data, size_t n, double* out) {
  const T* p = static_cast<const T*>(data);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i]);
}

// "[64, 48]", as c10 prints sizes.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<double> as_doubles(const TensorView& t) {
  int64_t n = 1;
  for (int64_t s : t.shape) n *= s;
  std::vector<double> out(static_cast<size_t>(n));
  widen_to_doubles(t.data, t.dtype, out.size(), out.data());
  return out;
}

}  // namespace

Comparison compare_views(Policy policy, const TensorView& out, const TensorView& expected, const Tolerance& tol,
                         DType out_dtype) {
  if (out.shape != expected.shape) {
    Comparison c;
    c.error = "shape " + shape_text(out.shape) + " != expected " + shape_text(expected.shape);
    return c;
  }
  const std::vector<double> o = as_doubles(out), e = as_doubles(expected);
  const double eps = policy == Policy::robust ? dtype_epsilon(out_dtype) : 0;
  return compare_doubles(policy, o.data(), e.data(), static_cast<int64_t>(o.size()), tol, !dtype_is_floating(out_dtype),
                         eps);
}

void widen_to_doubles(const void* data, DType type, size_t n, double* out) {
  switch (type) {
    case DType::u8:
      return widen<uint8_t>(data, n, out);
    case DType::i8:
      return widen<int8_t>(data, n, out);
    case DType::i16:
      return widen<int16_t>(data, n, out);
    case DType::i32:
      return widen<int32_t>(data, n, out);
    case DType::i64:
      return widen<int64_t>(data, n, out);
    case DType::f32:
      return widen<float>(data, n, out);
    case DType::f64:
      return widen<double>(data, n, out);
    case DType::bf16:
      return widen<c10::BFloat16>(data, n, out);
    case DType::f16:
      return widen<c10::Half>(data, n, out);
    case DType::boolean:
      return widen<bool>(data, n, out);
  }
}

Comparison compare_doubles(Policy policy, const double* o, const double* e, int64_t n, const Tolerance& tol, bool exact,
                           double eps) {
  Comparison c;
  c.numel = n;
  // Scale and relative L2 over the finite expected elements: an expected +-inf (a masked log-prob) must be matched
  // exactly, and must not make the slack infinite (every finite element would pass) or the L2 ratio 0/inf.
  double sum_sq_exp = 0, sum_sq_diff = 0;
  int64_t finite = 0;
  for (int64_t i = 0; i < c.numel; ++i)
    if (std::isfinite(e[i])) sum_sq_exp += e[i] * e[i], ++finite;
  double rms = finite ? std::sqrt(sum_sq_exp / finite) : 0;
  double slack = policy == Policy::robust ? tol.gamma * eps * rms : 0;

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
