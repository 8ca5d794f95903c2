// Reporters: each reads a Scores (and the loader's bookkeeping for provenance) and returns text; none runs
// inside an evaluation loop. Formats: report.json ("pkb.report/1", docs/metrics.md), summary.md (the table
// people paste), curves.csv (p, k, fast_p@k), report.html (one self-contained page: no external resources).
// summary.md and report.html read top-down: notices (why no speedup is claimed, skipped evaluations), the
// headline, the fast_p@k curve, the per-problem table, and the settings and provenance last.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scoring/aggregate.h"

namespace pkb::scoring {

// A value, or null where there is none (report.json and leaderboard.json alike).
inline nlohmann::ordered_json null_or(const std::optional<double>& x) {
  return x ? nlohmann::ordered_json(*x) : nlohmann::ordered_json(nullptr);
}

// What a report is about: manifest.json's "model" when `pkb run` wrote one, else the results file's name.
std::string run_label(const LoadedResults& loaded);

// "N GPU evaluations were skipped: no GPU on this machine. ..." when any candidate was not evaluated, else "".
std::string skipped_evaluations_notice(const Scores& s);

// "No speedups are claimed: ..." when any sample was evaluated with ranks sharing a GPU (a one-GPU run), else "".
std::string shared_gpu_notice(const Scores& s);

// "N samples were timed below the roofline floor ..." when any sample's time was (timing.below_roofline: a timing bug
// or a forgery, no speedup claimed, not fast), else "".
std::string below_roofline_notice(const Scores& s);

// How the records were scored, as label/value rows: k, thresholds, headline p, timing method.
std::vector<std::pair<std::string, std::string>> scoring_settings_items(const Scores& s, const LoadedResults& loaded);
// "no samples: the model API failed: <why>" (manifest.json's model_api_failure, which `pkb run` writes when the
// model service left samples unanswered) or "no samples" when no problem has a sample and none was left
// unevaluated; else "". A report without samples states this in place of every estimate: it scores nothing.
std::string no_samples_notice(const Scores& s, const LoadedResults& loaded);

// The timing method the speedups come from: the one scoring was asked for, else the records' ("pkb+paper" when
// records disagree; "pkb" for records from before both methods were recorded).
std::string timing_method_text(const Scores& s, const LoadedResults& loaded);

nlohmann::ordered_json report_json(const Scores& s, const LoadedResults& loaded);
// report.json's "settings", "aggregate" and "curves", shared with the leaderboard.
nlohmann::ordered_json settings_json(const ScoreSettings& st);
nlohmann::ordered_json aggregate_json(const Aggregate& a, const std::vector<int>& ks);
nlohmann::ordered_json curves_json(const Scores& s);
std::string summary_md(const Scores& s, const LoadedResults& loaded);
// The per-turn section of a multi-turn run (report_turns.cpp); empty/[] for a single-turn run.
nlohmann::ordered_json turns_json(const Scores& s);
std::string turns_md(const Scores& s);
std::string turns_html(const Scores& s);
// The step-budget section of an agent run (report_agent.cpp); null/"" for other runs. agent_csv: the curve's points
// (agent_steps.csv: steps, k, pass@k, fast_p@k), written only for agent runs.
nlohmann::ordered_json agent_json(const Scores& s);
std::string agent_md(const Scores& s);
std::string agent_csv(const Scores& s);
std::string agent_html(const Scores& s);  // report.html's section: the curve over step budgets and its table
std::string curves_csv(const Scores& s);
std::string report_html(const Scores& s, const LoadedResults& loaded);

// Writes the four files into out_dir (created if needed). They are derived from results.jsonl and
// deterministic, so a rerun replaces them rather than suffixing: the records are the run's history.
void write_report(const Scores& s, const LoadedResults& loaded, const std::filesystem::path& out_dir);

}  // namespace pkb::scoring
