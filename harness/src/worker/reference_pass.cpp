// The reference pass: for each trial, this rank's inputs from the seed, the libtorch reference (and, with
// --precise-too, the same reference on fp32-upcast inputs: the precise expected values of the robust policy),
// outputs written as safetensors; with --time, the baseline timed exactly as candidates are. fp32 math is IEEE fp32
// (no TF32: use_ieee_fp32), as the record's `fp32_math` says.
#include <algorithm>
#include <chrono>

#include "comm/communicator.h"
#include "core/error.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "reference/libtorch_version.h"
#include "reference/reference.h"
#include "runtime/runtime.h"
#include "worker/call_gate.h"
#include "worker/runner_host.h"
#include "worker/worker.h"

namespace pkb {
namespace {

void check_output_shapes(const ProblemSpec& spec, const RunShape& run, int rank, const Tensors& outs) {
  if (outs.size() != spec.outputs.size())
    throw Error("reference returned " + std::to_string(outs.size()) + " outputs, problem.json lists " +
                std::to_string(spec.outputs.size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    auto want = tensor_shape(spec.outputs[i], run, rank);
    if (outs[i].sizes().vec() != want)
      throw Error("reference output '" + spec.outputs[i].name + "' has shape " + c10::str(outs[i].sizes()) +
                  ", problem.json says " + c10::str(at::IntArrayRef(want)));
  }
}

Tensors to_device(const Tensors& host, const at::Device& device, bool upcast) {
  Tensors out;
  for (const auto& t : host) {
    at::Tensor d = t.to(device);
    if (upcast && at::isFloatingType(d.scalar_type())) d = d.to(at::kFloat);
    out.push_back(d);
  }
  return out;
}

void save_outputs(const ProblemSpec& spec, const Tensors& outs, const std::filesystem::path& path) {
  NamedTensors saved;
  for (size_t i = 0; i < outs.size(); ++i) {
    saved.names.push_back(spec.outputs[i].name);
    saved.tensors.push_back(outs[i].to(at::kCPU).contiguous());
  }
  write_safetensors(path, saved);
}

// This rank's reference and what it runs on: ctx for the run's dtype, precise_ctx for the fp32 upcast, and the
// communicators both point into (owned here, so the contexts stay valid as long as this does).
struct ReferenceRank {
  const ReferenceImpl* impl = nullptr;
  RankContext ctx, precise_ctx;
  std::unique_ptr<Communicator> world_comm;
  std::vector<std::unique_ptr<Communicator>> group_comms;

  // With --precise-too: the same reference on fp32-upcast inputs, the precise expected values of the robust policy.
  void save_precise(const ProblemSpec& spec, const Tensors& host_inputs, const std::filesystem::path& path) const {
    Tensors precise = impl->reference(precise_ctx, to_device(host_inputs, ctx.device, true));
    world_comm->synchronize();
    save_outputs(spec, precise, path);
  }
};

ReferenceRank open_reference_rank(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record) {
  const ProblemSpec& spec = env.spec;
  ReferenceRank ref;
  ref.impl = find_reference(spec.slug);
  if (!ref.impl) throw Error("no libtorch reference registered for '" + spec.slug + "' (is reference.cpp built?)");
  record.prepare_step = ref.impl->prepare != nullptr;
  record.fp32_math = use_ieee_fp32();  // before any tensor work: fp32 (and the precise upcast) is IEEE, never TF32
  RankContext& ctx = ref.ctx;
  ctx.rank = env.rank;
  ctx.world = env.world;
  ctx.params = env.run.params;
  ctx.scalars = scalar_values(spec, env.run);
  ctx.float_dtype = o.precise ? at::kFloat : to_aten(env.run.float_dtype);
  if (env.cuda) {
#ifndef PKB_TORCH_HAS_CUDA
    throw Error("--device cuda: this build's libtorch has no CUDA support (CPU-only libtorch)");
#endif
    ctx.device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.device));
    ref.world_comm = env.shared_gpu ? make_staged_world() : make_nccl_world();
    record.gpu = runtime_versions(env.device).gpu;
    record.communicator = env.shared_gpu ? "staged_mpi" : "nccl";
  } else {
    ref.world_comm = make_mpi_world();
  }
  record.device = ctx.device.str();
  ctx.comm = ref.world_comm.get();
  for (const auto& g : spec.groups) {
    auto [color, key] = group_color_key(g, env.run, env.rank);
    ref.group_comms.push_back(ref.world_comm->split(color, key));
    ctx.groups[g.name] = ref.group_comms.back().get();
  }
  ref.precise_ctx = ctx;
  ref.precise_ctx.float_dtype = at::kFloat;
  return ref;
}

// The checked trials: inputs from the seed, the reference's outputs (and with --save-inputs the inputs) saved per
// trial. Returns the last trial's inputs, which the baseline's timing rotates.
RankInputs run_trials(const WorkerOptions& o, WorkerEnv& env, const ReferenceRank& ref, protocol::RankRecord& record) {
  const ProblemSpec& spec = env.spec;
  std::vector<protocol::RankTrial> trials;
  RankInputs last_inputs;
  for (int trial : o.trials) {
    std::filesystem::create_directories(trial_dir(o.out_dir, trial));
    RankInputs in = make_inputs(spec, env.run, env.rank, trial, o.seed);
    if (o.save_inputs) {
      NamedTensors saved{in.names, in.tensors, {}};
      for (const auto& [k, v] : ref.ctx.scalars) saved.metadata["scalar." + k] = std::to_string(v);
      write_safetensors(rank_path(o.out_dir, trial, "inputs.rank", env.rank), saved);
    }
    Tensors device_inputs = to_device(in.tensors, ref.ctx.device, o.precise);
    ref.world_comm->barrier();
    auto t0 = std::chrono::steady_clock::now();
    Tensors outs = ref.impl->reference(ref.ctx, device_inputs);
    ref.world_comm->synchronize();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_output_shapes(spec, env.run, env.rank, outs);
    save_outputs(spec, outs, rank_path(o.out_dir, trial, "rank", env.rank));
    if (o.precise_too) ref.save_precise(spec, in.tensors, rank_path(o.out_dir, trial, "precise.rank", env.rank));
    protocol::RankTrial& done = trials.emplace_back();
    done.trial = trial;
    done.seconds = seconds;
    last_inputs = std::move(in);
  }
  record.trials = trials;
  return last_inputs;
}

// The candidate's calls rotate over the copies of `plan`, of distinct contents; the expected outputs of the copies
// the driver drew are computed here (the candidate pass never learns which). Draw i names a call of repetition i
// (later draws: of repetition 0, which always runs), so every repetition that runs is checked. One plan for every
// rank (sized by the heap's copy, not this rank's own inputs), else ranks would compute the outputs of different
// copies.
void compute_timed_checks(const WorkerOptions& o, WorkerEnv& env, const ReferenceRank& ref, const CopyPlan& plan,
                          protocol::RankRecord& record) {
  const ProblemSpec& spec = env.spec;
  std::vector<int> checked;
  for (size_t i = 0; i < o.timed_checks.size(); ++i) {
    int k = plan.checked_copy(static_cast<int>(i), o.timed_checks[i], o.timing);
    if (std::find(checked.begin(), checked.end(), k) != checked.end()) continue;
    checked.push_back(k);
    std::filesystem::path dir = std::filesystem::path(o.out_dir) / ("copy" + std::to_string(k));
    std::filesystem::create_directories(dir);
    RankInputs in = make_inputs(spec, env.run, env.rank, kTimedTrialBase + k, o.seed);
    Tensors outs = ref.impl->reference(ref.ctx, to_device(in.tensors, ref.ctx.device, o.precise));
    ref.world_comm->synchronize();
    check_output_shapes(spec, env.run, env.rank, outs);
    save_outputs(spec, outs, dir / ("rank" + std::to_string(env.rank) + ".safetensors"));
    if (o.precise_too)
      ref.save_precise(spec, in.tensors, dir / ("precise.rank" + std::to_string(env.rank) + ".safetensors"));
  }
  record.candidate_input_copies = plan.copies;
  record.candidate_warmup_copies = plan.warmup_copies;
  record.timed_checks = checked;
}

// The baseline as a candidate would be timed: same barrier, events, rotation, on ATen's (legacy) stream.
void time_baseline(const WorkerOptions& o, WorkerEnv& env, const ReferenceRank& ref, const RankInputs& last_inputs,
                   protocol::RankRecord& record) {
  size_t in_bytes = heap_copy_bytes(env.spec, env.run, true);
  std::unique_ptr<Runtime> rt = env.cuda ? make_cuda_runtime(MPI_COMM_WORLD, size_t{1} << 20, true)
                                         : make_cpu_runtime(MPI_COMM_WORLD, size_t{1} << 20, "ref");
  // Rotation: copies exceeding 3x L2 (2 MiB inputs on an H200's 60 MiB L2: 91 copies), within the candidates'
  // memory budget and the timing's calls; every call, warm-up and timed, cycles over all of them.
  int copies = env.cuda ? rotation_copies(in_bytes, cuda_l2_bytes(), kRotationBudgetCuda, rotation_calls(o.timing)) : 2;
  std::vector<Tensors> rotated;
  for (int k = 0; k < copies; ++k) rotated.push_back(to_device(last_inputs.tensors, ref.ctx.device, false));
  // --timing-repeats: whole timings in a row; the first is the record's, every one's medians show the spread.
  std::vector<double> medians, paper_medians;
  std::vector<std::optional<double>> device_medians;  // nullopt where the device view measured nothing
  std::vector<double> host_probes, chase_probes;      // each timing's median host-speed probes
  // Where candidates run in a runner their calls are timed by its protocol, and the baselines' the same way. CPU ranks:
  // from waking the runner until it is stopped again (worker/runner_host.h), so each baseline call rings a runner with
  // nothing to run as well and both sides' windows hold one doorbell. GPUs: on the device through the call gate
  // (worker/call_gate.h), whose flag operations each baseline window holds too.
  const bool runner_protocol = o.uses_runner();
  std::unique_ptr<RunnerProcess> doorbell;
  if (runner_protocol && !env.cuda)
    doorbell = RunnerProcess::ping_only(runner_program(),
                                        std::filesystem::path(o.out_dir) / ("doorbell" + std::to_string(env.rank)));
  const double doorbell_us = doorbell ? doorbell->doorbell_us() : 0;
  std::unique_ptr<Runtime> gated = env.cuda && runner_protocol ? gated_baseline_view(*rt) : nullptr;
  auto call = [&](int k) {
    if (doorbell) doorbell->call(runner::kPing, 0);
    ref.impl->reference(ref.ctx, rotated[k]);
  };
  for (int r = 0; r < o.timing.repeats; ++r) {
    TimingStats stats = time_iterations(gated ? *gated : *rt, CopyPlan{copies, copies}, call, o.timing);
    if (r == 0) record.timing = stats.to_record();
    medians.push_back(stats.pkb.stats.median);
    paper_medians.push_back(stats.paper.stats.median);
    device_medians.push_back(stats.device.measured() ? std::optional(stats.device.method.stats.median) : std::nullopt);
    host_probes.push_back(summarize(stats.host_probe_us).median);
    chase_probes.push_back(summarize(stats.host_chase_probe_us).median);
  }
  protocol::RankTiming& timing = *record.timing;
  timing.repeat_medians_us = medians;
  timing.repeat_paper_medians_us = paper_medians;
  if (timing.device) timing.repeat_device_medians_us = device_medians;
  timing.repeat_host_probe_us = host_probes;
  timing.repeat_host_chase_probe_us = chase_probes;
  timing.input_copies = copies;
  if (doorbell) timing.doorbell_us = doorbell_us;
}

}  // namespace

void run_reference_pass(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record) {
  ReferenceRank ref = open_reference_rank(o, env, record);
  RankInputs last_inputs = run_trials(o, env, ref, record);
  if (!o.time) return;
  compute_timed_checks(o, env, ref, world_timing_copies(env.spec, env.run, env.cuda, o.timing), record);
  time_baseline(o, env, ref, last_inputs, record);
}

}  // namespace pkb
