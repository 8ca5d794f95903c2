#include "reference/libtorch_version.h"

#include <ATen/Context.h>
#include <dlfcn.h>

#include <fstream>
#include <regex>

namespace pkb {

std::string libtorch_version_at(const std::filesystem::path& library, const std::string& fallback) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path real = fs::canonical(library, ec);
  if (ec) real = library;
  // `__version__ = '2.11.0+cu130'`, annotated or not (`__version__: str = ...`).
  static const std::regex version_line(R"re(^__version__\s*(:\s*\w+\s*)?=\s*['"]([^'"]+)['"])re");
  for (const fs::path& lib : {library, real}) {
    if (lib.parent_path().filename() != "lib") continue;
    std::ifstream py(lib.parent_path().parent_path() / "version.py");
    std::smatch m;
    for (std::string line; std::getline(py, line);)
      if (std::regex_search(line, m, version_line)) return m[2];
  }
  // libtorch_cpu.so.1.13.0: the real file carries the fullest version, the link the loader named a shorter one.
  static const std::regex soname(R"re(\.so\.([0-9]+(\.[0-9]+)*)$)re");
  for (const fs::path& lib : {real, library}) {
    std::smatch m;
    std::string name = lib.filename().string();
    if (std::regex_search(name, m, soname)) return m[1];
  }
  return fallback;
}

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
