// report.html, read top-down: notices (why no speedup is claimed, skipped evaluations, warnings), the headline
// cards and counts, the speedup-threshold curve as inline SVG, sortable per-problem and per-category tables, the
// best speedups, then the warnings and the settings and provenance (manifest, configuration, scoring, machine)
// folded at the end. One file, no external resources; every inserted text is escaped.
#include <algorithm>
#include <sstream>

#include "scoring/format.h"
#include "scoring/html.h"
#include "scoring/report.h"

namespace pkb::scoring {
namespace {

using html::Cell;
using html::Column;
using html::escape;

std::string card(const std::string& label, const std::string& value, const std::string& detail) {
  return "<div class=\"card\"><div class=\"l\">" + escape(label) + "</div><div class=\"v\">" + escape(value) +
         "</div><div class=\"d\">" + escape(detail) + "</div></div>\n";
}

std::string mean_and_count(const Aggregate& a, double sum) {
  return fixed(sum, 2) + " out of " + std::to_string(a.problems) + " problems";
}

// A manifest entry as rows a reader can scan: objects become one row per field under a dotted key
// ("settings.samples"), arrays of plain values one comma-separated row, arrays of objects (the selection) their
// count; only what nests deeper than that stays JSON.
void manifest_items(std::vector<std::pair<std::string, std::string>>& items, const std::string& key,
                    const nlohmann::json& value, int depth = 0) {
  auto plain = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  if (value.is_object() && !value.empty() && depth < 3) {
    for (const auto& [k, v] : value.items()) manifest_items(items, key + "." + k, v, depth + 1);
  } else if (value.is_array()) {
    bool records = std::any_of(value.begin(), value.end(), [](const auto& v) { return v.is_structured(); });
    std::string joined;
    for (const auto& v : value) joined += (joined.empty() ? "" : ", ") + plain(v);
    items.emplace_back(key, records ? std::to_string(value.size()) + " entries (manifest.json)" : joined);
  } else {
    items.emplace_back(key, plain(value));
  }
}

// The settings block at the end: the manifest as rows, then where the records came from and how they were scored.
std::string run_items(const Scores& s, const LoadedResults& loaded) {
  std::vector<std::pair<std::string, std::string>> items;
  if (loaded.run.is_object()) {  // the model first, then the rest of the manifest as written
    if (loaded.run.contains("model")) items.emplace_back("model", run_label(loaded));
    for (const auto& [key, value] : loaded.run.items())
      if (key != "model") manifest_items(items, key, value);
  }
  items.emplace_back("results", loaded.source);
  items.emplace_back("configuration", html::configurations_text(loaded.configurations));
  for (auto& item : scoring_settings_items(s, loaded)) items.emplace_back("scoring " + item.first, item.second);
  for (auto& item : html::fingerprint_items(loaded.fingerprint)) items.push_back(std::move(item));
  return html::definition_list(items);
}

// Folded at the end: the reader opens it when the numbers above need their provenance.
std::string settings_block(const Scores& s, const LoadedResults& loaded) {
  return "<details class=\"settings\" id=\"settings\"><summary>Settings and provenance: the run's manifest, "
         "configuration, scoring and machine</summary>\n" +
         run_items(s, loaded) + "</details>\n";
}

std::string counts_items(const Scores& s, const LoadedResults& loaded) {
  const Aggregate& a = s.overall;
  return html::definition_list(
      {{"records", std::to_string(loaded.records) + " read, " + std::to_string(loaded.malformed) +
                       " malformed lines skipped, " + std::to_string(loaded.duplicates) + " duplicates replaced"},
       {"problems", std::to_string(s.problems.size()) + " (" + std::to_string(a.problems) + " in the aggregates)"},
       {"samples", std::to_string(a.samples) + " (" + std::to_string(a.generation_failed) + " failed generations), " +
                       std::to_string(a.correct) + " correct"},
       {"failures", failures_text(a.failures)},
       {"missing", a.missing ? std::to_string(a.missing) + " problems of the run without any record (count 0)" : "0"},
       {"not evaluated", std::to_string(a.not_evaluated)}});
}

std::string warnings_block(const LoadedResults& loaded) {
  if (loaded.warnings.empty()) return "";
  std::string out = "<details open class=\"warnings\" id=\"warnings\"><summary>" +
                    std::to_string(loaded.warnings.size()) + " warnings</summary><ul>\n";
  for (const auto& w : loaded.warnings) out += "<li>" + escape(w) + "</li>\n";
  return out + "</ul></details>\n";
}

// Under the title, before any number: why speedups are missing, what was not evaluated, that reading had warnings.
std::string notices(const Scores& s, const LoadedResults& loaded) {
  std::string out;
  if (std::string notice = shared_gpu_notice(s); !notice.empty())
    out += "<div class=\"notice\" id=\"shared-gpu\">" + escape(notice) + "</div>\n";
  if (std::string notice = below_roofline_notice(s); !notice.empty())
    out += "<div class=\"notice\" id=\"below-roofline\">" + escape(notice) + "</div>\n";
  if (std::string notice = skipped_evaluations_notice(s); !notice.empty())
    out += "<div class=\"notice\" id=\"not-evaluated\">" + escape(notice) + "</div>\n";
  if (!loaded.warnings.empty())
    out += "<div class=\"notice\" id=\"has-warnings\">" + std::to_string(loaded.warnings.size()) +
           " warnings while reading the records: <a href=\"#warnings\">listed at the end</a>.</div>\n";
  return out;
}

std::string headline(const Scores& s) {
  const bool shared = s.overall.shared_gpu > 0;
  const Aggregate& a = s.overall;
  const auto& ks = s.settings.ks;
  std::string out = "<div class=\"cards\">\n";
  for (size_t i = 0; i < ks.size(); ++i) {
    out += card("pass@" + std::to_string(ks[i]), or_dash(a.evaluated_mean(a.pass_robust[i]), 3),
                mean_and_count(a, a.pass_robust[i]));
    out += card(fast_name(s.settings) + "@" + std::to_string(ks[i]), or_dash(a.evaluated_mean(a.fast[i]), 3),
                mean_and_count(a, a.fast[i]));
    out += card("pkb pass@" + std::to_string(ks[i]), or_dash(a.evaluated_mean(a.pass_pkb[i]), 3),
                mean_and_count(a, a.pass_pkb[i]));
  }
  out += card("geomean speedup", or_dash(a.geomean_speedup(), 2, "x"),
              shared && !a.geomean_speedup() ? "none claimed: ranks shared a GPU" : "over robust-correct samples");
  out += card("SOL% candidate vs baseline",
              or_dash(percent(a.sol_candidate), 1, "%") + " vs " + or_dash(percent(a.sol_baseline), 1, "%"),
              "of the roofline floor, over robust-correct samples");
  return out + "</div>\n<p class=\"note\">pass: the robust check; pkb pass: the paper's allclose (1e-2); " +
         escape(fast_name(s.settings)) + ": robust-correct and faster than " + short_number(s.settings.headline_p) +
         "x the baseline. Means over the problems in the aggregates. Definitions: docs/metrics.md.</p>\n";
}

std::string chart(const Scores& s) {
  std::vector<html::Series> series;
  for (int k : s.settings.ks) {
    html::Series one{"k = " + std::to_string(k), {}};
    for (const CurvePoint& c : s.curve)
      if (c.k == k) one.values.push_back(c.value);
    series.push_back(std::move(one));
  }
  return html::curve_svg(s.settings.thresholds, series, "fast_p@k");
}

Cell estimate_cell(const AtK& x, bool unknown) {
  if (unknown) return html::number_cell(std::nullopt, 3);
  Cell c = html::number_cell(x.value, 3, x.k_used < x.k && x.k_used ? "*" : "");
  if (x.k_used < x.k && x.k_used) c.title = "estimated at k = n = " + std::to_string(x.k_used) + ": a lower bound";
  return c;
}

std::vector<Column> problem_columns(const ScoreSettings& st) {
  std::vector<Column> cols = {
      {"id", "id"}, {"problem", "problem", false}, {"category", "category", false}, {"n", "n"}, {"c", "c"}};
  for (int k : st.ks) cols.push_back({"pass_at_" + std::to_string(k), "pass@" + std::to_string(k)});
  for (int k : st.ks)
    cols.push_back({fast_name(st) + "_at_" + std::to_string(k), fast_name(st) + "@" + std::to_string(k)});
  for (Column c : std::initializer_list<Column>{{"best_speedup", "best speedup"},
                                                {"geomean_speedup", "geomean speedup"},
                                                {"sol_candidate_pct", "SOL% cand"},
                                                {"sol_baseline_pct", "SOL% base"},
                                                {"failures", "failures", false},
                                                {"not_evaluated", "not evaluated"}})
    cols.push_back(std::move(c));
  return cols;
}

std::vector<Cell> problem_row(const ProblemScore& p) {
  bool unknown = p.n == 0 && !p.fully_evaluated();
  Cell name = html::text_cell(p.slug.empty() ? p.folder : p.slug);
  name.title = p.folder;
  std::vector<Cell> row = {html::number_cell(p.id, 0), name, html::text_cell(p.category), html::number_cell(p.n, 0),
                           html::number_cell(p.c_robust, 0)};
  for (const auto* xs : {&p.pass_robust, &p.fast})
    for (const AtK& x : *xs) row.push_back(estimate_cell(x, unknown));
  row.push_back(html::number_cell(p.best_speedup, 2, "x"));
  row.push_back(html::number_cell(p.geomean_speedup(), 2, "x"));
  row.push_back(html::number_cell(percent(p.sol_candidate), 1));
  row.push_back(html::number_cell(percent(p.sol_baseline), 1));
  Cell failures = html::text_cell(failures_text(p.failures));
  if (p.missing) failures.text = "missing: no record", failures.title = "in the run's selection; counts 0";
  row.push_back(failures);
  Cell skipped = html::number_cell(p.not_evaluated, 0);
  if (p.not_evaluated) skipped.css_class = "skipped", skipped.title = "left out of the aggregates";
  row.push_back(skipped);
  return row;
}

std::vector<Column> category_columns(const ScoreSettings& st) {
  std::vector<Column> cols = {
      {"category", "category", false}, {"problems", "problems"}, {"samples", "samples"}, {"correct", "correct"}};
  for (int k : st.ks) cols.push_back({"pass_at_" + std::to_string(k), "pass@" + std::to_string(k)});
  for (int k : st.ks)
    cols.push_back({fast_name(st) + "_at_" + std::to_string(k), fast_name(st) + "@" + std::to_string(k)});
  for (Column c : std::initializer_list<Column>{{"geomean_speedup", "geomean speedup"},
                                                {"sol_candidate_pct", "SOL% cand"},
                                                {"sol_baseline_pct", "SOL% base"},
                                                {"failures", "failures", false},
                                                {"not_evaluated", "not evaluated"}})
    cols.push_back(std::move(c));
  return cols;
}

std::vector<Cell> category_row(const std::string& name, const Aggregate& a) {
  std::vector<Cell> row = {html::text_cell(name), html::number_cell(a.problems, 0), html::number_cell(a.samples, 0),
                           html::number_cell(a.correct, 0)};
  for (const auto* sums : {&a.pass_robust, &a.fast})
    for (double sum : *sums) {
      if (a.problems == 0) {  // every problem of the set was left out: no estimate
        row.push_back(html::number_cell(std::nullopt, 3));
        continue;
      }
      Cell c = html::number_cell(a.mean(sum), 3);
      c.text += " (" + fixed(sum, 2) + "/" + std::to_string(a.problems) + ")";
      row.push_back(c);
    }
  row.push_back(html::number_cell(a.geomean_speedup(), 2, "x"));
  row.push_back(html::number_cell(percent(a.sol_candidate), 1));
  row.push_back(html::number_cell(percent(a.sol_baseline), 1));
  row.push_back(html::text_cell(failures_text(a.failures)));
  row.push_back(html::number_cell(a.not_evaluated, 0));
  return row;
}

// Every problem's best robust-correct speedup; the others say how their samples ended.
std::string speedup_bars(const Scores& s) {
  std::vector<html::Bar> bars;
  for (const auto& p : s.problems) {
    html::Bar b{p.folder, p.best_speedup, ""};
    if (!b.speedup)
      b.note = p.missing                     ? "no record"
               : p.n == 0 && p.not_evaluated ? std::to_string(p.not_evaluated) + " not evaluated (no GPU)"
               : p.n == 0                    ? "no samples"
               : p.c_robust > 0              ? "correct, no speedup (not timed, or ranks shared a GPU)"
                                             : "no correct sample: " + failures_text(p.failures);
    bars.push_back(std::move(b));
  }
  return html::speedup_bars_svg(bars);
}

}  // namespace

std::string report_html(const Scores& s, const LoadedResults& loaded) {
  std::string label = run_label(loaded);
  std::ostringstream body;
  body << "<h1>pkb report: " << escape(label) << "</h1>\n";
  if (std::string none = no_samples_notice(s, loaded); !none.empty()) {  // nothing to score: no estimate shown
    body << "<div class=\"notice\" id=\"no-samples\">" << escape(none) << ". Nothing is scored.</div>\n";
    body << "<h2>Run</h2>\n" << run_items(s, loaded) << warnings_block(loaded);
    return html::page("pkb report: " + label, body.str());
  }
  body << notices(s, loaded);
  body << "<h2>Headline</h2>\n" << headline(s) << counts_items(s, loaded);
  body << "<h2>fast_p@k against the speedup threshold</h2>\n" << chart(s);
  body << turns_html(s) << agent_html(s);
  std::vector<std::vector<Cell>> rows;
  for (const auto& p : s.problems) rows.push_back(problem_row(p));
  body << "<h2>Problems</h2>\n<p class=\"note\">Click a header to sort. * estimated at k = n (fewer than k samples):"
       << " a lower bound.</p>\n"
       << html::sortable_table("problems", problem_columns(s.settings), rows);
  rows.clear();
  rows.push_back(category_row("all", s.overall));
  for (const auto& [name, a] : s.by_category) rows.push_back(category_row(name, a));
  body << "<h2>By category</h2>\n" << html::sortable_table("categories", category_columns(s.settings), rows);
  body << "<h2>Best speedup by problem</h2>\n" << speedup_bars(s);
  body << "<h2>Run</h2>\n" << warnings_block(loaded) << settings_block(s, loaded);
  return html::page("pkb report: " + label, body.str());
}

}  // namespace pkb::scoring
