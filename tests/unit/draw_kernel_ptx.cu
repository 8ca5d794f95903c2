// The input generator as the GPU runs it (core/element_draw.h), compiled to PTX by tests/unit/draw_kernel_ptx.py:
// the same kernel shape as runtime/cuda_runtime.cu's draw_kernel, so every distribution and dtype path is in it.
#include "core/element_draw.h"

__global__ void draw_kernel_under_test(void* dst, pkb::ElementDraw d, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    pkb::element_draw::draw_element(d, dst, i);
}
