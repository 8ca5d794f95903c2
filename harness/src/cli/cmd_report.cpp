// pkb report RESULTS_DIR_OR_JSONL... [-o OUT_DIR] [--k 1,3] [--thresholds 0,1,2] [--partial]
// Scores the records `pkb eval` and `pkb run` appended to results.jsonl and writes report.json, summary.md,
// curves.csv and report.html (docs/metrics.md), with manifest.json's run metadata when one lies beside the
// results. Malformed lines are skipped with a warning on stderr. The shards of a run (`pkb run --shard I/N`)
// are scored as that one run (scoring/merge.h): give the run directory that holds the shard-I-of-N
// directories, or the shard directories themselves.
// Exit codes: 0 report written, 2 usage or input error (unreadable file, no well-formed record, shards that
// are not one run or not all there).
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/timing_method.h"
#include "scoring/merge.h"
#include "scoring/report.h"

namespace pkb::cli {
namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string out_dir;  // default: the results directory (for shards: the directory holding them)
  bool partial = false;
  scoring::ScoreSettings settings;
};

// One input is a results file or directory, or a run directory of shards; several are shard directories.
scoring::LoadedResults load(const ReportOptions& o, fs::path& default_out) {
  if (o.inputs.size() == 1) {
    const fs::path in = o.inputs.front();
    default_out = fs::is_directory(in) ? in : fs::absolute(in).parent_path();
    std::vector<fs::path> shards = fs::is_directory(in) && !fs::exists(in / "results.jsonl")
                                       ? scoring::shard_subdirectories(in)
                                       : std::vector<fs::path>{};
    if (!shards.empty()) return scoring::load_shards(shards, o.partial);
    return scoring::load_results(in);
  }
  std::vector<fs::path> dirs(o.inputs.begin(), o.inputs.end());
  // Shards side by side in one run directory: the report goes there, beside them.
  fs::path parent = fs::absolute(dirs.front()).lexically_normal().parent_path();
  bool together = true;
  for (const fs::path& d : dirs) together = together && fs::absolute(d).lexically_normal().parent_path() == parent;
  if (together) default_out = parent;
  return scoring::load_shards(dirs, o.partial);
}

int run_report(const ReportOptions& o) {
  fs::path default_out;
  scoring::LoadedResults loaded = load(o, default_out);
  for (const auto& w : loaded.warnings) std::cerr << "pkb: warning: " << w << "\n";
  if (loaded.records == 0) throw Error(o.inputs.front() + ": no well-formed pkb.result/1 record");
  if (o.out_dir.empty() && default_out.empty())
    throw Error("the shards lie in different directories: say where the report goes with -o DIR");
  fs::path out = o.out_dir.empty() ? default_out : fs::path(o.out_dir);
  scoring::Scores scores = scoring::score(loaded, o.settings);
  scoring::write_report(scores, loaded, out);
  std::cerr << "scored " << loaded.records << " records (" << loaded.malformed << " malformed lines skipped) over "
            << scores.problems.size() << " problems";
  if (loaded.run.is_object() && loaded.run.contains("shards"))
    std::cerr << " from " << loaded.run["shards"].size() << " shards";
  std::cerr << "; wrote report.json, summary.md, curves.csv, report.html to " << out.string() << "\n";
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Score results.jsonl: pass@k, fast_p@k, curves, summary table");
  cmd->add_option("input", o->inputs,
                  "Results directory (holding results.jsonl) or a .jsonl file; a run directory of shards "
                  "(shard-I-of-N/), or several shard directories, to score them as one run")
      ->required();
  cmd->add_option("-o,--out", o->out_dir, "Where to write the report (default: the results directory)");
  cmd->add_option("--k", o->settings.ks, "Comma-separated k values")->delimiter(',')->check(kPositive);
  cmd->add_option("--timing-method", o->settings.timing_method,
                  "Score the speedups of this timing method (pkb, paper or device; default: as each record chose)")
      ->check(CLI::IsMember(timing_method_names()));
  CLI::Option* thresholds =
      cmd->add_option("--thresholds", o->settings.thresholds,
                      "Comma-separated speedup thresholds p (default: 0 to 4 and on to the largest speedup)")
          ->delimiter(',')
          ->check(kNonNegative);
  cmd->add_flag("--partial", o->partial, "Score the shards given even when some of the run's shards are missing");
  cmd->callback([o, thresholds, &action] {
    o->settings.extend_thresholds = thresholds->count() == 0;  // a grid given is the grid drawn
    action = [o] { return run_report(*o); };
  });
}

}  // namespace pkb::cli
