// pkb report RESULTS_DIR_OR_JSONL [-o OUT_DIR] [--k 1,3] [--thresholds 0,1,2]
// Scores the records `pkb eval` and `pkb run` appended to results.jsonl and writes report.json, summary.md,
// curves.csv and report.html (docs/metrics.md), with manifest.json's run metadata when one lies beside the
// results. Malformed lines are skipped with a warning on stderr.
// Exit codes: 0 report written, 2 usage or input error (unreadable file, no well-formed record).
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "scoring/report.h"

namespace pkb::cli {
namespace {

struct ReportOptions {
  std::string input;
  std::string out_dir;  // default: the results directory
  scoring::ScoreSettings settings;
};

int run_report(const ReportOptions& o) {
  namespace fs = std::filesystem;
  scoring::LoadedResults loaded = scoring::load_results(o.input);
  for (const auto& w : loaded.warnings) std::cerr << "pkb: warning: " << w << "\n";
  if (loaded.records == 0) throw Error(o.input + ": no well-formed pkb.result/1 record");
  fs::path out = !o.out_dir.empty() ? fs::path(o.out_dir)
                 : fs::is_directory(o.input) ? fs::path(o.input)
                                             : fs::absolute(o.input).parent_path();
  scoring::Scores scores = scoring::score(loaded, o.settings);
  scoring::write_report(scores, loaded, out);
  std::cerr << "scored " << loaded.records << " records (" << loaded.malformed << " malformed lines skipped) over "
            << scores.problems.size() << " problems; wrote report.json, summary.md, curves.csv, report.html to "
            << out.string() << "\n";
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Score results.jsonl: pass@k, fast_p@k, curves, summary table");
  cmd->add_option("input", o->input, "Results directory (holding results.jsonl) or a .jsonl file")->required();
  cmd->add_option("-o,--out", o->out_dir, "Where to write the report (default: the results directory)");
  cmd->add_option("--k", o->settings.ks, "Comma-separated k values")->delimiter(',')->check(CLI::PositiveNumber);
  cmd->add_option("--timing-method", o->settings.timing_method,
                  "Score the speedups of this timing method (pkb or paper; default: as each record chose)")
      ->check(CLI::IsMember({"pkb", "paper"}));
  cmd->add_option("--thresholds", o->settings.thresholds, "Comma-separated speedup thresholds p of the curve")
      ->delimiter(',')->check(CLI::NonNegativeNumber);
  cmd->callback([o, &action] { action = [o] { return run_report(*o); }; });
}

}  // namespace pkb::cli
