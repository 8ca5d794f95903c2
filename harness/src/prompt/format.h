// Number and size formatting shared by the prompt sections: short, exact where the value is exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pkb::prompt {

// 477 -> "477", 26.5 -> "26.5", 0.00390625 -> "0.00390625".
inline std::string num(double v) {
  char buf[64];
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(v)));
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Binary units, one decimal where needed: 62914560 -> "60 MiB", 150754820096 -> "140.4 GiB".
inline std::string binary_size(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", bytes);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s + " " + units[u];
}

// (4, 1024, 1024); a 1-d shape keeps Python's trailing comma: (1024,).
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace pkb::prompt
