#include "scoring/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <sstream>

#include "scoring/format.h"

namespace pkb::scoring::html {
namespace {

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232b}
body{margin:24px auto;max-width:1280px;padding:0 16px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dt{color:#5a6470}dd{margin:0;word-break:break-word}
.notice{background:#fff4d6;border:1px solid #e8c35a;padding:8px 12px;border-radius:4px;margin:12px 0}
.warnings li{font-family:ui-monospace,monospace;font-size:12px}
details>summary{cursor:pointer;font-weight:600;margin:6px 0}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:8px 0}
.card{border:1px solid #d6dbe1;border-radius:6px;padding:8px 14px;min-width:150px}
.card .v{font-size:22px;font-weight:600}.card .l,.card .d{color:#5a6470;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e3e7ec;padding:4px 8px;text-align:right;white-space:nowrap}
th.text,td.text{text-align:left}
table.sortable th{cursor:pointer;user-select:none;background:#f4f6f8}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td.fast{background:#d5f0dc}td.correct{background:#eef6d8}td.failed{background:#fbe3e3}
td.skipped,td.absent{background:#eceff3;color:#5a6470}
svg.curve text,svg.bars text{font:11px system-ui,sans-serif;fill:#1d232b}svg.bars text.none{fill:#5a6470}
.note{color:#5a6470;font-size:12px}
.scroll{overflow-x:auto}
)css";

// Sorting reads each cell's data-v: a number in columns marked data-type="number", text otherwise; "" is a
// missing value and sorts last in either direction. data-ready tells a headless browser that this ran.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var tables = document.querySelectorAll('table.sortable');
  function each(list, f) { Array.prototype.forEach.call(list, f); }
  function key(row, col) { var c = row.cells[col]; return c ? (c.getAttribute('data-v') || '') : ''; }
  function sortBy(table, col, dir) {
    var head = table.tHead.rows[0], th = head.cells[col], body = table.tBodies[0];
    var numeric = th.getAttribute('data-type') === 'number';
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var a = key(r1, col), b = key(r2, col);
      if (a === '' || b === '') return (a === '' ? 1 : 0) - (b === '' ? 1 : 0);
      var d = numeric ? parseFloat(a) - parseFloat(b) : a.localeCompare(b, undefined, {numeric: true});
      return dir === 'desc' ? -d : d;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    each(head.cells, function (h) { h.removeAttribute('aria-sort'); });
    th.setAttribute('aria-sort', dir === 'desc' ? 'descending' : 'ascending');
  }
  each(tables, function (table) {
    each(table.tHead.rows[0].cells, function (th, col) {
      th.addEventListener('click', function () {
        sortBy(table, col, th.getAttribute('aria-sort') === 'ascending' ? 'desc' : 'asc');
      });
    });
  });
  function sortFromFragment() {
    var m = /(?:^#|&)sort=([^:&]+)(?::(asc|desc))?/.exec(location.hash);
    if (!m) return;
    var wanted = decodeURIComponent(m[1]);
    each(tables, function (table) {
      each(table.tHead.rows[0].cells, function (th, col) {
        if (th.getAttribute('data-key') === wanted) sortBy(table, col, m[2] || 'asc');
      });
    });
  }
  sortFromFragment();
  window.addEventListener('hashchange', sortFromFragment);
  document.body.setAttribute('data-ready', '1');
})();
)js";

// Colour-blind-safe (Okabe-Ito), then a few more; series beyond the list reuse colours in order.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                    "#56B4E9", "#000000", "#8C564B", "#7F7F7F", "#BCBD22"};

std::string coord(double x) { return fixed(x, 2); }

std::string sort_value(const Column& column, const Cell& cell) {
  if (!column.numeric) return cell.text;
  if (!cell.value) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", *cell.value);
  return buf;
}

std::string legend_text(const std::string& label) {
  constexpr size_t kMaxBytes = 24;  // what fits right of the plot at 11px
  if (label.size() <= kMaxBytes) return label;
  size_t cut = kMaxBytes - 1;
  while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 char
  return label.substr(0, cut) + "\u2026";
}

// Where a threshold p sits on the x axis of the frame: linear over the grid, or by log2 p once the grid spans more
// than 16x (an extended grid, 0.5 to 16 and beyond, where a linear axis would crowd everything up to 2 into its
// left eighth); p = 0 then sits one octave left of the smallest positive p.
std::function<double(double)> x_axis(const std::vector<double>& thresholds) {
  const ChartFrame& f = kChartFrame;
  double lo = thresholds.empty() ? 0 : *std::min_element(thresholds.begin(), thresholds.end());
  double hi = thresholds.empty() ? 1 : *std::max_element(thresholds.begin(), thresholds.end());
  double smallest_positive = hi;
  for (double p : thresholds)
    if (p > 0) smallest_positive = std::min(smallest_positive, p);
  std::function<double(double)> unit = [](double p) { return p; };
  if (smallest_positive > 0 && hi / smallest_positive > 16) {
    double zero_at = std::log2(smallest_positive) - 1;
    unit = [zero_at](double p) { return p > 0 ? std::log2(p) : zero_at; };
  }
  double u_lo = unit(lo), u_hi = unit(hi);
  if (u_hi <= u_lo) u_lo -= 1, u_hi += 1;  // one threshold: centre it
  return [=](double p) { return f.left + (unit(p) - u_lo) / (u_hi - u_lo) * (f.right - f.left); };
}

void axes(std::ostringstream& o, const std::vector<double>& thresholds, const std::function<double(double)>& x_of,
          std::string_view value_name, const XAxis& axis) {
  const ChartFrame& f = kChartFrame;
  for (double v : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    double y = f.bottom - v * (f.bottom - f.top);
    o << "<line class=\"grid\" x1=\"" << coord(f.left) << "\" x2=\"" << coord(f.right) << "\" y1=\"" << coord(y)
      << "\" y2=\"" << coord(y) << "\" stroke=\"#e3e7ec\"/>"
      << "<text x=\"" << coord(f.left - 6) << "\" y=\"" << coord(y + 4) << "\" text-anchor=\"end\">" << short_number(v)
      << "</text>\n";
  }
  // A crowded grid keeps every tick but drops a label that would overlap the previous one (centred labels,
  // about 6.5 user units per character at 11px).
  double last_x = -1e9, last_half_width = 0;
  for (double p : thresholds) {
    double x = x_of(p);
    std::string label = short_number(p);
    double half_width = 3.25 * label.size();
    o << "<line x1=\"" << coord(x) << "\" x2=\"" << coord(x) << "\" y1=\"" << coord(f.bottom) << "\" y2=\""
      << coord(f.bottom + 5) << "\" stroke=\"#1d232b\"/>";
    if (x - last_x >= last_half_width + half_width + 4) {
      o << "<text class=\"xtick\" x=\"" << coord(x) << "\" y=\"" << coord(f.bottom + 18) << "\" text-anchor=\"middle\">"
        << label << "</text>";
      last_x = x, last_half_width = half_width;
    }
    o << "\n";
  }
  o << "<path d=\"M" << coord(f.left) << " " << coord(f.top) << "V" << coord(f.bottom) << "H" << coord(f.right)
    << "\" fill=\"none\" stroke=\"#1d232b\"/>\n"
    << "<text x=\"" << coord((f.left + f.right) / 2) << "\" y=\"" << coord(f.bottom + 38)
    << "\" text-anchor=\"middle\">" << escape(axis.title) << "</text>\n"
    << "<text transform=\"rotate(-90)\" x=\"" << coord(-(f.top + f.bottom) / 2) << "\" y=\"14\" "
    << "text-anchor=\"middle\">" << escape(value_name) << "</text>\n";
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string page(std::string_view title, std::string_view body) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += escape(title);
  out += "</title>\n<style>";
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out += body;
  out += "<script>";
  out += kScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

std::string distinct_values(const nlohmann::json& values) {
  if (!values.is_array()) return values.is_string() ? values.get<std::string>() : values.dump();
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
  return out.empty() ? "unknown" : out;
}

std::string configurations_text(const nlohmann::json& configurations) {
  std::string out;
  for (const auto& c : configurations) {
    auto field = [&](const char* k) { return c.contains(k) && !c[k].is_null() ? distinct_values(c[k]) : "?"; };
    out += (out.empty() ? "" : "; ") + ("W=" + field("world") + ", " + field("device") + ", " + field("dtype"));
  }
  return out.empty() ? "unknown" : out;
}

std::vector<std::pair<std::string, std::string>> fingerprint_items(const nlohmann::json& fingerprint) {
  static const std::pair<const char*, const char*> kKnown[] = {{"gpu", "GPU"},
                                                               {"driver", "driver"},
                                                               {"cuda_runtime", "CUDA runtime"},
                                                               {"cuda_driver_api", "CUDA driver API"},
                                                               {"nccl", "NCCL"},
                                                               {"libtorch", "libtorch"},
                                                               {"pkb_git", "pkb git"}};
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& [key, label] : kKnown)
    items.emplace_back(label, fingerprint.contains(key) ? distinct_values(fingerprint[key]) : "unknown");
  for (const auto& field : fingerprint.items()) {  // fields a newer pkb added
    const std::string& key = field.key();
    if (std::none_of(std::begin(kKnown), std::end(kKnown), [&](const auto& k) { return key == k.first; }))
      items.emplace_back(key, distinct_values(field.value()));
  }
  return items;
}

std::string definition_list(const std::vector<std::pair<std::string, std::string>>& items) {
  std::string out = "<dl class=\"meta\">\n";
  for (const auto& [label, value] : items) out += "<dt>" + escape(label) + "</dt><dd>" + escape(value) + "</dd>\n";
  return out + "</dl>\n";
}

Cell text_cell(std::string text) { return Cell{std::move(text), std::nullopt, "text", ""}; }

Cell number_cell(std::optional<double> value, int digits, std::string_view suffix) {
  return Cell{value ? fixed(*value, digits) + std::string(suffix) : "-", value, "", ""};
}

std::string sortable_table(std::string_view id, const std::vector<Column>& columns,
                           const std::vector<std::vector<Cell>>& rows) {
  std::ostringstream o;
  o << "<div class=\"scroll\"><table class=\"sortable\" id=\"" << escape(id) << "\">\n<thead><tr>";
  for (const Column& c : columns)
    o << "<th data-key=\"" << escape(c.key) << "\" data-type=\"" << (c.numeric ? "number" : "text") << "\""
      << (c.numeric ? "" : " class=\"text\"") << ">" << escape(c.label) << "</th>";
  o << "</tr></thead>\n<tbody>\n";
  for (const auto& row : rows) {
    o << "<tr>";
    for (size_t i = 0; i < row.size() && i < columns.size(); ++i) {
      const Cell& cell = row[i];
      o << "<td data-v=\"" << escape(sort_value(columns[i], cell)) << "\"";
      if (!cell.css_class.empty()) o << " class=\"" << escape(cell.css_class) << "\"";
      if (!cell.title.empty()) o << " title=\"" << escape(cell.title) << "\"";
      o << ">" << escape(cell.text) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody>\n</table></div>\n";
  return o.str();
}

std::string curve_svg(const std::vector<double>& thresholds, const std::vector<Series>& series,
                      std::string_view value_name, const XAxis& axis) {
  const ChartFrame& f = kChartFrame;
  std::function<double(double)> x_of = x_axis(thresholds);
  auto y_of = [&](double v) { return f.bottom - std::clamp(v, 0.0, 1.0) * (f.bottom - f.top); };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"curve\" viewBox=\"0 0 " << coord(f.width) << " "
    << coord(f.height) << "\" width=\"" << coord(f.width) << "\" height=\"" << coord(f.height)
    << "\" role=\"img\" aria-label=\"" << escape(value_name) << " against the " << escape(axis.title) << "\">\n";
  axes(o, thresholds, x_of, value_name, axis);
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const char* color = kPalette[i % std::size(kPalette)];
    size_t points = std::min(s.values.size(), thresholds.size());
    o << "<g class=\"series\" data-label=\"" << escape(s.label) << "\">\n<polyline fill=\"none\" stroke=\"" << color
      << "\" stroke-width=\"2\" points=\"";
    for (size_t j = 0; j < points; ++j)
      o << (j ? " " : "") << coord(x_of(thresholds[j])) << "," << coord(y_of(s.values[j]));
    o << "\"/>\n";
    for (size_t j = 0; j < points; ++j)
      o << "<circle cx=\"" << coord(x_of(thresholds[j])) << "\" cy=\"" << coord(y_of(s.values[j]))
        << "\" r=\"3.5\" fill=\"" << color << "\" data-p=\"" << short_number(thresholds[j]) << "\" data-value=\""
        << fixed(s.values[j], 6) << "\"><title>" << escape(s.label) << ", " << escape(axis.symbol) << " = "
        << short_number(thresholds[j]) << ": " << escape(value_name) << " = " << fixed(s.values[j], 4)
        << "</title></circle>\n";
    o << "</g>\n";
    double y = f.top + 8 + 18.0 * i;
    o << "<g class=\"legend\"><title>" << escape(s.label) << "</title><line x1=\"" << coord(f.right + 16) << "\" x2=\""
      << coord(f.right + 40) << "\" y1=\"" << coord(y) << "\" y2=\"" << coord(y) << "\" stroke=\"" << color
      << "\" stroke-width=\"2\"/><circle cx=\"" << coord(f.right + 28) << "\" cy=\"" << coord(y)
      << "\" r=\"3.5\" fill=\"" << color << "\"/><text x=\"" << coord(f.right + 46) << "\" y=\"" << coord(y + 4)
      << "\">" << escape(legend_text(s.label)) << "</text></g>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string speedup_bars_svg(const std::vector<Bar>& bars) {
  const BarFrame& f = kBarFrame;
  double reach = 1;  // octaves either side of 1x
  for (const Bar& b : bars)
    if (b.speedup && *b.speedup > 0) reach = std::max(reach, std::ceil(std::abs(std::log2(*b.speedup))));
  double mid = (f.left + f.right) / 2, half = (f.right - f.left) / 2;
  auto x_of = [&](double speedup) { return mid + std::clamp(std::log2(speedup) / reach, -1.0, 1.0) * half; };
  double height = f.top + f.row_height * bars.size() + 24;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bars\" viewBox=\"0 0 " << coord(f.width) << " "
    << coord(height) << "\" width=\"" << coord(f.width) << "\" height=\"" << coord(height)
    << "\" role=\"img\" aria-label=\"best speedup per problem, log scale\">\n";
  double bottom = f.top + f.row_height * bars.size();
  for (double e = -reach; e <= reach; ++e) {
    double x = mid + e / reach * half;
    o << "<line x1=\"" << coord(x) << "\" x2=\"" << coord(x) << "\" y1=\"" << coord(f.top - 4) << "\" y2=\""
      << coord(bottom) << "\" stroke=\"" << (e == 0 ? "#1d232b" : "#e3e7ec") << "\"/><text x=\"" << coord(x)
      << "\" y=\"" << coord(f.top - 8) << "\" text-anchor=\"middle\">" << short_number(std::exp2(e)) << "x</text>\n";
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    double y = f.top + f.row_height * i;
    o << "<g class=\"bar\" data-label=\"" << escape(b.label) << "\"><text x=\"" << coord(f.left - 8) << "\" y=\""
      << coord(y + f.row_height - 5) << "\" text-anchor=\"end\">" << escape(b.label) << "</text>";
    if (b.speedup && *b.speedup > 0) {
      double x = x_of(*b.speedup), x0 = std::min(x, mid), w = std::abs(x - mid);
      o << "<rect x=\"" << coord(x0) << "\" y=\"" << coord(y + 3) << "\" width=\"" << coord(w) << "\" height=\""
        << coord(f.row_height - 6) << "\" fill=\"" << (*b.speedup > 1 ? "#009E73" : "#D55E00") << "\" data-speedup=\""
        << fixed(*b.speedup, 6) << "\"><title>" << escape(b.label) << ": " << fixed(*b.speedup, 3)
        << "x</title></rect>";
    } else {
      o << "<text class=\"none\" x=\"" << coord(mid + 6) << "\" y=\"" << coord(y + f.row_height - 5) << "\">"
        << escape(b.note) << "</text>";
    }
    o << "</g>\n";
  }
  o << "<text x=\"" << coord(mid) << "\" y=\"" << coord(bottom + 18) << "\" text-anchor=\"middle\">"
    << "best speedup over the baseline (log scale)</text>\n</svg>\n";
  return o.str();
}

}  // namespace pkb::scoring::html
