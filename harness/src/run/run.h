// `pkb run`: the whole benchmark as one resumable job over a run directory (docs/design/runs.md):
// generate K samples per problem -> compile every candidate ahead, in parallel on the CPU cores -> evaluate
// them on a queue of GPU slots (W GPUs each, disjoint, so timing runs never share a GPU) -> score -> report.
//
// RUN/ holds manifest.json (resolved settings and provenance), what `pkb generate` writes (candidates/, raw/,
// prompts/, generations.jsonl), results.jsonl (one pkb.result/1 record per sample, appended as each finishes)
// and the reports. Every finished sample is one appended line, so a run killed at any point loses only what was
// in flight; the same command again skips every sample that already has its record.
//
// With --turns T > 1, every sample's turn is evaluated and, unless it is correct and faster than --stop-speedup,
// the model gets a follow-up message in the same conversation with that evaluation's feedback
// (prompt/feedback.h) and answers with a new kernel: turn t + 1's files are under RUN/turn_<t+1>/, its records
// in results.jsonl carry `turn`, and resuming continues at each sample's first unfinished turn.
//
// With --agent, each sample is one tool-calling conversation instead (run/agent.h): RUN/agent/ holds the
// transcripts, and each sample's one record is its submitted kernel's verdict.
//
// Without a GPU (and without --device cpu), a run still generates, compiles and validates the references on CPU
// ranks, and records each compiled candidate as not_evaluated: the report says the GPU evaluations were skipped.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/evaluate.h"
#include "generate/generate.h"
#include "run/agent.h"
#include "run/shard.h"
#include "spec/catalog.h"

namespace pkb::run {

struct RunOptions {
  std::string model = "expert";
  std::string problems;  // "" = every problem with a solution.cu for `expert`, else all
  int samples = 1;
  int turns = 1;  // turns of refinement per sample: turn t + 1 shows the model turn t's evaluation
  std::optional<double> stop_speedup = 1.0;  // a sample stops early once correct and faster than this; none = never
  int world = 0;                             // 0 = every visible GPU (at least 2); 2 without GPUs
  std::string device = "auto";    // auto: GPUs if any, else compile and validate only; cpu: evaluate on CPU ranks
  std::string topology;           // "" = the smallest topology that fits W, preferring this machine's GPU
  std::string arch;               // nvcc target; "" = the topology's (sm_90a for H100/H200)
  std::filesystem::path out_dir;  // "" = results/runs/<model>-w<W>-<device>-<dtype>
  int compile_jobs = 0;           // 0 = one per core
  bool progress = true;
  Shard shard;       // --shard I/N: this invocation's part of the run, in OUT/shard-I-of-N (run/shard.h)
  EvalOptions eval;  // dtype, trials, timing, deadlines, cache (world/device/topology set from above)
  generate::GenerateOptions generate;  // concurrency, token limits, provider settings (model/problems set from above)
  AgentOptions agent;                  // --agent: the model drives compile/evaluate/submit as tools (run/agent.h)
};

struct RunSummary {
  std::filesystem::path dir;
  bool gpu_evaluation = false;  // false: no GPU, candidates were compiled and recorded not_evaluated
  int samples = 0;              // (problem, sample) pairs generated
  int later_turns = 0;          // (problem, sample, turn > 1) answers accounted for (pkb run --turns)
  int resumed = 0;              // already recorded by an earlier invocation
  int recorded = 0;             // records appended by this invocation
  int harness_errors = 0;       // samples recorded harness_error: pkb itself failed (evaluated again next time)
  int service_failures = 0;     // samples the model service never answered (auth, quota, network): not samples
  int rejected = 0;             // samples whose request the service rejected (HTTP 400): recorded bad_request
  std::string service_error;    // the first of those failures, as the provider put it
  // A run is complete when every sample has its record; otherwise the next invocation does what is missing.
  bool complete() const { return harness_errors == 0 && service_failures == 0; }
};

// Number of GPUs this process may use, from the driver's /proc files and CUDA_VISIBLE_DEVICES, without
// initializing CUDA (which would hold every GPU for the driver process's lifetime).
int visible_gpu_count();

// Throws pkb::Error for usage errors (unknown model or problem, a run directory made with other settings).
RunSummary run_benchmark(const Catalog& catalog, RunOptions o);

}  // namespace pkb::run
