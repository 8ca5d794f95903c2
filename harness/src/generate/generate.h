// pkb generate: prompts for a selection of problems, K samples each, sent to a model (through the reply cache,
// so a rerun makes no request it already paid for) or taken from an offline source, with the code extracted
// and written out. Layout under OUT (docs/models.md):
//   candidates/NNN_slug/sample_K.cu   the extracted kernel, only for status ok
//   raw/NNN_slug/sample_K.txt         the model's answer as received (reasoning in sample_K.reasoning.txt)
//   prompts/NNN_slug.json             the request sent (system, user, limits)
//   generations.jsonl                 one record per (problem, sample), in selection order
//   generation.json                   the run's options and counts
//   cache/                            replies (models::ReplyCache)
// Files are rewritten on every run; a sample whose status is no longer ok loses its stale candidate file.
// Samples are numbered from 0, like Request::sample_index.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/provider.h"
#include "models/types.h"
#include "prompt/prompt.h"
#include "spec/catalog.h"

namespace pkb::generate {

/// What became of one sample. The model failed: no_code / truncated (the answer holds no usable kernel, or was
/// cut: the token limit, or the provider marked it incomplete), refused (the provider cut it off or withheld it
/// for another reason: content filter, refusal, recitation). The request failed: bad_request (HTTP 400 or
/// another 4xx for this request alone, such as a prompt longer than the model's context; a failed sample). The
/// service failed: error (no answer: auth, quota, the same 400 for every problem, network or server after the
/// retries, or not sent because the batch stopped): not a sample, asked again next time. Not asked: skipped
/// (the problem forbids this W), no_solution (`expert` without solution.cu), missing (`replay:DIR` has no
/// file for it).
enum class SampleStatus { ok, no_code, truncated, refused, bad_request, error, skipped, no_solution, missing };
const char* sample_status_name(SampleStatus s);
/// no_code, truncated, refused, bad_request: the model was asked and gave no usable kernel (a failed sample).
bool model_failed(SampleStatus s);

/// One sample's conversation continued (pkb run --turns): its answers so far and the follow-up sent after each,
/// oldest first; both hold turn - 1 entries. The request for the turn is the first prompt, then answer 1,
/// follow-up 1, answer 2, ..., and the last follow-up as the new user message.
struct FollowUp {
  std::string problem;  ///< NNN_slug
  int sample = 0;
  std::vector<std::string> answers, follow_ups;
};

struct GenerateOptions {
  std::string model;  ///< "provider:model", "compat:URL@model", "expert" or "replay:DIR"
  std::string problems = "all";
  int samples = 1;
  prompt::PromptOptions prompt;
  int concurrency = 4;     ///< requests in flight
  int max_tokens = 32768;  ///< output cap per request, reasoning included (tokens)
  std::optional<double> temperature;
  std::filesystem::path out_dir;     ///< "" = ./results/generate/<model, made file-name safe>
  models::ProviderOptions provider;  ///< timeouts and retry policy
  bool progress = true;              ///< a progress line on stderr
  /// Which samples to produce (pkb run --shard asks for its own only); unset: all. Samples it rejects get no
  /// record and no files.
  std::function<bool(const ProblemSpec&, int sample)> wanted;
  /// > 1: a later turn of a multi-turn run: only the samples in `follow_ups` are asked (language models only),
  /// and prompts/ is not rewritten.
  int turn = 1;
  std::vector<FollowUp> follow_ups;
  std::filesystem::path cache_dir;  ///< reply cache; "" = OUT/cache (the shards and turns of a run share one)
};

struct SampleRecord {
  std::string problem;  ///< NNN_slug
  int problem_id = 0;
  int sample = 0;
  int turn = 1;  ///< of the sample's conversation (pkb run --turns)
  std::string model;
  SampleStatus status = SampleStatus::error;
  std::optional<models::Reply> reply;  ///< absent for offline models and skipped problems
  std::optional<double>
      cost_usd;                ///< what the answer cost when it was bought (pricing/prices.json); absent when unknown
  std::string message;         ///< why, for every status but ok
  std::string candidate, raw;  ///< paths relative to OUT; "" when not written

  nlohmann::ordered_json to_json() const;  ///< one generations.jsonl line, fields in a readable order
};

struct GenerateResult {
  std::filesystem::path out_dir;
  std::vector<SampleRecord> records;  ///< selection order, then sample order
  std::string topology;               ///< the topology the prompts described ("" for offline models)
  /// Why the batch stopped early (the provider's message for a 401, quota or the same 400 for two problems), or "".
  std::string stopped;
  /// Answers kept whose stop reason pkb does not know as a normal end (models::FinishReason::other), flagged in
  /// their records' message.
  size_t unknown_finish = 0;
  size_t count(SampleStatus s) const;
};

/// The request for one sample of a prompt.
models::Request make_request(const prompt::Prompt& p, int max_tokens, std::optional<double> temperature, int sample);
/// The same request continued: the conversation so far and the last follow-up as the user message. Throws
/// pkb::Error when the follow-up's answers and follow-ups differ in number or are empty.
models::Request make_follow_up_request(const prompt::Prompt& p, int max_tokens, std::optional<double> temperature,
                                       const FollowUp& f);

/// Throws pkb::Error for usage and input errors (unknown model or problem, no API key, bad topology); every
/// failure of a request is a record instead.
GenerateResult run_generate(const Catalog& catalog, const GenerateOptions& o);

}  // namespace pkb::generate
