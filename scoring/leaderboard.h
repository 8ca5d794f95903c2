// The leaderboard: several run directories (each results.jsonl, maybe manifest.json) rescored with one set of
// settings, so that every entry is measured the same way, and ranked. Writers: leaderboard.json
// ("pkb.leaderboard/1", docs/metrics.md) and a self-contained leaderboard.html beside it.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scoring/aggregate.h"

namespace pkb::scoring {

struct LeaderboardEntry {
  std::string run_dir;  // as given on the command line
  std::string model;    // manifest.json's "model", else the directory's name
  std::string label;    // the model, or "model (directory name)" where entries share a model
  LoadedResults loaded;
  Scores scores;
};

struct Leaderboard {
  ScoreSettings settings;                 // ks always holds 1: the ranking is by @1
  std::vector<LeaderboardEntry> entries;  // best first
  std::vector<std::string> mixed;         // settings the entries differ in (only with allow_mixed)
};

// What must be equal for two runs to be ranked together: the problems scored, W, dtype, device, GPU, timing
// method (trials, warmup, iters) and baseline kind, each as the distinct values the run's records hold, and the
// turns of refinement the run allowed (single-turn and multi-turn runs are kept apart).
nlohmann::ordered_json comparable_settings(const LeaderboardEntry& e);

// Loads and scores each run directory. Throws pkb::Error naming the directory when it holds no results.jsonl
// or no well-formed record. Ranked by fast_1@1 mean, then pass@1 mean, then geomean speedup (all descending),
// then label; k = 1 is added to settings.ks when missing. Runs whose comparable_settings differ are refused
// (pkb::Error naming the setting and two runs) unless allow_mixed; then `mixed` names what differs.
Leaderboard build_leaderboard(const std::vector<std::filesystem::path>& run_dirs, ScoreSettings settings,
                              bool allow_mixed = false);

nlohmann::ordered_json leaderboard_json(const Leaderboard& board);
std::string leaderboard_html(const Leaderboard& board);

// Writes json_path and, beside it, the same name with extension .html (leaderboard.json -> leaderboard.html).
void write_leaderboard(const Leaderboard& board, const std::filesystem::path& json_path);

}  // namespace pkb::scoring
