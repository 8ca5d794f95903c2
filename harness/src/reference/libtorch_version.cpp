#include "reference/libtorch_version.h"

#include <ATen/Context.h>
#include <dlfcn.h>

namespace pkb {

std::string loaded_libtorch_version(const std::string& fallback) {
  Dl_info info{};
  // Any function defined in libtorch_cpu names the file it was loaded from.
  if (dladdr(reinterpret_cast<void*>(&at::globalContext), &info) == 0 || !info.dli_fname) return fallback;
  return libtorch_version_at(info.dli_fname, fallback);
}

nlohmann::json use_ieee_fp32() {
  at::Context& ctx = at::globalContext();
  ctx.setAllowTF32CuDNN(false);
  ctx.setAllowTF32CuBLAS(false);
  ctx.setFloat32MatmulPrecision(std::string("highest"));  // the string overload: the enum one is gone in 2.x
  const bool cudnn = ctx.allowTF32CuDNN(), cublas = ctx.allowTF32CuBLAS();
  const at::Float32MatmulPrecision p = ctx.float32MatmulPrecision();
  const char* precision = p == at::Float32MatmulPrecision::HIGHEST ? "highest"
                          : p == at::Float32MatmulPrecision::HIGH  ? "high"
                                                                   : "medium";
  return {{"ieee", !cudnn && !cublas && p == at::Float32MatmulPrecision::HIGHEST},
          {"tf32_cudnn", cudnn},
          {"tf32_cublas", cublas},
          {"float32_matmul_precision", precision}};
}

}  // namespace pkb
