// The result record (schema pkb.result/1, docs/result-record.md) as one typed struct, and the one table of
// statuses it can carry. Everything that reads or writes results.jsonl (eval, run, regress, scoring) goes
// through record_to_json / record_from_json, so a field is spelled in one place.
// The struct types what pkb itself reads back (identity, status, speedup, SOL, settings); every other field
// (compile log, checks, per-trial comparisons, timing statistics, ...) travels verbatim in `fields`.
// A sample is (problem folder, sample index); a record without a sample index (`pkb eval` of a file) is
// identified by its candidate's sha256 instead (sample_key).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/timing_method.h"

namespace pkb {

inline constexpr const char* kResultSchema = "pkb.result/1";

// `pkb eval`'s outcomes, then `pkb run`'s: a sample the model produced no kernel for, a sample whose request the
// model service rejected (HTTP 400 for that request alone), a candidate left unevaluated (no GPU), an agent that ran
// out of a budget before it submitted (pkb run --agent); last, an evaluation pkb itself could not finish
// (harness_error: the reference pass failed).
enum class ResultStatus {
  compile_error,
  lint_violation,
  load_error,
  runtime_error,
  timeout,
  crash,
  incorrect,
  correct,
  generation_failed,
  bad_request,
  not_evaluated,
  budget_exhausted,
  harness_error
};

struct StatusInfo {
  ResultStatus status;
  const char* name;          // as written in records
  bool sample;               // counts in n (pass@k's denominator)
  bool evaluated;            // ran on ranks (or failed to build): checks/timing fields mean something
  const char* failure_kind;  // the failure breakdown's bucket; "" for correct and for non-samples
};

// Every status, in the order reports list them.
const std::vector<StatusInfo>& result_statuses();
const StatusInfo& status_info(ResultStatus s);
const char* result_status_name(ResultStatus s);
// nullptr for a name the table does not know.
const StatusInfo* find_status(std::string_view name);

struct ResultRecord {
  std::string time;  // UTC, ISO 8601
  int problem_id = 0;
  std::string problem_slug, problem_folder, problem_category;
  std::string candidate_path;    // "" for generation_failed
  std::string candidate_sha256;  // "generation:<folder>:<sample>" for generation_failed
  std::optional<int> sample;     // the sample index within its problem (pkb run); none for a bare `pkb eval`
  std::optional<int> turn;       // pkb run --turns: the turn of the sample's conversation (1, 2, ...); none = 1
  std::string model;             // "provider:model", expert, replay:DIR; "" when unknown (pkb eval)
  int world = 0;
  std::string device, dtype;
  std::string status;  // a name of result_statuses(); an unknown one is kept as read
  std::string message;
  std::string generation_status, generation_message;   // generation_failed: no_code, truncated, refused; bad_request
  std::optional<int64_t> input_tokens, output_tokens;  // generation.*: what the model's answer used (tokens)
  std::optional<double> cost_usd;                      // generation.cost_usd: what the answer cost (USD)
  std::optional<bool> pkb_pass;                        // checks.pkb_pass: the paper's allclose
  std::optional<double> speedup;                       // timing.speedup: baseline median / candidate median (x)
  std::string baseline;                                // timing.baseline: pytorch_eager or libtorch_nccl
  std::string timing_method;  // timing.method: which timing `speedup` is (pkb, paper; "" = pkb)
  // sandbox.candidate_process: where the candidate ran ("runner process", "in process"; "" = not said), which on GPUs
  // is also how its calls and the baselines were timed (the call gate, or events in the rank program)
  std::string candidate_process;
  // timing.by_method.<m>.speedup: each method's speedup (device: where both device views measured)
  std::optional<double> speedup_pkb, speedup_paper, speedup_device;
  std::optional<double> speedup_by(TimingMethod m) const {
    return m == TimingMethod::paper ? speedup_paper : m == TimingMethod::device ? speedup_device : speedup_pkb;
  }
  bool contended = false;       // timing.contended: ranks shared a GPU, so the times measure contention and the
                                // record claims no speedup or SOL% (any found beside it is dropped when read)
  bool below_roofline = false;  // timing.below_roofline: a candidate time below the roofline floor, a timing bug or a
                                // forgery: no speedup or candidate SOL% (any found beside it is dropped when read)
  bool host_drift = false;  // timing.host_drift: the candidate's host ran > 1.2x faster or slower than the baseline's
                            // (the speedup carries that ratio; eval/evaluate.h host_speed_comparison)
  std::optional<double> sol_candidate;       // roofline.sol_candidate (fraction)
  std::optional<double> sol_baseline;        // roofline.sol_baseline_<baseline> (fraction)
  std::optional<int> warmup, iters, trials;  // timing_settings and trials: the timing method
  std::optional<double> total_s;             // wall.total_s: the evaluation's wall time (seconds)
  nlohmann::json provenance = nlohmann::json::object();
  nlohmann::json fields = nlohmann::json::object();  // every other field, as written

  const StatusInfo* status_entry() const { return find_status(status); }
  bool correct() const { return status == "correct"; }
  // Identity of the sample this record is for: "<folder>#<index>", or "<folder>@<sha256>" without an index.
  // Every turn of a sample shares it; a record is identified by (sample_key, turn_number).
  std::string sample_key() const;
  int turn_number() const { return turn.value_or(1); }
};

std::string sample_key(const std::string& folder, std::optional<int> sample, const std::string& sha256);

// Throws pkb::Error naming the field when a required one (schema, problem.id, problem.folder,
// candidate.sha256, status) is missing or has the wrong type. Unknown statuses are not an error here: the
// loader decides what they count as.
ResultRecord record_from_json(const nlohmann::json& j);
nlohmann::json record_to_json(const ResultRecord& r);
// One results.jsonl line (no newline): record_to_json on one line, bytes that are not UTF-8 (a server's message,
// a candidate's stderr) replaced by U+FFFD so that the line is always valid JSON.
std::string record_line(const ResultRecord& r);
// Now, as records and manifests write their times: "2026-12-04T22:04:32Z".
std::string utc_now_iso8601();

}  // namespace pkb
