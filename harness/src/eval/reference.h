// The reference side of an evaluation (eval/reference.cpp), and what pkb's own launches share with the candidate pass
// (eval/evaluate.cpp). Internal to eval/: callers use eval/evaluate.h.
#pragma once
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "eval/evaluate.h"
#include "launch/gpus.h"
#include "launch/jobs.h"
#include "launch/mpirun.h"
#include "protocol/rank_record.h"
#include "worker/worker.h"

namespace pkb {

double wall_seconds_since(std::chrono::steady_clock::time_point t0);

// What both passes of an evaluation give pkb-rank: the problem, the run's shape and seed, timing.
WorkerOptions worker_options(const ProblemSpec& spec, const EvalOptions& o, const std::filesystem::path& dir);
// How the job's ranks sit on the GPUs: more ranks than GPUs share them under pkb's MPS daemon.
GpuSharing gpu_sharing(const EvalOptions& o);
// A launch of the job's ranks; timeout_s: the candidate's deadline (o.timeout_s) or the reference pass's
// (reference_deadline_s).
RankJob rank_job(const EvalOptions& o, const std::vector<std::string>& args, const std::filesystem::path& dir,
                 const std::string& tag, double timeout_s);
// The versions of the GPU, driver and libraries the record's provenance names.
nlohmann::json provenance(const EvalOptions& o);

// The reference pass's cache entry: keyed by everything that determines its outputs and timing.
std::filesystem::path reference_dir(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o,
                                    const nlohmann::json& prov, bool python);
// The reference pass, cached (reference_dir), with the expected outputs and, where `python`, the eager baseline;
// returns its entry's directory and notes in `info` whether it was cached. Throws pkb::Error when it failed.
std::filesystem::path reference_pass(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o,
                                     const nlohmann::json& prov, bool python, nlohmann::json& info);
// The baselines timed again now, next to the candidate's timing and never cached: the libtorch+NCCL reference pass
// with --time (one trial) in `dir`, and where the evaluation has one, reference.py's eager timing on the inputs
// that pass saved there. Returns {libtorch_nccl, pytorch_eager} timings (eager null when not timed, else as
// reference.py wrote it).
std::pair<protocol::RankTiming, nlohmann::json> retime_baselines(const ProblemSpec& spec, const EvalOptions& o,
                                                                 bool python, const std::filesystem::path& dir);

}  // namespace pkb
