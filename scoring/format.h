// Number formatting shared by the reporters (summary.md, report.html, leaderboard.html), so that a value reads
// the same in every file.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "scoring/aggregate.h"

namespace pkb::scoring {

inline std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Thresholds print as written in the settings (1, 1.25), not as 1.000000.
inline std::string short_number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

inline std::string or_dash(const std::optional<double>& x, int digits, const std::string& suffix = "") {
  return x ? fixed(*x, digits) + suffix : "-";
}

inline std::optional<double> percent(const Mean& fraction) {
  auto v = fraction.value();
  return v ? std::optional<double>(100 * *v) : std::nullopt;
}

// "fast_1": the name of the per-problem fast_p@k columns.
inline std::string fast_name(const ScoreSettings& st) { return "fast_" + short_number(st.headline_p); }

}  // namespace pkb::scoring
