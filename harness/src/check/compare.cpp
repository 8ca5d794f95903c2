#include "check/compare.h"

#include <vector>

#include "inputs/inputs.h"

namespace pkb {
namespace {

ElementType element_type(at::ScalarType t) {
  switch (t) {
    case at::kByte:
      return ElementType::u8;
    case at::kChar:
      return ElementType::i8;
    case at::kShort:
      return ElementType::i16;
    case at::kInt:
      return ElementType::i32;
    case at::kLong:
      return ElementType::i64;
    case at::kFloat:
      return ElementType::f32;
    case at::kDouble:
      return ElementType::f64;
    case at::kBFloat16:
      return ElementType::bf16;
    case at::kHalf:
      return ElementType::f16;
    case at::kBool:
      return ElementType::boolean;
    default:
      TORCH_CHECK(false, "\"as_doubles\" not implemented for '", c10::toString(t), "'");  // as AT_DISPATCH's
  }
}

// The elements as doubles, widened on this thread: the driver compares calls on several threads at once
// (eval/evaluate.cpp), and ATen's conversion would start an OpenMP team inside each. The same casts as ATen's.
std::vector<double> as_doubles(const at::Tensor& in) {
  const at::Tensor t = in.device().is_cpu() && in.is_contiguous() ? in : in.to(at::kCPU).contiguous();
  std::vector<double> out(static_cast<size_t>(t.numel()));
  widen_to_doubles(t.data_ptr(), element_type(t.scalar_type()), out.size(), out.data());
  return out;
}

}  // namespace

Comparison compare(Policy policy, const at::Tensor& out_in, const at::Tensor& expected_in, const Tolerance& tol,
                   at::ScalarType out_dtype) {
  if (out_in.sizes() != expected_in.sizes()) {
    Comparison c;
    c.error = "shape " + c10::str(out_in.sizes()) + " != expected " + c10::str(expected_in.sizes());
    return c;
  }
  const std::vector<double> out = as_doubles(out_in), exp = as_doubles(expected_in);
  const double eps = policy == Policy::robust ? dtype_epsilon(from_aten(out_dtype)) : 0;
  return compare_doubles(policy, out.data(), exp.data(), static_cast<int64_t>(out.size()), tol,
                         !at::isFloatingType(out_dtype), eps);
}

}  // namespace pkb
