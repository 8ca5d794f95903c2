#include "check/compare.h"

#include <vector>

#include "inputs/inputs.h"

namespace pkb {

TensorView tensor_view(const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous(), "a tensor view needs a contiguous CPU tensor");
  return {from_aten(t.scalar_type()), t.sizes().vec(), t.data_ptr()};
}

Comparison compare(Policy policy, const at::Tensor& out_in, const at::Tensor& expected_in, const Tolerance& tol,
                   at::ScalarType out_dtype) {
  auto host = [](const at::Tensor& t) {
    return t.device().is_cpu() && t.is_contiguous() ? t : t.to(at::kCPU).contiguous();
  };
  const at::Tensor out = host(out_in), expected = host(expected_in);
  return compare_views(policy, tensor_view(out), tensor_view(expected), tol, from_aten(out_dtype));
}

}  // namespace pkb
