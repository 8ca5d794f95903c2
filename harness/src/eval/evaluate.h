// Turning a candidate source into a verdict and a speedup (docs/design/evaluation.md): lint and
// compile, the reference pass (cached on disk), the PyTorch-eager baseline (reference.py in W Python processes, where
// Python torch exists), the candidate pass in its own processes, then the comparison in this process. Produces one
// result record (schema pkb.result/1, docs/result-record.md, through core/result_record.h); the caller stores it (`pkb
// eval` in OUT/results.jsonl, `pkb run` with its sample and model in RUN/results.jsonl).
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "compile/compiler.h"
#include "core/candidate_modes.h"
#include "core/device_kind.h"
#include "core/result_record.h"
#include "protocol/rank_record.h"
#include "spec/problem_spec.h"
#include "worker/timing.h"

namespace pkb {

struct SealedRank;

// An evaluation ends in one of ResultStatus's outcomes (core/result_record.h): compile_error through correct, or
// not_evaluated (compiled, or failed to, but EvalOptions::not_evaluated_reason stopped it before any rank ran: `pkb
// run` on a machine without GPUs) or harness_error (pkb's own machinery failed: no verdict on the candidate).

struct EvalOptions {
  int world = 2;
  DeviceKind device = DeviceKind::cuda;  // cuda: .cu with nvcc; cpu: .cpp with the host compiler
  std::string dtype = "bf16";
  int trials = 5;  // checked trials before timing; one more fresh-input trial follows timing
  uint64_t seed = 1;
  std::map<std::string, int64_t> params;
  TimingOptions timing{.warmup = 20};
  std::string timing_method = "pkb";  // which timing drives timing.speedup (both are measured and recorded)
  // When the baselines are timed again right after a correct candidate's timing, in place of the cached ones:
  // drift (the host probes say the host's speed changed since the cached timing), always (same-window
  // baselines for every correct candidate, one reference launch more each), never, or automatic: drift on GPUs,
  // never on CPU ranks (their times test the harness and are no benchmark; on a loaded 2-core CI machine the
  // probes differed by 0.28-1.55x between passes, so half the evaluations would pay a second reference launch).
  RetimePolicy retime_baseline = RetimePolicy::automatic;
  double timeout_s = 120;  // per launch of the candidate's ranks
  // Per launch of pkb's own ranks (the reference pass, the baselines), seconds; 0: reference_deadline_s's default.
  // The candidate's timeout never shortens it: a busy GPU once ran the trusted pass past a 15 s --timeout.
  double reference_timeout_s = 0;
  double compile_timeout_s = 180;
  std::string arch = "sm_90a";
  bool allow_nccl = false;
  std::string baseline = "auto";  // auto: PyTorch eager where Python torch exists, else libtorch+NCCL; or "cpp"
  size_t heap_mib = 0;            // candidate's symm_alloc arena (0: 256 MiB on GPUs, 16 MiB on CPUs)
  std::string topology;           // for the roofline (SOL%) fields; "": this machine's GPU's (spec/topology.h)
  std::filesystem::path out_dir = "results/eval";
  std::filesystem::path cache_dir = "results/cache";
  int ranks_per_gpu = 0;             // > 1: ranks share GPUs even where there are enough (--ranks-per-gpu)
  std::string visible_devices;       // CUDA_VISIBLE_DEVICES for the ranks ("" = inherit): `pkb run`'s GPU slots
  std::string not_evaluated_reason;  // non-empty: lint and compile only, then record not_evaluated with this
  bool sandbox = true;               // compile and run candidate code inside bubblewrap (false: --no-sandbox)
  // Where a GPU candidate runs: automatic or runner (pkb-runner, frozen between calls; on GPUs under MPS, timed
  // through the call gate, baselines alike) or in_process (the rank program; docs/design/runner-and-gate.md).
  CandidateProcess candidate_process = CandidateProcess::automatic;
  // Where timing copies come from: on, drawn by the rank's runtime into their slots (a runner's monitor before each
  // call, in process once a copy; none made on the host), off, made on the host and copied in, automatic: on on GPUs,
  // off on CPU ranks (there a host draw per call costs more than a copy).
  DrawCopies draw_copies = DrawCopies::automatic;
  bool uses_runner() const { return candidate_in_runner(candidate_process, device == DeviceKind::cuda); }
};

struct EvalResult {
  ResultStatus status = ResultStatus::crash;
  nlohmann::json record;
};

// Throws pkb::Error, saying why, where --timing-method cannot be scored as asked: an unknown name, or the device
// method where no device view exists (CPU ranks, --device-iters 0, a GPU candidate in a runner). evaluate_candidate
// checks it; `pkb run` checks it once before any sample.
void check_timing_method(const EvalOptions& o);

// Throws pkb::Error only for bad options; everything the candidate does wrong is a status in the record, and a
// reference pass that fails or runs past its deadline is one too (harness_error).
EvalResult evaluate_candidate(const ProblemSpec& spec, const std::filesystem::path& source, const EvalOptions& o);

// The reference pass's default deadline per launch, seconds: generous, since a full-shape reference pass times two
// baselines and may share a busy GPU.
constexpr double kReferenceTimeoutS = 900;
// The deadline of each launch of pkb's own ranks: --reference-timeout where given, else the larger of
// kReferenceTimeoutS and the candidate's --timeout (a long candidate deadline is a sign of long references too).
double reference_deadline_s(const EvalOptions& o);

// How evaluate_candidate compiles, so that a caller can compile ahead (in parallel) into the same cache.
CompileOptions eval_compile_options(const EvalOptions& o);

// A candidate whose pkb-method calls on repeated input contents are this many times faster than on fresh contents is
// scored at its fresh speed alone (timing.repeat_faster): honest kernels' two kinds differ by cache effects of a few
// percent; a memoizer's by the work it skipped.
constexpr double kRepeatFasterRatio = 1.25;
// {fresh_median_us, repeated_median_us, ratio, fresh_ci95_low_us, repeated_ci95_high_us} where a candidate timed
// partly on contents an earlier call had (memory held fewer copies than calls) ran its repeated calls more than
// kRepeatFasterRatio faster than its fresh ones: memoizing on content; null otherwise. Faster means beyond noise: the
// lower end of the fresh median's 95% interval above kRepeatFasterRatio times the upper end of the repeated one's.
// The plan interleaves the two kinds (CopyPlan), so load that comes and goes stretches both; the intervals keep a
// few fresh calls' spread on a loaded host from reading as a memoizer. A memoizer's fresh calls do the work it skips
// on repeats, every one of them, which no interval spans.
nlohmann::json repeat_faster(const std::optional<protocol::RankTiming>& candidate_timing);

// Whether repeated contents may have been faster: the median over fresh calls of each one's time over its neighbouring
// repeated calls' (fresh_to_neighbours; without it, the two medians) above kRepeatFasterRatio, noise or not. A claim
// needs evidence, a penalty confidence: where this holds, the methods that cannot tell the two kinds of call apart
// (paper, device) claim no time, flagged (repeat_faster) or not; a memoizer on a host so loaded that the intervals
// overlap keeps no paper speedup, while a burst of load over a stretch of calls stretches neighbours alike.
bool repeats_may_be_faster(const std::optional<protocol::RankTiming>& candidate_timing);

// A candidate time below its problem's roofline floor is no kernel's: it is a timing bug or a forgery, and claims no
// speedup (timing.below_roofline). Below by more than this factor, that is: SOL% above 200%. The margin is the floor's
// own slack, not the timer's (noise only lengthens an honest time; the events resolve ~0.5 us): the topologies give
// achievable rates, not peak ones (HBM ~90% of peak: an honest kernel may reach 1.11-1.14x; the roofline link rate is
// the measured SM-driven peer rate, 370 of NVLink4's 450 GB/s line rate: 1.22x), NVLink SHARP's in-switch reductions
// move fewer bytes than the link formulas count (NCCL's NVLS all-reduce reaches ~1.3x the ring's bus bandwidth), and
// outputs that fit the L2 may be written there and reach HBM after the window (at most the output half of the HBM
// bytes, on problems small enough that launch latency dominates anyway). Together these stay under 2x; forged or
// mistimed calls (work off the timed stream, a clock stopped inside the call) come in at 10-1000x.
constexpr double kBelowRooflineFactor = 2;
// {floor_us, factor, bound, methods: {<method>: candidate_us}} for the timing methods (`by_method`, as the record
// holds them) whose candidate time is below roofline.floor_us / kBelowRooflineFactor; null when none is, or without a
// floor. Only for GPU runs: on CPU ranks the floor is a GPU topology's, not the machine's.
nlohmann::json below_roofline(const nlohmann::json& roofline, const nlohmann::json& by_method);

// Candidate's host probe median over the baseline's beyond which a record says `host_drift`: the probe's own
// spread between timings on a quiet core is a few percent; the steps measured on the one-H200 node reached 1.6x.
constexpr double kHostDriftRatio = 1.2;
// The rank records a candidate pass sent over the sealed channel (seal/seal.h), each parsed (protocol/rank_record.h;
// nullopt where a rank sent none), and why the channel is not believed ("" when it is: every stream whole, every
// record JSON). A record of a whole stream that does not parse throws protocol::ProtocolError (the monitor's writing:
// pkb's failure, harness_error); one from a stream that is not believed counts as none (candidate code may have
// written it: the verdict is the stream's).
struct SealedRecords {
  std::vector<std::optional<protocol::RankRecord>> records;
  std::string seal_error;
};
SealedRecords sealed_records(const std::vector<SealedRank>& got);

// What an exception out of judging a candidate's results makes of the sample. A record that does not parse
// (protocol::ProtocolError: not an object, a key missing or of the wrong type) or a JSON error (a safetensors header
// that does not parse) is pkb's own: every record and header the driver reads is the monitor's writing, so it is a
// harness_error, never the candidate's runtime_error; anything else is runtime_error.
ResultStatus processing_failure_status(const std::exception& e);

// The candidate timing's median cache-and-branch probe over the libtorch+NCCL baseline timing's (both the rank
// programs' host_chase_probe_us, the baseline possibly cached from hours before), and whether that ratio is beyond
// kHostDriftRatio either way: a speedup of dispatch-bound work timed on differently contended cores carries it.
// nullopt when either timing lacks the probe (CPU-less stubs).
struct HostSpeed {
  double ratio = 0;
  bool drift = false;
};
std::optional<HostSpeed> host_speed(const std::optional<protocol::RankTiming>& candidate_timing,
                                    const std::optional<protocol::RankTiming>& baseline_timing);
// host_speed as records hold it: {host_speed_ratio, host_drift}; empty where host_speed is nullopt.
nlohmann::json host_speed_comparison(const std::optional<protocol::RankTiming>& candidate_timing,
                                     const std::optional<protocol::RankTiming>& baseline_timing);

// How each side's calls are timed (the record's timing.instruments): through the call gate (`call_gate`: a GPU
// candidate in a runner, two processes under MPS; `call_gate_one_process`: the libtorch baseline's gated view, two
// streams of the rank program, and reference.py's calls where PKB_EAGER_GATE=1 put them through the same flags), the
// host's doorbell (CPU runners) or events in the timed process (`events`: in process, and reference.py by default).
// `eager_instrument`: what reference.py's timing says timed it; nullptr where it was not timed (not listed).
nlohmann::json timing_instruments(const EvalOptions& o, const char* eager_instrument);

// Why a record's times measure contention rather than the kernel ("" when they do not): its ranks shared a GPU
// (`gpu_sharing`), or a GPU candidate's runner ran without MPS (`runner_mps` a note), so that its CUDA context and
// its monitor's took turns on the GPU. Such a verdict stands; no speedup is claimed.
std::string contention_reason(const nlohmann::json& record);

// One readable verdict: status, errors, times, speedup.
std::string format_verdict(const nlohmann::json& record);

}  // namespace pkb
