// Number formatting shared by the reporters (summary.md, report.html, leaderboard.html), so that a value reads
// the same in every file.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result_record.h"
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

// A failure breakdown in a fixed order: the status table's buckets (compile, lint, load, runtime, timeout,
// crash, incorrect), then generation failures by kind and anything else, alphabetically.
inline std::vector<std::pair<std::string, int>> ordered_failures(const std::map<std::string, int>& failures) {
  std::vector<std::pair<std::string, int>> out;
  std::map<std::string, int> rest = failures;
  for (const auto& e : result_statuses())
    if (auto it = rest.find(e.failure_kind); *e.failure_kind && it != rest.end()) out.push_back(*it), rest.erase(it);
  for (const auto& kv : rest) out.push_back(kv);
  return out;
}

// "compile 1, incorrect 2, no_code 1"; "-" without failures.
inline std::string failures_text(const std::map<std::string, int>& failures) {
  std::string out;
  for (const auto& [kind, n] : ordered_failures(failures))
    out += (out.empty() ? "" : ", ") + kind + " " + std::to_string(n);
  return out.empty() ? "-" : out;
}

}  // namespace pkb::scoring
