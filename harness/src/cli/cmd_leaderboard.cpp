// pkb leaderboard RUN_DIR... [-o leaderboard.json] [--k 1,3] [--thresholds 0,1,2]
// Rescores each run directory's results.jsonl with the same settings, ranks the runs and writes
// leaderboard.json and leaderboard.html beside it (docs/metrics.md). Malformed lines are skipped with a warning.
// Exit codes: 0 leaderboard written, 2 usage or input error (a directory without results.jsonl or without a
// well-formed record, or runs measured under different settings without --allow-mixed).
#include <iostream>

#include "cli/commands.h"
#include "core/timing_method.h"
#include "scoring/leaderboard.h"

namespace pkb::cli {
namespace {

struct LeaderboardOptions {
  std::vector<std::string> run_dirs;
  std::string out = "leaderboard.json";
  scoring::ScoreSettings settings;
  bool allow_mixed = false;
};

int run_leaderboard(const LeaderboardOptions& o) {
  std::vector<std::filesystem::path> dirs(o.run_dirs.begin(), o.run_dirs.end());
  scoring::Leaderboard board = scoring::build_leaderboard(dirs, o.settings, o.allow_mixed);
  for (const auto& e : board.entries)
    for (const auto& w : e.loaded.warnings) std::cerr << "pkb: warning: " << w << "\n";
  scoring::write_leaderboard(board, o.out);
  std::filesystem::path html = o.out;
  std::cerr << "ranked " << board.entries.size() << " runs; wrote " << o.out << " and "
            << html.replace_extension(".html").string() << "\n";
  for (size_t i = 0; i < board.entries.size(); ++i) std::cout << i + 1 << ". " << board.entries[i].label << "\n";
  return 0;
}

}  // namespace

void add_leaderboard_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<LeaderboardOptions>();
  CLI::App* cmd = app.add_subcommand("leaderboard", "Rank several runs: leaderboard.json and leaderboard.html");
  cmd->add_option("run_dirs", o->run_dirs, "Run directories, each holding results.jsonl (and maybe manifest.json)")
      ->required();
  cmd->add_option("-o,--out", o->out, "The JSON to write; the HTML goes beside it (default: leaderboard.json)");
  cmd->add_option("--k", o->settings.ks, "Comma-separated k values (1 is always added)")
      ->delimiter(',')
      ->check(kPositive);
  cmd->add_option("--timing-method", o->settings.timing_method,
                  "Score the speedups of this timing method (pkb, paper or device; default: as each record chose)")
      ->check(CLI::IsMember(timing_method_names()));
  CLI::Option* thresholds =
      cmd->add_option("--thresholds", o->settings.thresholds,
                      "Comma-separated speedup thresholds p (default: 0 to 4 and on to the largest speedup)")
          ->delimiter(',')
          ->check(kNonNegative);
  cmd->add_flag("--allow-mixed", o->allow_mixed,
                "Rank runs that differ in problems, W, dtype, device, GPU, timing or baseline (refused otherwise)");
  cmd->callback([o, thresholds, &action] {
    o->settings.extend_thresholds = thresholds->count() == 0;  // a grid given is the grid drawn
    action = [o] { return run_leaderboard(*o); };
  });
}

}  // namespace pkb::cli
