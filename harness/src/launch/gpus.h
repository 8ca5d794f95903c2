// The GPUs a job may use, and sharing them: when a job has more ranks than GPUs (a one-GPU machine checking a
// multi-rank kernel), ranks are mapped round-robin onto the GPUs and run under an MPS control daemon that pkb
// starts for itself (own pipe and log directories) and stops when it exits, so that the ranks' kernels are
// resident at once and spin barriers make progress. Without MPS they time-slice: correct, but slow.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace pkb {

// CUDA_VISIBLE_DEVICES' entries, or 0..N-1 for the N GPUs the driver lists, read from /proc without initializing
// CUDA in the driver (which would hold every GPU for the driver's lifetime).
std::vector<std::string> visible_gpus();

struct GpuSharing {
  int ranks_per_gpu = 1;                   // 1: every rank has a GPU of its own
  bool mps = false;                        // pkb's MPS daemon serves the ranks (shared GPUs, or process pairs)
  std::map<std::string, std::string> env;  // for every rank: the daemon's pipe directory and the SM share
  std::string note;                        // for the console and the record ("" when nothing is shared)
};

// The plan for a CUDA job of `world` ranks on `gpus` GPUs. Starts pkb's MPS daemon the first time ranks must
// share (once per pkb process). Never throws: when MPS cannot start, note says so and ranks time-slice.
// `ranks_per_gpu_wanted` > 1 forces sharing (--ranks-per-gpu): the job's CUDA_VISIBLE_DEVICES is then cut to the
// GPUs its ranks fill (gpus_filled), so that they really share.
// `process_pairs`: every rank is two CUDA processes taking turns on its GPU (a candidate's monitor and its runner,
// worker/runner_main.cpp): they run under the daemon too, even one rank per GPU, since without MPS each hand-over
// between their contexts cost ~150 us on the H200 (expert 001 at W = 1: 178 us in a runner against 12 us in
// process; 44 us at W = 2 under MPS).
GpuSharing plan_gpu_sharing(int world, int gpus, int ranks_per_gpu_wanted = 0, bool process_pairs = false);

// The first ceil(world / ranks_per_gpu) of `ids`, comma-separated: the GPUs a forced share uses.
std::string gpus_filled(const std::vector<std::string>& ids, int world, int ranks_per_gpu);

}  // namespace pkb
