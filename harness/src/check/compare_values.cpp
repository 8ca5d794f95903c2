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

size_t numel(const TensorView& t) {
  int64_t n = 1;
  for (int64_t s : t.shape) n *= s;
  return static_cast<size_t>(n);
}

// The comparison fed in pieces, in element order (so a whole array and its chunks give the same bits): first every
// expected element (the scale), then (output, expected) pairs.
class ComparisonAccumulator {
 public:
  ComparisonAccumulator(Policy policy, const Tolerance& tol, bool exact, double eps)
      : policy_(policy), tol_(tol), exact_(exact), eps_(eps) {}

  // Scale and relative L2 over the finite expected elements: an expected +-inf (a masked log-prob) must be matched
  // exactly, and must not make the slack infinite (every finite element would pass) or the L2 ratio 0/inf.
  void add_expected(const double* e, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (std::isfinite(e[i])) sum_sq_exp_ += e[i] * e[i], ++finite_;
  }

  void start_comparing() {
    double rms = finite_ ? std::sqrt(sum_sq_exp_ / finite_) : 0;
    slack_ = policy_ == Policy::robust ? tol_.gamma * eps_ * rms : 0;
  }

  void add_pairs(const double* o, const double* e, int64_t n) {
    for (int64_t i = 0; i < n; ++i, ++c_.numel) {
      bool ok;
      if (std::isnan(o[i]) || std::isnan(e[i])) {
        c_.nan_count += std::isnan(o[i]);
        ok = false;
      } else if (std::isinf(o[i]) || std::isinf(e[i])) {
        ok = o[i] == e[i];
      } else {
        double diff = std::fabs(o[i] - e[i]);
        sum_sq_diff_ += diff * diff;
        c_.max_abs_err = std::max(c_.max_abs_err, diff);
        c_.max_rel_err = std::max(c_.max_rel_err, diff / std::max(std::fabs(e[i]), 1e-30));
        if (exact_)
          ok = diff == 0;
        else if (policy_ == Policy::paper_allclose)
          ok = diff <= tol_.atol + tol_.rtol * std::fabs(o[i]);
        else
          ok = diff <= tol_.atol + tol_.rtol * std::fabs(e[i]) + slack_;
      }
      if (!ok) {
        if (c_.first_bad < 0) c_.first_bad = c_.numel;
        ++c_.mismatches;
      }
    }
  }

  Comparison finish() {
    c_.rel_l2 = sum_sq_exp_ > 0 ? std::sqrt(sum_sq_diff_ / sum_sq_exp_) : std::sqrt(sum_sq_diff_);
    c_.pass = c_.mismatches == 0;
    if (policy_ == Policy::robust && !exact_ && c_.rel_l2 > tol_.max_rel_l2) c_.pass = false;
    return c_;
  }

 private:
  Policy policy_;
  Tolerance tol_;
  bool exact_;
  double eps_, slack_ = 0, sum_sq_exp_ = 0, sum_sq_diff_ = 0;
  int64_t finite_ = 0;
  Comparison c_;
};

}  // namespace

Comparison compare_views(Policy policy, const TensorView& out, const TensorView& expected, const Tolerance& tol,
                         DType out_dtype) {
  if (out.shape != expected.shape) {
    Comparison c;
    c.error = "shape " + shape_text(out.shape) + " != expected " + shape_text(expected.shape);
    return c;
  }
  // Widened a chunk at a time, not whole (two arrays of 8 bytes an element, faulted in page by page, were most of a
  // large output's check).
  constexpr size_t kChunk = 8192;
  double o[kChunk], e[kChunk];
  const size_t n = numel(out), out_size = dtype_size(out.dtype), expected_size = dtype_size(expected.dtype);
  const auto at = [](const TensorView& t, size_t size, size_t i) {
    return static_cast<const char*>(t.data) + i * size;
  };
  ComparisonAccumulator acc(policy, tol, !dtype_is_floating(out_dtype),
                            policy == Policy::robust ? dtype_epsilon(out_dtype) : 0);
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t m = std::min(kChunk, n - i);
    widen_to_doubles(at(expected, expected_size, i), expected.dtype, m, e);
    acc.add_expected(e, static_cast<int64_t>(m));
  }
  acc.start_comparing();
  for (size_t i = 0; i < n; i += kChunk) {
    const size_t m = std::min(kChunk, n - i);
    widen_to_doubles(at(out, out_size, i), out.dtype, m, o);
    widen_to_doubles(at(expected, expected_size, i), expected.dtype, m, e);
    acc.add_pairs(o, e, static_cast<int64_t>(m));
  }
  return acc.finish();
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
  ComparisonAccumulator acc(policy, tol, exact, eps);
  acc.add_expected(e, n);
  acc.start_comparing();
  acc.add_pairs(o, e, n);
  return acc.finish();
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
