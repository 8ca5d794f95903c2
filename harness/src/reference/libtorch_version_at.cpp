// The torch-free half of reference/libtorch_version.h: where a libtorch's version is read from, without loading it.
#include <fstream>
#include <regex>

#include "reference/libtorch_version.h"

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

std::string libtorch_version_among(const std::vector<std::filesystem::path>& libraries, const std::string& fallback) {
  for (const std::filesystem::path& lib : libraries)
    if (lib.filename().string().rfind("libtorch_cpu.so", 0) == 0) return libtorch_version_at(lib, fallback);
  return fallback;
}

}  // namespace pkb
