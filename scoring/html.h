// Pieces of the self-contained HTML reports (report.html, leaderboard.html): escaping, the page shell with its
// inline CSS and JS, sortable tables and the speedup-threshold chart as inline SVG. Nothing is fetched at view
// time, so a page works from a file:// URL, offline, attached to an issue. Output is deterministic.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pkb::scoring::html {

// Escapes & < > " ' so that any text (problem names, warnings, model names) is safe in element content and in
// quoted attribute values.
std::string escape(std::string_view text);

// A whole document: `body` is inserted as is (already HTML). The page's script makes tables with class
// "sortable" sort on a header click (numeric-aware, toggling ascending/descending, missing values last),
// applies `#sort=KEY[:asc|desc]` from the URL at load, and then sets data-ready="1" on <body>.
std::string page(std::string_view title, std::string_view body);

// Label/value rows (both escaped) as a <dl>.
std::string definition_list(const std::vector<std::pair<std::string, std::string>>& items);

// Provenance as loaded (field -> distinct values seen) in words: "NVIDIA H200" or "a, b"; "unknown" if none.
std::string distinct_values(const nlohmann::json& values);
// Distinct {world, device, dtype} as "W=2, cuda, bf16; ...".
std::string configurations_text(const nlohmann::json& configurations);
// GPU, driver, CUDA, NCCL, libtorch, pkb git (and any other field) as label/value rows.
std::vector<std::pair<std::string, std::string>> fingerprint_items(const nlohmann::json& fingerprint);

struct Column {
  std::string key;    // for #sort=KEY and data-key
  std::string label;  // header text
  bool numeric = true;
};

struct Cell {
  std::string text;             // shown (escaped)
  std::optional<double> value;  // sort key of a numeric column; none: missing, sorts last
  std::string css_class, title;
};

Cell text_cell(std::string text);
// "1.50x" style; "-" and missing when the value is absent.
Cell number_cell(std::optional<double> value, int digits, std::string_view suffix = "");

std::string sortable_table(std::string_view id, const std::vector<Column>& columns,
                           const std::vector<std::vector<Cell>>& rows);

// The chart's geometry in SVG user units: the plot area spans [left, right] x [top, bottom]; a value v in [0, 1]
// is drawn at y = bottom - v * (bottom - top). Public so that tests can check coordinates.
struct ChartFrame {
  double width, height, left, right, top, bottom;
};
inline constexpr ChartFrame kChartFrame{760, 340, 56, 560, 16, 290};

struct Series {
  std::string label;           // legend text, e.g. "k = 1" or a model name
  std::vector<double> values;  // one per threshold, each in [0, 1]
};

// What the x axis of a curve is: its title and the symbol a point's <title> names it by.
struct XAxis {
  std::string_view title, symbol;
};
inline constexpr XAxis kThresholdAxis{"speedup threshold p (\u00d7 baseline)", "p"};

// fast_p@k (y, 0..1) against the threshold p (x: linear over the grid, by log2 p when it spans more than 16x):
// one polyline with point markers per series, each marker's <title> the exact value; axes with tick labels and a
// legend. `value_name` names y; `x_axis` what the x values are (another grid: an agent run's step budgets).
std::string curve_svg(const std::vector<double>& thresholds, const std::vector<Series>& series,
                      std::string_view value_name, const XAxis& x_axis = kThresholdAxis);

// One problem's bar: its best speedup over the baseline, or none (then `note` says why: no correct sample, ...).
struct Bar {
  std::string label;
  std::optional<double> speedup;
  std::string note;
};
// The bars' geometry: label column, then the plot from `left` to `right`, the 1x line at its middle.
struct BarFrame {
  double width, left, right, row_height, top;
};
inline constexpr BarFrame kBarFrame{760, 230, 700, 18, 24};
// Speedups as horizontal bars from the 1x line, by log2 (2x and 0.5x equally long, right and left), over a range
// symmetric about 1x that holds the largest (at least 0.5x-2x); ticks at powers of two. A row without a speedup
// shows its note instead. Each bar's <title> has the exact value.
std::string speedup_bars_svg(const std::vector<Bar>& bars);

}  // namespace pkb::scoring::html
