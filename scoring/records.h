// Result records as scoring sees them: one Sample per (problem, sample index), grouped per problem, read through
// the one record type (core/result_record.h) that `pkb run` and `pkb regress` read too. A later record of the
// same sample supersedes the earlier one; identical bytes in two samples are two samples. `pkb eval` writes
// records without a sample index: those are identified by candidate sha256. `pkb run` adds generation
// failures (samples that are never correct) and, without a GPU, candidates that were compiled but not
// evaluated (not samples: kept apart and counted). A status the table does not know counts as a failed
// sample, with a warning: it must never drop out of n (which would raise pass@k).
// Loading never aborts on a bad line: it is skipped, counted and named in a warning, because one truncated
// line (a run killed mid-write) must not hide a whole run's results.
// Multi-turn runs (pkb run --turns): a record is (problem, sample index, turn). `turns` keeps every turn's record;
// `samples` holds one Sample per sample, its best turn (below), so every score of a multi-turn run counts a
// sample solved if any of its turns is; at_turn() gives the same view up to a given turn.
// Limit: records are grouped by problem only; runs at different W/dtype/device in one file are flagged in
// `configurations` and a warning, not separated.
#pragma once

#include <filesystem>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/policy.h"
#include "core/result_record.h"

namespace pkb::scoring {

using pkb::Policy;  // which check decides that a sample is correct (core/policy.h)

struct Sample {
  std::string key;  // ResultRecord::sample_key(): what makes two records the same sample
  std::string sha256, path, status;
  std::string generation_status;  // for status "generation_failed": no_code, truncated or refused
  std::string failure;       // the failure breakdown's bucket (compile, ..., incorrect, no_code, ...); "" if correct
  int index = -1;            // the record's `sample`; -1 when it has none (a bare `pkb eval`)
  int turn = 1;              // the record's `turn` (pkb run --turns); 1 when it has none
  int turns = 1;             // in `samples`: how many turns the sample had up to the view's turn
  bool robust_pass = false;  // status == "correct": every trial and the post-timing check passed
  bool pkb_pass = false;     // checks.pkb_pass: the paper's allclose (atol = rtol = 1e-2)
  std::optional<double> speedup;                       // timing.speedup: baseline median / candidate median (x)
  std::optional<double> sol_candidate;                 // roofline.sol_candidate: floor_us / candidate median (fraction)
  std::optional<double> sol_baseline;                  // the same for the baseline timing.baseline names (fraction)
  std::optional<int64_t> input_tokens, output_tokens;  // generation.*: what this turn's answer used (tokens)
  std::optional<double> cost_usd;                      // generation.cost_usd (USD)
  std::optional<int> agent_steps;                      // pkb run --agent: the tool calls the sample used (agent.steps)

  ResultRecord record;  // the record as read, for readers beyond scoring (pkb regress)

  bool correct(Policy p) const { return p == Policy::robust ? robust_pass : pkb_pass; }
};

struct ProblemSamples {
  int id = 0;
  std::string slug, folder, category;
  std::vector<Sample> samples;        // one per sample, the latest record kept; over turns, the best turn
  std::vector<Sample> not_evaluated;  // status "not_evaluated": compiled, never run; not samples
  bool missing = false;               // in the run's selection (manifest.json) but without any record
  std::vector<Sample> turns{};        // every turn's record (the latest per (sample, turn)); = samples when single-turn
};

struct LoadedResults {
  std::string source;                    // "dir/results.jsonl": names the results in titles when no manifest does
  nlohmann::json run;                    // manifest.json beside the results (written by `pkb run`); null if none
  std::vector<ProblemSamples> problems;  // ordered by id, then folder
  std::vector<std::string> warnings;     // "where: why", one per skipped line or oddity
  int records = 0;                       // well-formed records read
  int malformed = 0;                     // lines skipped
  int duplicates = 0;                    // records replaced by a later one for the same sample
  nlohmann::json fingerprint = nlohmann::json::object();    // provenance field -> distinct values seen
  nlohmann::json configurations = nlohmann::json::array();  // distinct {world, device, dtype}
  // What two runs must share to be ranked together (leaderboard): distinct values seen per setting
  // (world, dtype, device, gpu, timing {trials, warmup, iters}, baseline, and on GPUs candidate_process).
  nlohmann::json settings = nlohmann::json::object();
};

// Reads PATH/results.jsonl (PATH a directory) or PATH itself, and manifest.json beside it when present. Throws
// pkb::Error only when the results file cannot be opened; malformed lines and a bad manifest become warnings.
LoadedResults load_results(const std::filesystem::path& dir_or_jsonl);
LoadedResults parse_results(std::istream& in, const std::string& name);
// Several results files read as one, in order (a later record of a sample supersedes an earlier one).
LoadedResults parse_results(const std::vector<std::pair<std::istream*, std::string>>& inputs);
// Sets the run's manifest and adds the selection's problems that have no record (as missing).
void attach_run(LoadedResults& r, nlohmann::json run);

// The highest turn any record has (1 for a single-turn run).
int max_turn(const LoadedResults& r);
// `r` with each problem's samples as they stood after turn `t`: a sample counts as its best turn <= t (the
// robust-correct turn with the highest speedup, else its latest turn; pkb-correct if any turn was), and a
// sample without a turn <= t is absent. Placeholders (not_evaluated) of later turns are dropped.
LoadedResults at_turn(const LoadedResults& r, int t);

}  // namespace pkb::scoring
