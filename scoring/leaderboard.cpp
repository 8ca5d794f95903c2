#include "scoring/leaderboard.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.h"
#include "core/files.h"
#include "scoring/format.h"
#include "scoring/html.h"
#include "scoring/merge.h"
#include "scoring/report.h"

namespace pkb::scoring {
namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using html::Cell;
using html::Column;
using html::escape;

// Where k = 1 sits in settings.ks (build_leaderboard guarantees it is there).
size_t at_k1(const ScoreSettings& st) {
  return static_cast<size_t>(std::find(st.ks.begin(), st.ks.end(), 1) - st.ks.begin());
}

std::string directory_name(const fs::path& dir) {
  fs::path p = fs::absolute(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "runs/a/" names "a"
  return p.filename().string();
}

LeaderboardEntry load_entry(const fs::path& dir, const ScoreSettings& st) {
  bool shards = !fs::exists(dir / "results.jsonl") && !shard_subdirectories(dir).empty();  // pkb run --shard
  if (!shards && !fs::is_regular_file(dir / "results.jsonl"))
    throw Error(dir.string() + ": no results.jsonl and no shard-I-of-N directories (not a run directory)");
  LeaderboardEntry e;
  e.run_dir = dir.string();
  e.loaded = load_run(dir);
  if (e.loaded.records == 0) throw Error((dir / "results.jsonl").string() + ": no well-formed pkb.result/1 record");
  const nlohmann::json& run = e.loaded.run;
  bool named = run.is_object() && run.contains("model") && run["model"].is_string();
  e.model = named ? run["model"].get<std::string>() : directory_name(dir);
  e.scores = score(e.loaded, st);
  return e;
}

// Entries that share a model keep it and add their directory's name; if even that is shared, the path as given.
void assign_labels(std::vector<LeaderboardEntry>& entries) {
  std::map<std::string, int> per_model, per_label;
  for (const auto& e : entries) ++per_model[e.model];
  for (auto& e : entries) {
    e.label = per_model[e.model] > 1 ? e.model + " (" + directory_name(e.run_dir) + ")" : e.model;
    ++per_label[e.label];
  }
  for (auto& e : entries)
    if (per_label[e.label] > 1) e.label = e.model + " (" + e.run_dir + ")";
}

// fast_1@1 mean, pass@1 mean, geomean speedup (none ranks below any), each higher first; then the label.
auto rank_key(const LeaderboardEntry& e, size_t k1) {
  const Aggregate& a = e.scores.overall;
  return std::make_tuple(-a.mean(a.fast[k1]), -a.mean(a.pass_robust[k1]), -a.geomean_speedup().value_or(0.0),
                         std::cref(e.label));
}

ojson compact_problem(const ProblemScore& p, size_t k1, const ScoreSettings& st) {
  bool unknown = p.n == 0 && !p.fully_evaluated();
  auto estimate = [&](const std::vector<AtK>& xs) { return unknown ? ojson(nullptr) : ojson(xs[k1].value); };
  return {{"id", p.id},
          {"folder", p.folder},
          {"n", p.n},
          {"c", p.c_robust},
          {"not_evaluated", p.not_evaluated},
          {"pass_at_1", estimate(p.pass_robust)},
          {fast_name(st) + "_at_1", estimate(p.fast)},
          {"best_speedup", null_or(p.best_speedup)}};
}

// The settings the entries do not share; throws unless allow_mixed.
std::vector<std::string> differing_settings(const std::vector<LeaderboardEntry>& entries, bool allow_mixed) {
  std::vector<std::string> mixed;
  if (entries.empty()) return mixed;
  ojson first = comparable_settings(entries.front());
  std::string why;
  for (const auto& [field, value] : first.items())
    for (const auto& e : entries) {
      ojson other = comparable_settings(e)[field];
      // A run whose records never say (no correct sample: no baseline measured) does not contradict another.
      bool unknown = field != "problems" && (other.empty() || value.empty());
      if (other == value || unknown) continue;
      mixed.push_back(field);
      why += "; " + field + ": " + entries.front().label + " has " + value.dump() + ", " + e.label + " has " +
             other.dump();
      break;
    }
  if (!mixed.empty() && !allow_mixed)
    throw Error("the runs are not comparable" + why + " (pass --allow-mixed to rank them anyway)");
  return mixed;
}

ojson entry_json(const LeaderboardEntry& e, int rank, const ScoreSettings& st) {
  const LoadedResults& l = e.loaded;
  ojson j = {
      {"rank", rank},
      {"model", e.model},
      {"label", e.label},
      {"run_dir", e.run_dir},
      {"run", ojson(l.run)},
      {"fingerprint", l.fingerprint},
      {"configurations", l.configurations},
      {"settings", comparable_settings(e)},
      {"input",
       {{"records", l.records}, {"malformed", l.malformed}, {"duplicates", l.duplicates}, {"warnings", l.warnings}}},
      {"aggregate", aggregate_json(e.scores.overall, st.ks)}};
  j["by_category"] = ojson::object();
  for (const auto& [name, a] : e.scores.by_category) j["by_category"][name] = aggregate_json(a, st.ks);
  j["problems"] = ojson::array();
  for (const auto& p : e.scores.problems) j["problems"].push_back(compact_problem(p, at_k1(st), st));
  j["curves"] = curves_json(e.scores);
  return j;
}

// ---- leaderboard.html

std::string fingerprint_value(const nlohmann::json& fingerprint, const char* key) {
  return fingerprint.contains(key) ? html::distinct_values(fingerprint[key]) : "unknown";
}

std::string ranking_table(const Leaderboard& board) {
  const ScoreSettings& st = board.settings;
  size_t k1 = at_k1(st);
  std::string fast1 = fast_name(st) + "@1";
  std::vector<Column> cols = {{"rank", "rank"},
                              {"model", "model", false},
                              {"run_dir", "run directory", false},
                              {"configuration", "configuration", false},
                              {"gpu", "GPU", false},
                              {"problems", "problems"},
                              {"samples", "samples"},
                              {fast_name(st) + "_at_1", fast1},
                              {"pass_at_1", "pass@1"},
                              {"pkb_pass_at_1", "pkb pass@1"},
                              {"geomean_speedup", "geomean speedup"},
                              {"sol_candidate_pct", "SOL% cand"},
                              {"sol_baseline_pct", "SOL% base"},
                              {"failures", "failures", false},
                              {"not_evaluated", "not evaluated"}};
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < board.entries.size(); ++i) {
    const LeaderboardEntry& e = board.entries[i];
    const Aggregate& a = e.scores.overall;
    auto estimate = [&](double sum) {
      Cell c = html::number_cell(a.mean(sum), 3);
      c.title = fixed(sum, 2) + " out of " + std::to_string(a.problems) + " problems";
      return c;
    };
    rows.push_back({html::number_cell(static_cast<double>(i + 1), 0), html::text_cell(e.label),
                    html::text_cell(e.run_dir), html::text_cell(html::configurations_text(e.loaded.configurations)),
                    html::text_cell(fingerprint_value(e.loaded.fingerprint, "gpu")), html::number_cell(a.problems, 0),
                    html::number_cell(a.samples, 0), estimate(a.fast[k1]), estimate(a.pass_robust[k1]),
                    estimate(a.pass_pkb[k1]), html::number_cell(a.geomean_speedup(), 2, "x"),
                    html::number_cell(percent(a.sol_candidate), 1), html::number_cell(percent(a.sol_baseline), 1),
                    html::text_cell(failures_text(a.failures)), html::number_cell(a.not_evaluated, 0)});
  }
  return html::sortable_table("ranking", cols, rows);
}

// One row per run: what it was measured under, so a reader sees that the ranked runs are comparable.
std::string settings_table(const Leaderboard& board) {
  std::vector<Column> cols = {
      {"model", "model", false},   {"problems", "problems"},        {"world", "W", false},
      {"dtype", "dtype", false},   {"device", "device", false},     {"gpu", "GPU", false},
      {"timing", "timing", false}, {"baseline", "baseline", false}, {"candidate_process", "candidate process", false},
      {"turns", "turns"}};
  std::vector<std::vector<Cell>> rows;
  auto values = [](const ojson& v) {
    std::string out;
    for (const auto& x : v) {
      std::string one = x.is_string() ? x.get<std::string>() : x.is_object() ? "" : x.dump();
      if (x.is_object())
        for (const auto& [k, y] : x.items()) one += (one.empty() ? "" : " ") + k + " " + y.dump();
      out += (out.empty() ? "" : "; ") + one;
    }
    return out.empty() ? std::string("unknown") : out;
  };
  for (const auto& e : board.entries) {
    ojson c = comparable_settings(e);
    rows.push_back({html::text_cell(e.label), html::number_cell(static_cast<double>(c["problems"].size()), 0),
                    html::text_cell(values(c["world"])), html::text_cell(values(c["dtype"])),
                    html::text_cell(values(c["device"])), html::text_cell(values(c["gpu"])),
                    html::text_cell(values(c["timing"])), html::text_cell(values(c["baseline"])),
                    html::text_cell(values(c["candidate_process"])),
                    html::number_cell(c["turns"][0].get<double>(), 0)});
  }
  return html::sortable_table("settings", cols, rows);
}

std::string combined_chart(const Leaderboard& board) {
  std::vector<html::Series> series;
  for (const auto& e : board.entries) {
    html::Series one{e.label, {}};
    for (const CurvePoint& c : e.scores.curve)
      if (c.k == 1) one.values.push_back(c.value);
    series.push_back(std::move(one));
  }
  return html::curve_svg(board.settings.thresholds, series, fast_name(board.settings) + "@1");
}

// One cell of the problem x model matrix: the best speedup where a sample was correct, else what happened.
Cell matrix_cell(const ProblemScore* p, double headline_p) {
  if (!p) return Cell{"-", std::nullopt, "absent", "not in this run"};
  std::string counts = std::to_string(p->c_robust) + "/" + std::to_string(p->n) + " correct";
  if (p->not_evaluated) counts += ", " + std::to_string(p->not_evaluated) + " not evaluated";
  if (p->best_speedup)
    return Cell{fixed(*p->best_speedup, 2) + "x", p->best_speedup, *p->best_speedup > headline_p ? "fast" : "correct",
                counts};
  if (p->c_robust) return Cell{"correct", std::nullopt, "correct", counts + ", no speedup"};
  if (p->n == 0 && p->not_evaluated) return Cell{"not evaluated", std::nullopt, "skipped", counts};
  return Cell{"failed", std::nullopt, "failed", counts};
}

std::string matrix_table(const Leaderboard& board) {
  std::map<std::pair<int, std::string>, std::string> problems;  // (id, folder) -> name, ordered like reports
  for (const auto& e : board.entries)
    for (const auto& p : e.scores.problems) problems[{p.id, p.folder}] = p.slug.empty() ? p.folder : p.slug;
  std::vector<Column> cols = {{"id", "id"}, {"problem", "problem", false}};
  for (size_t i = 0; i < board.entries.size(); ++i)
    cols.push_back({"run_" + std::to_string(i + 1), board.entries[i].label});
  std::vector<std::vector<Cell>> rows;
  for (const auto& problem : problems) {
    const auto& key = problem.first;  // not a structured binding: a lambda below captures it (clang 14)
    const auto& name = problem.second;
    Cell name_cell = html::text_cell(name);
    name_cell.title = key.second;
    std::vector<Cell> row = {html::number_cell(key.first, 0), name_cell};
    for (const auto& e : board.entries) {
      const auto& ps = e.scores.problems;
      auto it = std::find_if(ps.begin(), ps.end(), [&](const ProblemScore& p) { return p.folder == key.second; });
      row.push_back(matrix_cell(it == ps.end() ? nullptr : &*it, board.settings.headline_p));
    }
    rows.push_back(std::move(row));
  }
  return html::sortable_table("matrix", cols, rows);
}

std::string notices(const Leaderboard& board) {
  std::string out;
  for (const auto& e : board.entries) {
    std::string notice = skipped_evaluations_notice(e.scores);
    if (!notice.empty()) out += "<div class=\"notice\">" + escape(e.label) + ": " + escape(notice) + "</div>\n";
    if (!e.loaded.warnings.empty()) {
      out += "<details class=\"warnings\"><summary>" + escape(e.label) + ": " +
             std::to_string(e.loaded.warnings.size()) + " warnings</summary><ul>\n";
      for (const auto& w : e.loaded.warnings) out += "<li>" + escape(w) + "</li>\n";
      out += "</ul></details>\n";
    }
  }
  return out;
}

}  // namespace

ojson comparable_settings(const LeaderboardEntry& e) {
  ojson problems = ojson::array();
  for (const auto& p : e.scores.problems) problems.push_back(p.folder);
  const nlohmann::json& s = e.loaded.settings;
  auto seen = [&](const char* key) { return s.contains(key) ? ojson(s[key]) : ojson::array(); };
  const nlohmann::json& fp = e.loaded.fingerprint;
  // Single-turn and multi-turn runs are different experiments: the turns the run allowed (manifest), else the
  // highest turn recorded.
  const nlohmann::json& run = e.loaded.run;
  int turns = run.is_object() && run.contains("turns") && run["turns"].is_number_integer() ? run["turns"].get<int>()
                                                                                           : max_turn(e.loaded);
  return {{"problems", problems},
          {"world", seen("world")},
          {"dtype", seen("dtype")},
          {"device", seen("device")},
          {"gpu", fp.contains("gpu") ? ojson(fp["gpu"]) : ojson::array()},
          {"timing", seen("timing")},
          {"baseline", seen("baseline")},
          {"candidate_process", seen("candidate_process")},  // on GPUs: the call gate's timing or in process
          {"timing_method", e.scores.settings.timing_method.empty() ? seen("timing_method")
                                                                    : ojson::array({e.scores.settings.timing_method})},
          {"turns", ojson::array({turns})},
          // Agent runs are their own experiment, and so are two agent runs under different budgets.
          {"mode", ojson::array({run.is_object() && run.value("mode", "") == "agent" ? "agent" : "answers"})},
          {"agent_budget",
           run.is_object() && run.contains("agent") ? ojson::array({ojson(run["agent"])}) : ojson::array()}};
}

Leaderboard build_leaderboard(const std::vector<fs::path>& run_dirs, ScoreSettings settings, bool allow_mixed) {
  if (std::find(settings.ks.begin(), settings.ks.end(), 1) == settings.ks.end())
    settings.ks.insert(settings.ks.begin(), 1);
  Leaderboard board;
  board.settings = settings;
  for (const auto& dir : run_dirs) board.entries.push_back(load_entry(dir, settings));
  if (settings.extend_thresholds) {  // one grid for every entry: the curves share an axis
    std::optional<double> largest;
    for (const auto& e : board.entries)
      if (e.scores.largest_speedup) largest = std::max(largest.value_or(0.0), *e.scores.largest_speedup);
    board.settings.thresholds = threshold_grid(settings.thresholds, largest);
    board.settings.extend_thresholds = false;
    for (auto& e : board.entries)
      if (e.scores.settings.thresholds != board.settings.thresholds) e.scores = score(e.loaded, board.settings);
  }
  assign_labels(board.entries);
  board.mixed = differing_settings(board.entries, allow_mixed);
  size_t k1 = at_k1(settings);
  std::stable_sort(board.entries.begin(), board.entries.end(),
                   [&](const auto& x, const auto& y) { return rank_key(x, k1) < rank_key(y, k1); });
  return board;
}

ojson leaderboard_json(const Leaderboard& board) {
  ojson j = {{"schema", "pkb.leaderboard/1"},
             {"settings", settings_json(board.settings)},
             {"comparable", board.mixed.empty()},
             {"mixed", board.mixed}};
  j["entries"] = ojson::array();
  for (size_t i = 0; i < board.entries.size(); ++i)
    j["entries"].push_back(entry_json(board.entries[i], static_cast<int>(i + 1), board.settings));
  return j;
}

std::string leaderboard_html(const Leaderboard& board) {
  const ScoreSettings& st = board.settings;
  std::ostringstream body;
  std::string ks, thresholds;
  for (int k : st.ks) ks += (ks.empty() ? "" : ", ") + std::to_string(k);
  for (double p : st.thresholds) thresholds += (thresholds.empty() ? "" : ", ") + short_number(p);
  body << "<h1>pkb leaderboard</h1>\n<p class=\"note\">" << board.entries.size() << " runs, each rescored from its "
       << "results.jsonl with k = " << escape(ks) << " and thresholds " << escape(thresholds) << ". Ranked by "
       << escape(fast_name(st)) << "@1, then pass@1, then geomean speedup. Definitions: docs/metrics.md.</p>\n"
       << notices(board);
  if (!board.mixed.empty()) {
    std::string fields;
    for (const auto& f : board.mixed) fields += (fields.empty() ? "" : ", ") + f;
    body << "<div class=\"notice\" id=\"mixed\">These runs differ in " << escape(fields)
         << " (ranked anyway: --allow-mixed); their numbers are not directly comparable.</div>\n";
  }
  body << "<h2>Ranking</h2>\n" << ranking_table(board);
  body << "<h2>Settings</h2>\n" << settings_table(board);
  body << "<h2>" << escape(fast_name(st)) << "@1 against the speedup threshold</h2>\n" << combined_chart(board);
  body << "<h2>Problems</h2>\n<p class=\"note\">Best speedup among robust-correct samples; otherwise correct "
       << "(without a speedup), failed, not evaluated, or - (not in that run). Hover for counts.</p>\n"
       << matrix_table(board);
  return html::page("pkb leaderboard", body.str());
}

void write_leaderboard(const Leaderboard& board, const fs::path& json_path) {
  if (json_path.has_parent_path()) fs::create_directories(json_path.parent_path());
  write_file_atomically(json_path, leaderboard_json(board).dump(2) + "\n");
  fs::path html_path = json_path;
  write_file_atomically(html_path.replace_extension(".html"), leaderboard_html(board));
}

}  // namespace pkb::scoring
