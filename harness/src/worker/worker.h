// Shared pieces of pkb-rank's two passes. The reference pass runs the libtorch reference (bf16 outputs, the
// precise fp32-upcast outputs, baseline timing); the candidate pass hosts a candidate library through the ABI.
// Both write outputs as safetensors and a JSON record per rank under --out; neither ever sees expected values.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/problem_spec.h"
#include "worker/timing.h"

namespace pkb {

// pkb-rank's options: the driver fills them and passes to_args(options); pkb-rank parses them back with
// add_worker_flags (worker/worker_cli.h). A test checks the round trip, so the two cannot drift apart.
struct WorkerOptions {
  std::string problem_dir;
  std::string batch_file;  // instead of problem_dir and out_dir: reference passes of several problems (JSON)
  std::string device = "cpu";
  std::string dtype = "bf16";
  std::vector<int> trials = {0};
  uint64_t seed = 0;
  std::vector<std::string> params;  // NAME=VALUE
  std::string out_dir;
  bool save_inputs = false;
  bool precise = false;      // reference: run only on fp32-upcast inputs
  bool precise_too = false;  // reference: also write the precise outputs (precise.rankR)
  bool time = false;         // time after the last checked trial
  int post_trial = -1;       // candidate: one more trial after timing, with fresh inputs
  TimingOptions timing;
  std::string candidate;    // path of the candidate library: candidate pass
  size_t heap_mib = 0;      // candidate's symm_alloc arena (0: default for the device)
  std::string seal_dir;     // candidate: the driver's FIFOs (sealed outputs and records)
  int rotation_copies = 0;  // candidate: input copies for timing, as the reference pass chose them (0: choose)
  int warmup_copies = 0;    // candidate: of those, the warm-up rotation (CopyPlan)
  std::vector<uint64_t> timed_checks;  // reference: draws; copy (draw % copies) gets expected outputs
};

struct WorkerEnv {
  ProblemSpec spec;
  RunShape run;
  int rank = 0, world = 1, local_rank = 0;
  int device = 0;  // CUDA device of this rank
  bool cuda = false;
  bool shared_gpu = false;  // several ranks on one GPU: no NCCL (the references stage through host memory)
};

// The command line that gives pkb-rank these options (defaults left out).
std::vector<std::string> to_args(const WorkerOptions& o);

WorkerEnv make_worker_env(const WorkerOptions& o, int rank, int world);

std::filesystem::path trial_dir(const std::string& out, int trial);
std::filesystem::path rank_path(const std::string& out, int trial, const std::string& prefix, int rank);
// Atomically (re)writes out/rankR.json, or with --seal sends it to the driver; called after every step so a
// crash leaves what happened so far.
void write_rank_record(const std::string& out_dir, int rank, const nlohmann::json& record);
class SealWriter;
SealWriter& seal();  // the sealed channel (a writer that drops everything without --seal)

// Trial labels of the timing copies: copy k's inputs are those of trial kTimedTrialBase + k.
constexpr int kTimedTrialBase = 1000000;

// Reference pass: fills record["trials"], record["timing"].
void run_reference_pass(const WorkerOptions& o, WorkerEnv& env, nlohmann::json& record);
// Candidate pass: fills record["status"] (ok, load_error, runtime_error), trials, timing; never throws for the
// candidate's failures, only for harness errors.
void run_candidate_pass(const WorkerOptions& o, WorkerEnv& env, nlohmann::json& record);

}  // namespace pkb
