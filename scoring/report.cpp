#include "scoring/report.h"

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/files.h"
#include "scoring/format.h"
#include "scoring/html.h"

namespace pkb::scoring {
namespace {

using ojson = nlohmann::ordered_json;

ojson failures_json(const std::map<std::string, int>& failures) {
  ojson out = ojson::object();
  for (const auto& [kind, n] : ordered_failures(failures)) out[kind] = n;
  return out;
}

// ---- report.json

// A problem with no sample because its evaluations were skipped has no estimate (null), not a 0.
ojson at_k_json(const std::vector<AtK>& xs, bool unknown) {
  ojson out = ojson::array();
  for (const AtK& x : xs)
    out.push_back({{"k", x.k}, {"k_used", x.k_used}, {"value", unknown ? ojson(nullptr) : ojson(x.value)}});
  return out;
}

ojson sums_json(const Aggregate& a, const std::vector<double>& sums, const std::vector<int>& ks) {
  ojson out = ojson::array();
  for (size_t i = 0; i < ks.size(); ++i)
    out.push_back({{"k", ks[i]}, {"mean", a.mean(sums[i])}, {"count", sums[i]}, {"out_of", a.problems}});
  return out;
}

ojson problem_json(const ProblemScore& p, bool no_samples) {
  bool unknown = no_samples || (p.n == 0 && !p.fully_evaluated());
  return {{"id", p.id},
          {"slug", p.slug},
          {"folder", p.folder},
          {"category", p.category},
          {"n", p.n},
          {"c", p.c_robust},
          {"c_pkb", p.c_pkb},
          {"c_fast", p.c_fast},
          {"generation_failed", p.generation_failed},
          {"not_evaluated", p.not_evaluated},
          {"harness_errors", p.harness_errors},
          {"contended", p.contended},
          {"host_drift", p.host_drift},
          {"below_roofline", p.below_roofline},
          {"shared_gpu", p.shared_gpu},
          {"missing", p.missing},
          {"failures", failures_json(p.failures)},
          {"pass_at_k", at_k_json(p.pass_robust, unknown)},
          {"pkb_pass_at_k", at_k_json(p.pass_pkb, unknown)},
          {"fast_p_at_k", at_k_json(p.fast, unknown)},
          {"best_speedup", null_or(p.best_speedup)},
          {"geomean_speedup", null_or(p.geomean_speedup())},
          {"sol_candidate_pct", null_or(percent(p.sol_candidate))},
          {"sol_baseline_pct", null_or(percent(p.sol_baseline))}};
}

// ---- summary.md

std::string estimate_text(const AtK& x, bool unknown) {
  if (unknown) return "-";
  return fixed(x.value, 3) + (x.k_used < x.k && x.k_used ? "*" : "");
}

std::string aggregate_cell(const Aggregate& a, double sum) {
  if (a.problems == 0) return "-";  // every problem of the set was left out: no estimate
  return or_dash(a.evaluated_mean(sum), 3) + " (" + fixed(sum, 2) + "/" + std::to_string(a.problems) + ")";
}

// The metric columns shared by both tables, in order: pass@k, pkb pass@k, fast_p@k per k.
std::string metric_headers(const ScoreSettings& st) {
  std::string h;
  for (const char* prefix : {"pass", "pkb pass"})
    for (int k : st.ks) h += std::string(" ") + prefix + "@" + std::to_string(k) + " |";
  for (int k : st.ks) h += " " + fast_name(st) + "@" + std::to_string(k) + " |";
  return h;
}

std::string tail_cells(const std::optional<double>& geomean, const Mean& cand, const Mean& base) {
  return " " + or_dash(geomean, 2, "x") + " | " + or_dash(percent(cand), 1) + " | " + or_dash(percent(base), 1) + " |";
}

std::string problem_row(const ProblemScore& p, bool with_skipped_column) {
  std::string row =
      "| " + p.folder + " | " + p.category + " | " + std::to_string(p.n) + " | " + std::to_string(p.c_robust) + " |";
  bool unknown = p.n == 0 && !p.fully_evaluated();
  for (const auto* xs : {&p.pass_robust, &p.pass_pkb, &p.fast})
    for (const AtK& x : *xs) row += " " + estimate_text(x, unknown) + " |";
  row += " " + or_dash(p.best_speedup, 2, "x") + " |" +
         tail_cells(p.geomean_speedup(), p.sol_candidate, p.sol_baseline) + " " +
         (p.missing ? std::string("missing: no record") : failures_text(p.failures)) + " |";
  return with_skipped_column ? row + " " + std::to_string(p.not_evaluated) + " |" : row;
}

std::string aggregate_row(const std::string& name, const Aggregate& a) {
  std::string row = "| " + name + " | " + std::to_string(a.problems) + " | " + std::to_string(a.samples) + " | " +
                    std::to_string(a.correct) + " |";
  for (const auto* sums : {&a.pass_robust, &a.pass_pkb, &a.fast})
    for (double sum : *sums) row += " " + aggregate_cell(a, sum) + " |";
  return row + tail_cells(a.geomean_speedup(), a.sol_candidate, a.sol_baseline) + " " + failures_text(a.failures) +
         " |";
}

std::string separator(size_t text_columns, size_t number_columns) {
  std::string s = "|";
  for (size_t i = 0; i < text_columns; ++i) s += "---|";
  for (size_t i = 0; i < number_columns; ++i) s += "--:|";
  return s;
}

std::string plural(int count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

std::string folder_list(const std::vector<std::string>& folders) {
  std::string out;
  for (const auto& f : folders) out += " " + f;
  return out;
}

}  // namespace

std::string timing_method_text(const Scores& s, const LoadedResults& loaded) {
  if (!s.settings.timing_method.empty()) return s.settings.timing_method;
  std::string out;
  if (loaded.settings.contains("timing_method"))
    for (const auto& m : loaded.settings["timing_method"]) out += (out.empty() ? "" : "+") + m.get<std::string>();
  return out.empty() ? "pkb" : out;
}

ojson aggregate_json(const Aggregate& a, const std::vector<int>& ks) {
  return {{"problems", a.problems},
          {"without_samples", a.without_samples},
          {"samples", a.samples},
          {"correct", a.correct},
          {"generation_failed", a.generation_failed},
          {"not_evaluated", a.not_evaluated},
          {"harness_errors", a.harness_errors},
          {"contended", a.contended},
          {"host_drift", a.host_drift},
          {"below_roofline", a.below_roofline},
          {"shared_gpu", a.shared_gpu},
          {"not_fully_evaluated", a.not_fully_evaluated},
          {"missing", a.missing},
          {"failures", failures_json(a.failures)},
          {"pass_at_k", sums_json(a, a.pass_robust, ks)},
          {"pkb_pass_at_k", sums_json(a, a.pass_pkb, ks)},
          {"fast_p_at_k", sums_json(a, a.fast, ks)},
          {"geomean_speedup", null_or(a.geomean_speedup())},
          {"sol_candidate_pct", null_or(percent(a.sol_candidate))},
          {"sol_baseline_pct", null_or(percent(a.sol_baseline))}};
}

ojson settings_json(const ScoreSettings& st) {
  return {{"ks", st.ks},
          {"thresholds", st.thresholds},
          {"headline_p", st.headline_p},
          {"policies", {"robust", "pkb"}},
          {"timing_method", st.timing_method.empty() ? "as recorded" : st.timing_method}};
}

ojson curves_json(const Scores& s) {
  ojson out = ojson::array();
  for (const auto& c : s.curve) out.push_back({{"p", c.p}, {"k", c.k}, {"fast_p_at_k", c.value}});
  return out;
}

std::string run_label(const LoadedResults& loaded) {
  if (loaded.run.is_object() && loaded.run.contains("model") && loaded.run["model"].is_string())
    return loaded.run["model"].get<std::string>();
  return loaded.source;
}

std::string skipped_evaluations_notice(const Scores& s) {
  const Aggregate& a = s.overall;
  if (a.not_evaluated == 0) return "";
  bool one = a.not_fully_evaluated == 1;
  const int no_gpu = a.not_evaluated - a.harness_errors;
  std::string why;
  if (no_gpu)
    why = plural(no_gpu, "GPU evaluation was", "GPU evaluations were") +
          " skipped: no GPU on this machine. The candidates were compiled but not evaluated; ";
  if (a.harness_errors)
    why += plural(a.harness_errors, "evaluation", "evaluations") +
           " ended in a harness error (pkb's own reference pass failed: no verdict on the candidate; the same pkb run "
           "command evaluates them again); ";
  return why + plural(a.not_fully_evaluated, "problem", "problems") + " with skipped evaluations " +
         (one ? "is listed with its count but left out" : "are listed with their counts but left out") +
         " of the aggregates and the curve.";
}

std::string no_samples_notice(const Scores& s, const LoadedResults& loaded) {
  int samples = 0;
  for (const auto& p : s.problems) samples += p.n;
  if (samples > 0 || s.overall.not_evaluated > 0) return "";
  const nlohmann::json* why = nullptr;
  if (loaded.run.is_object() && loaded.run.contains("model_api_failure") && loaded.run["model_api_failure"].is_string())
    why = &loaded.run["model_api_failure"];
  return why ? "no samples: the model API failed: " + why->get<std::string>() : "no samples";
}

ojson report_json(const Scores& s, const LoadedResults& loaded) {
  const auto& st = s.settings;
  ojson j = {{"schema", "pkb.report/1"},
             {"run", ojson(loaded.run)},
             {"settings", settings_json(st)},
             {"timing_method", timing_method_text(s, loaded)},
             {"input",
              {{"records", loaded.records},
               {"malformed", loaded.malformed},
               {"duplicates", loaded.duplicates},
               {"warnings", loaded.warnings}}},
             {"fingerprint", loaded.fingerprint},
             {"configurations", loaded.configurations}};
  std::string no_samples = no_samples_notice(s, loaded);
  j["no_samples"] = no_samples.empty() ? ojson() : ojson(no_samples);
  j["problems"] = ojson::array();
  for (const auto& p : s.problems) j["problems"].push_back(problem_json(p, !no_samples.empty()));
  j["without_samples"] = s.without_samples;
  j["missing"] = s.missing;
  j["not_fully_evaluated"] = s.not_fully_evaluated;
  j["aggregate"] = no_samples.empty() ? aggregate_json(s.overall, st.ks) : ojson();  // nothing to average
  j["by_category"] = ojson::object();
  for (const auto& [name, a] : s.by_category)
    if (no_samples.empty()) j["by_category"][name] = aggregate_json(a, st.ks);
  j["curves"] = no_samples.empty() ? curves_json(s) : ojson::array();
  if (!s.turns.empty()) j["turns"] = turns_json(s);
  if (!s.steps.empty()) j["agent"] = agent_json(s);
  return j;
}

std::string shared_gpu_notice(const Scores& s) {
  const Aggregate& a = s.overall;
  if (a.shared_gpu == 0) return "";
  const std::string why =
      "(gpu_sharing: more ranks than GPUs, as on a one-GPU machine): verdicts are functional "
      "checks, and times measure contention, so no speedup or SOL% is recorded";
  if (a.shared_gpu >= a.samples - a.generation_failed)
    return "No speedups are claimed: the ranks of every evaluated sample (" + std::to_string(a.shared_gpu) +
           ") shared a GPU " + why + " and no sample counts as fast.";
  return "No speedups are claimed for " + std::to_string(a.shared_gpu) + " of " +
         std::to_string(a.samples - a.generation_failed) + " evaluated samples: their ranks shared a GPU " + why +
         " for them, and they count as not fast.";
}

std::string below_roofline_notice(const Scores& s) {
  const int n = s.overall.below_roofline;
  if (n == 0) return "";
  return plural(n, "sample was", "samples were") +
         " timed below the problem's roofline floor (timing.below_roofline): no kernel runs faster than the hardware "
         "allows, so such a time is a timing bug or a forgery. No speedup or SOL% is claimed for " +
         std::string(n == 1 ? "it" : "them") + ", and " + (n == 1 ? "it counts" : "they count") + " as not fast.";
}

std::vector<std::pair<std::string, std::string>> scoring_settings_items(const Scores& s, const LoadedResults& loaded) {
  const auto& st = s.settings;
  std::string ks, thresholds;
  for (int k : st.ks) ks += (ks.empty() ? "" : ", ") + std::to_string(k);
  for (double p : st.thresholds) thresholds += (thresholds.empty() ? "" : ", ") + short_number(p);
  return {{"k", ks},
          {"thresholds", thresholds},
          {"headline p", short_number(st.headline_p)},
          {"timing method", timing_method_text(s, loaded)}};
}

namespace {

void summary_notices(std::ostream& o, const Scores& s) {
  for (const std::string& notice : {shared_gpu_notice(s), below_roofline_notice(s), skipped_evaluations_notice(s)})
    if (!notice.empty()) o << "**" << notice << "**\n\n";
  if (s.overall.host_drift)
    o << "**" << plural(s.overall.host_drift, "correct sample was", "correct samples were")
      << " timed while the host ran more than 1.2x faster or slower than during its baseline's timing "
         "(timing.host_drift): their speedups carry that ratio.**\n\n";
  if (!s.turns.empty())
    o << "Multi-turn run (" << s.turns.size() << " turns): every sample counts as its best turn; per turn: "
      << "\"Turns\" below.\n\n";
}

// The aggregates over every problem and per category: the headline.
void summary_headline(std::ostream& o, const Scores& s, const LoadedResults& loaded) {
  const auto& st = s.settings;
  o << "## Headline\n\npass: correct under the robust check; pkb pass: under the paper's allclose (1e-2); "
    << fast_name(st) << ": robust-correct and speedup > " << short_number(st.headline_p)
    << "x. Speedup and SOL% over robust-correct samples; speedups from the " << timing_method_text(s, loaded)
    << " timing method. Aggregates: mean over problems (sum of per-problem estimates / problems). "
    << "Definitions: docs/metrics.md.\n\n";
  o << "| set | problems | samples | correct |" << metric_headers(st)
    << " geomean | SOL% cand | SOL% base | failures |\n"
    << separator(1, 3 + 3 * st.ks.size() + 3) << "---|\n"
    << aggregate_row("all", s.overall) << "\n";
  for (const auto& [name, a] : s.by_category) o << aggregate_row(name, a) << "\n";
}

// fast_p@k at each threshold p: the curve of report.html as numbers.
void summary_curve(std::ostream& o, const Scores& s) {
  const auto& ks = s.settings.ks;
  o << "\n## fast_p@k against the speedup threshold p\n\n| p |";
  for (int k : ks) o << " fast_p@" << k << " |";
  o << "\n" << separator(0, 1 + ks.size()) << "\n";
  for (double p : s.settings.thresholds) {
    o << "| " << short_number(p) << " |";
    for (int k : ks)
      for (const CurvePoint& c : s.curve)
        if (c.p == p && c.k == k) o << " " << fixed(c.value, 3) << " |";
    o << "\n";
  }
}

void summary_problems(std::ostream& o, const Scores& s) {
  const auto& st = s.settings;
  bool skipped = s.overall.not_evaluated > 0;
  o << "\n## Problems\n\n| problem | category | n | c |" << metric_headers(st)
    << " best | geomean | SOL% cand | SOL% base | failures |" << (skipped ? " not evaluated |" : "") << "\n"
    << separator(2, 2 + 3 * st.ks.size() + 4) << "---|" << (skipped ? "--:|" : "") << "\n";
  for (const auto& p : s.problems) o << problem_row(p, skipped) << "\n";
  o << "\nA `*` marks an estimate at k = n (fewer than k samples): a lower bound.\n";
  if (s.overall.generation_failed)
    o << "n includes " << plural(s.overall.generation_failed, "failed generation", "failed generations")
      << " (no usable kernel): failed samples.\n";
  if (!s.missing.empty())
    o << "Problems of the run without any record (count as 0; rerun to retry):" << folder_list(s.missing) << "\n";
  if (s.without_samples.size() > s.missing.size())
    o << "Problems without samples (count as 0):" << folder_list(s.without_samples) << "\n";
  if (!s.not_fully_evaluated.empty())
    o << "Problems with skipped evaluations (left out of the aggregates):" << folder_list(s.not_fully_evaluated)
      << "\n";
}

// Last: what was scored and how; the run's whole manifest is in manifest.json and report.html. Nothing that names
// the results' files, so that a sharded run's merged summary is the unsharded one's to the byte.
void summary_settings(std::ostream& o, const Scores& s, const LoadedResults& loaded) {
  std::vector<std::pair<std::string, std::string>> items = {
      {"records", std::to_string(loaded.records) + " read, " + std::to_string(loaded.malformed) +
                      " malformed lines ignored, " + std::to_string(loaded.duplicates) + " duplicates replaced"},
      {"configuration", html::configurations_text(loaded.configurations)}};
  for (auto& item : scoring_settings_items(s, loaded)) items.push_back(std::move(item));
  for (auto& item : html::fingerprint_items(loaded.fingerprint)) items.push_back(std::move(item));
  o << "\n## Settings\n\n";
  for (const auto& [label, value] : items) o << "- " << label << ": " << value << "\n";
}

}  // namespace

std::string summary_md(const Scores& s, const LoadedResults& loaded) {
  std::ostringstream o;
  o << "# pkb scores: " << run_label(loaded) << "\n\n";
  if (std::string none = no_samples_notice(s, loaded); !none.empty()) {  // nothing to score: no estimate shown
    o << "**" << none << "**\n\nNothing is scored.";
    if (!s.missing.empty()) o << " Problems of the run without any record (rerun to retry):" << folder_list(s.missing);
    o << "\n";
    return o.str();
  }
  summary_notices(o, s);
  summary_headline(o, s, loaded);
  summary_curve(o, s);
  summary_problems(o, s);
  o << turns_md(s);
  o << agent_md(s);
  summary_settings(o, s, loaded);
  return o.str();
}

std::string curves_csv(const Scores& s) {
  std::string out = "p,k,fast_p_at_k\n";
  for (const auto& c : s.curve) out += short_number(c.p) + "," + std::to_string(c.k) + "," + fixed(c.value, 6) + "\n";
  return out;
}

void write_report(const Scores& s, const LoadedResults& loaded, const std::filesystem::path& out_dir) {
  std::filesystem::create_directories(out_dir);
  write_file_atomically(out_dir / "report.json", report_json(s, loaded).dump(2) + "\n");
  write_file_atomically(out_dir / "summary.md", summary_md(s, loaded));
  write_file_atomically(out_dir / "curves.csv", curves_csv(s));
  if (!s.steps.empty()) write_file_atomically(out_dir / "agent_steps.csv", agent_csv(s));
  write_file_atomically(out_dir / "report.html", report_html(s, loaded));
}

}  // namespace pkb::scoring
