// Shared pieces of the rank programs' two passes. The reference pass (pkb-rank) runs the libtorch reference (bf16
// outputs, the precise fp32-upcast outputs, baseline timing); the candidate pass hosts a candidate library through
// the ABI, in pkb-candidate (no libtorch in the process) or, for a problem whose inputs a libtorch prepare step
// finishes, in pkb-rank. Both write outputs as safetensors and a JSON record per rank under --out; neither ever
// sees expected values.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/candidate_modes.h"
#include "core/device_kind.h"
#include "inputs/draw.h"
#include "inputs/host_tensor.h"
#include "protocol/rank_record.h"
#include "spec/problem_spec.h"
#include "worker/timing.h"

namespace pkb {

// pkb-rank's options: the driver fills them and passes to_args(options); pkb-rank parses them back with
// add_worker_flags (worker/worker_cli.h). A test checks the round trip, so the two cannot drift apart.
struct WorkerOptions {
  std::string problem_dir;
  std::string batch_file;  // instead of problem_dir and out_dir: reference passes of several problems (JSON)
  DeviceKind device = DeviceKind::cpu;
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
  // candidate (CPU ranks): paths of the driver's that the runner must not open even without a sandbox (the
  // caches, the run directory; its own directory and library stay open)
  std::vector<std::string> runner_hidden;
  // candidate (CPU ranks, where the candidate cannot read this process): the timing copies whose outputs the driver
  // checks; only these are captured and sent (empty: every copy, as on GPUs, where the candidate shares the process)
  std::vector<int> captured_copies;
  // candidate: where a GPU candidate runs (core/candidate_modes.h); reference: the baselines are timed by the same
  // protocol (the call gate's on GPUs, the runner's doorbell on CPU ranks)
  CandidateProcess candidate_process = CandidateProcess::automatic;
  // candidate: as EvalOptions::draw_copies
  DrawCopies draw_copies = DrawCopies::automatic;
  // Whether candidates run in pkb-runner, frozen between calls, and baselines are timed by the same protocol.
  bool uses_runner() const { return candidate_in_runner(candidate_process, device == DeviceKind::cuda); }
};

struct WorkerEnv {
  ProblemSpec spec;
  RunShape run;
  int rank = 0, world = 1, local_rank = 0;
  int device = 0;  // CUDA device of this rank
  bool cuda = false;
  bool shared_gpu = false;  // several ranks on one GPU: no NCCL (the references stage through host memory)
  int host_threads = 1;     // this rank's share of the node's cores, for host-side work (input generation)
};

// Where the candidate pass's inputs come from: pkb's draws alone (pkb-candidate) or make_inputs, the draws and the
// problem's libtorch prepare step (pkb-rank).
struct CandidateInputSource {
  std::function<std::vector<HostTensor>(const ProblemSpec&, const RunShape&, int rank, int trial, uint64_t seed)> make;
  // How the inputs are drawn, where `make` gives exactly the draws (pkb-candidate: no prepare step); empty elsewhere.
  // With it a runner's monitor draws the timing copies nobody checks straight into their slots (Runtime::draw).
  std::function<std::vector<InputDraw>(const ProblemSpec&, const RunShape&, int rank, int trial, uint64_t seed)> draws;
  // Starts the thread pools `make` uses, before the judged calls' CPU pin (threads started under it would inherit
  // its one CPU). May be empty.
  std::function<void()> start_pools;
};

// What a rank program runs: pkb-rank both passes, pkb-candidate the candidate pass only (reference empty).
struct RankPasses {
  std::string program;  // its name, in messages
  std::function<void(const WorkerOptions&, WorkerEnv&, protocol::RankRecord&)> reference;
  CandidateInputSource candidate_inputs;
  std::function<void(const WorkerEnv&)> configure;  // once the rank's environment is known (may be empty)
};
// The rank program's main: parses the worker flags, runs the jobs, writes the records; the exit status.
int rank_main(int argc, char** argv, const RankPasses& passes);

// The command line that gives pkb-rank these options (defaults left out).
std::vector<std::string> to_args(const WorkerOptions& o);

WorkerEnv make_worker_env(const WorkerOptions& o, int rank, int world);

std::filesystem::path trial_dir(const std::string& out, int trial);
std::filesystem::path rank_path(const std::string& out, int trial, const std::string& prefix, int rank);
// Atomically (re)writes out/rankR.json, or with --seal sends it to the driver; called after every step so a
// crash leaves what happened so far. The record's keys: protocol/rank_record.h.
void write_rank_record(const std::string& out_dir, int rank, const protocol::RankRecord& record);
class SealWriter;
SealWriter& seal();  // the sealed channel (a writer that drops everything without --seal)

// Trial labels of the timing copies: copy k's inputs are those of trial kTimedTrialBase + k.
constexpr int kTimedTrialBase = 1000000;

// Reference pass: fills the record's trials, timing and timing copies.
void run_reference_pass(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record);
// Candidate pass: fills the record's status (ok, load_error, runtime_error, crash), trials, timing; never throws for
// the candidate's failures, only for harness errors.
void run_candidate_pass(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record,
                        const CandidateInputSource& inputs);

}  // namespace pkb
