// The reference side of an evaluation (docs/design/evaluation.md): the reference pass, cached on
// disk by everything that determines its outputs and timing, with the oracle's expected outputs and the PyTorch-eager
// baseline; the baselines timed again beside a candidate; and what pkb's own launches share with the candidate pass
// (eval/evaluate.cpp): the worker options, the rank job, the provenance.
#include "eval/reference.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <regex>

#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "core/sha256.h"
#include "eval/oracle.h"
#include "launch/gpus.h"
#include "launch/jobs.h"
#include "launch/mpirun.h"
#include "launch/process.h"
#include "launch/sandbox.h"
#include "reference/libtorch_version.h"
#include "runtime/runtime.h"
#include "worker/timing.h"
#include "worker/worker.h"

#ifndef PKB_TORCH_VERSION_STRING
#define PKB_TORCH_VERSION_STRING "unknown"
#endif

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A launch of pkb's own (the reference pass, the baselines timed again) under the reference pass's deadline.
ProcessResult launch_trusted(const EvalOptions& o, const std::vector<std::string>& args, const fs::path& dir,
                             const std::string& tag) {
  return run_rank_job(rank_job(o, args, dir, tag, reference_deadline_s(o)));
}

// The GPU model and driver from the driver's /proc files: reading them costs nothing, whereas asking the CUDA
// runtime would initialize every GPU in this (driver) process.
std::pair<std::string, std::string> nvidia_proc_info() {
  std::string gpu, driver;
  std::ifstream v("/proc/driver/nvidia/version");
  std::getline(v, driver);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream info(e.path() / "information");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("Model:", 0) == 0) gpu = line.substr(line.find_first_not_of(" \t", 6));
    if (!gpu.empty()) break;
  }
  return {gpu, driver};
}

// What the machine and software are, without pkb's own revision: a new commit keeps cached baselines.
std::string fingerprint(json prov) {
  prov.erase("pkb_git");
  return prov.dump();
}

// Bumped whenever what a reference entry holds, or how its inputs and timing are made, changes.
constexpr int kReferenceCacheVersion = 9;  // 4: expected outputs from the oracle; 5: timed checks per repetition;
                                           // 6: the device view's calls are timed ordinals (checked alike);
                                           // 7: fp32 references and baselines in IEEE fp32, never TF32;
                                           // 8: the record says whether a prepare step finishes the inputs;
                                           // 9: the chase probe's new scale (host_probes.h), which host drift
                                           //    compares with a candidate's
// Timed calls whose outputs are checked (drawn per reference entry, kept from candidates): one in each
// repetition that may run, and three more in the first, which always runs (CopyPlan::checked_copy).
int timed_check_count(const TimingOptions& t) { return t.max_reps + 3; }

// The programs that produce a reference entry: pkb-rank (every reference, input generator and timing loop compiled
// in) and pkb-full (the oracles, the prepared inputs they see). Hashing them keys the cache on all of that code,
// shared headers included, so no edit anywhere can leave stale expected outputs behind; a rebuild starts afresh.
const std::string& build_digest() {
  static const std::string digest =
      sha256_file(executable_dir() / "pkb-rank") + "-" + sha256_file(executable_dir() / "pkb-full");
  return digest;
}

// Every file of a cache entry with its sha256, so that an entry is checked before it is believed.
json digest_files(const fs::path& dir, const std::string& skip) {
  json files = json::object();
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != skip) paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> digests(paths.size());  // hundreds of MB per entry: on the host's threads
  parallel_for_each(paths.size(), host_threads(), [&](size_t i) { digests[i] = sha256_file(paths[i]); });
  for (size_t i = 0; i < paths.size(); ++i) files[fs::relative(paths[i], dir).string()] = digests[i];
  return files;
}

// "" when the entry's files are exactly those complete.json lists, with the same contents; else what differs.
std::string entry_damage(const fs::path& dir) {
  json complete = read_json_or_null(dir / "complete.json");
  if (!complete.is_object() || !complete.contains("files")) return "complete.json is missing or unreadable";
  json now = digest_files(dir, "complete.json");
  for (const auto& [name, digest] : complete["files"].items())
    if (!now.contains(name))
      return name + " is missing";
    else if (now[name] != digest)
      return name + " was changed";
  for (const auto& [name, digest] : now.items())
    if (!complete["files"].contains(name)) return name + " does not belong to the entry";
  return "";
}

// Entries this process found whole, with complete.json's modification time then: `pkb run` judges every
// sample of a problem against one entry, and hashing the entry whole again each time (hundreds of MB for large
// problems) would be the same work again. An entry replaced since (a new complete.json) is checked anew.
class VerifiedEntries {
 public:
  bool contains(const fs::path& dir) {
    std::error_code ec;
    const auto written = fs::last_write_time(dir / "complete.json", ec);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = seen_.find(dir.string());
    return !ec && it != seen_.end() && it->second == written;
  }
  void add(const fs::path& dir) {
    std::error_code ec;
    const auto written = fs::last_write_time(dir / "complete.json", ec);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ec) seen_[dir.string()] = written;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, fs::file_time_type> seen_;
};

VerifiedEntries& verified_entries() {
  static VerifiedEntries entries;
  return entries;
}

// The expected outputs (check/expected.h: the oracle) of every call that is judged: the checked trials, the
// post-timing trial and the timing copies the reference pass drew, as LABEL/oracle.rankR.safetensors, written by
// `pkb-full oracle` (eval/oracle.h: the oracle needs libtorch, which this driver does not load).
void write_expected_outputs(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const fs::path& work) {
  const OracleJob job{spec.dir, run, o.trials, o.seed, work};
  std::vector<std::string> argv = {(executable_dir() / "pkb-full").string(), "oracle"};
  for (const std::string& a : oracle_args(job)) argv.push_back(a);
  ProcessOptions po;
  po.timeout_s = reference_deadline_s(o);
  po.stderr_path = work / "oracle.stderr";
  const ProcessResult pr = run_process(argv, po);
  if (!pr.ok())
    throw Error("the oracle (pkb-full oracle) for " + spec.folder() + " failed: " + pr.summary() + ": " +
                file_tail(work / "oracle.stderr", 2000));
  std::error_code ec;
  fs::remove(work / "oracle.stderr", ec);  // not a file of the entry
}

// The PyTorch-eager baseline: reference.py --time in W Python processes on trial 0's inputs saved in io_dir (its
// timing lands in io_dir/timing.py.json).
// reference.py's gate arguments: where the libtorch baseline is timed through the call gate (a GPU candidate in a
// runner) and PKB_EAGER_GATE=1 asks for it.
std::vector<std::string> eager_gate_args_for(const EvalOptions& o) {
  return eager_gate_args(o.device == DeviceKind::cuda && o.uses_runner());
}

PythonRunResult time_eager_baseline(const ProblemSpec& spec, const EvalOptions& o, const fs::path& io_dir) {
  std::vector<std::string> py_args = {"--time"};
  for (const auto& t : o.timing.to_args()) py_args.push_back(t);
  for (const auto& a : eager_gate_args_for(o)) py_args.push_back(a);
  PythonRunnerJob job{o.world, o.device, spec.dir, io_dir, "0", py_args, reference_deadline_s(o), {}};
  if (!o.visible_devices.empty()) job.env["CUDA_VISIBLE_DEVICES"] = o.visible_devices;
  return run_python_runner(job);
}

}  // namespace

std::vector<std::string> oracle_args(const OracleJob& job) {
  std::vector<std::string> a = {
      "--problem-dir", job.problem_dir.string(),        "--world",  std::to_string(job.run.world),
      "--dtype",       dtype_name(job.run.float_dtype), "--trials", std::to_string(job.trials),
      "--seed",        std::to_string(job.seed),        "--work",   job.work.string()};
  for (const auto& [name, value] : job.run.params) a.insert(a.end(), {"--param", name + "=" + std::to_string(value)});
  return a;
}

double reference_deadline_s(const EvalOptions& o) {
  return o.reference_timeout_s > 0 ? o.reference_timeout_s : std::max(kReferenceTimeoutS, o.timeout_s);
}

double wall_seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

WorkerOptions worker_options(const ProblemSpec& spec, const EvalOptions& o, const fs::path& dir) {
  WorkerOptions w;
  w.problem_dir = spec.dir.string();
  w.device = o.device;
  w.dtype = o.dtype;
  w.seed = o.seed;
  w.out_dir = dir.string();
  w.time = true;
  w.timing = o.timing;
  for (const auto& [k, v] : o.params) w.params.push_back(k + "=" + std::to_string(v));
  // The baselines are timed by the candidates' protocol (on GPUs the call gate's, or in process the events').
  if (o.device == DeviceKind::cuda)
    w.candidate_process = o.uses_runner() ? CandidateProcess::runner : CandidateProcess::in_process;
  return w;
}

GpuSharing gpu_sharing(const EvalOptions& o) {
  if (o.device != DeviceKind::cuda) return {};
  int gpus = o.visible_devices.empty()
                 ? static_cast<int>(visible_gpus().size())
                 : 1 + static_cast<int>(std::count(o.visible_devices.begin(), o.visible_devices.end(), ','));
  return plan_gpu_sharing(o.world, gpus, o.ranks_per_gpu, o.uses_runner());
}

RankJob rank_job(const EvalOptions& o, const std::vector<std::string>& args, const fs::path& dir,
                 const std::string& tag, double timeout_s) {
  RankJob job{o.world, o.device == DeviceKind::cuda, args, dir, tag, timeout_s, gpu_sharing(o).env, nullptr, {}};
  if (!o.visible_devices.empty() && o.ranks_per_gpu <= 1) job.env["CUDA_VISIBLE_DEVICES"] = o.visible_devices;
  return job;
}

json provenance(const EvalOptions& o) {
  RuntimeVersions v = runtime_versions(-1);  // library versions only: no device is touched
  auto [gpu, driver] = o.device == DeviceKind::cuda ? nvidia_proc_info() : std::pair<std::string, std::string>{};
  return {
      {"pkb_git", repo_revision()},
      {"gpu", gpu},
      {"driver", driver},
      {"cuda_driver_api", v.driver},
      {"cuda_runtime", v.cuda_runtime},
      {"nccl", v.nccl},
      // the libtorch the references run with: pkb-rank's, found without loading it here
      {"libtorch", libtorch_version_among(shared_libraries(executable_dir() / "pkb-rank"), PKB_TORCH_VERSION_STRING)}};
}

fs::path reference_dir(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const json& prov,
                       bool python) {
  json key = {{"version", kReferenceCacheVersion},
              {"build", build_digest()},
              {"problem_json", read_text_file(spec.dir / "problem.json")},
              {"reference_cpp", read_text_file(spec.dir / "reference.cpp")},
              {"reference_py", read_text_file(spec.dir / "reference.py")},
              {"params", run.params},
              {"world", o.world},
              {"device", enum_name(o.device)},
              {"dtype", o.dtype},
              {"seed", o.seed},
              {"trials", o.trials},
              {"timing", o.timing.to_json()},
              {"machine", fingerprint(prov)},
              {"python", python},
              // how the baselines were timed: the candidates' protocol (docs/design/runner-and-gate.md)
              {"baseline_protocol", !o.uses_runner()               ? "events"
                                    : o.device == DeviceKind::cuda ? "call_gate"
                                                                   : "doorbell"}};
  // reference.py through the gate's flags (PKB_EAGER_GATE=1) is another instrument: an entry of its own. Absent
  // otherwise, so that the entries made without it keep their keys.
  if (python && !eager_gate_args_for(o).empty()) key["eager_protocol"] = "call_gate_one_process";
  std::string material = key.dump(-1, ' ', false, json::error_handler_t::replace);
  return o.cache_dir / "reference" / (spec.folder() + "-" + sha256_hex(material).substr(0, 16));
}

// The reference pass, cached by everything that determines its outputs and timing. It is computed in a private
// directory and renamed into place once complete; if another process finished first, its result is used. An
// entry whose files do not match their recorded digests is discarded and computed again.
fs::path reference_pass(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const json& prov,
                        bool python, json& info) {
  int post = o.trials;
  fs::path dir = reference_dir(spec, run, o, prov, python);
  info["cache_dir"] = dir.string();
  if (fs::exists(dir / "complete.json")) {
    if (verified_entries().contains(dir)) {
      info["cached"] = true;
      info["verified_earlier"] = true;  // by this process: not hashed again
      return dir;
    }
    std::string damage = entry_damage(dir);
    if (damage.empty()) {
      verified_entries().add(dir);
      info["cached"] = true;
      return dir;
    }
    info["cache_damage"] = damage;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  info["cached"] = false;
  fs::path work = private_work_dir(dir);
  WorkerOptions w = worker_options(spec, o, work);
  w.trials = trial_range(0, post);
  std::random_device entropy;
  for (int i = 0; i < timed_check_count(o.timing); ++i)
    w.timed_checks.push_back((uint64_t{entropy()} << 32) | entropy());
  w.save_inputs = python;
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult pr = launch_trusted(o, to_args(w), work, "reference");
  if (!pr.ok()) {
    std::string why = pr.summary();
    if (auto e = first_rank_error(read_rank_records(work, o.world)))
      why = "rank " + std::to_string(e->rank) + ": " + e->message;
    else if (const std::string said = stderr_tail(pr, kMessageTailBytes); !said.empty())
      why += ": " + said;  // no rank said why: what mpirun or srun printed
    throw Error("reference pass for " + spec.folder() + " failed: " + why + " (files in " + work.string() + ")");
  }
  // Every rank computed the expected outputs of the copies in its own record; the driver and the candidate
  // pass go by rank 0's, so a rank that planned differently would leave copies unchecked or missing.
  const std::vector<std::optional<protocol::RankRecord>> records = read_rank_records(work, o.world);
  // A launch that ended well without every rank's record (a launcher that returned before its ranks ran) would
  // otherwise fail later, in the oracle, with less to say.
  for (size_t r = 0; r < records.size(); ++r)
    if (!records[r]) {
      // What the launcher said (srun's errors are all there is to go on when its step never ran the ranks).
      const std::string said = stderr_tail(pr, kMessageTailBytes);
      throw Error("reference pass for " + spec.folder() + ": rank " + std::to_string(r) +
                  " left no record though the launch ended with " + pr.summary() + " (files in " + work.string() + ")" +
                  (said.empty() ? std::string(", and it printed nothing") : ": " + said));
    }
  auto planned = [](const std::optional<protocol::RankRecord>& r) {
    if (!r) return std::string("no record");
    auto n = [](const std::optional<int>& x) { return x ? std::to_string(*x) : std::string("-"); };
    return "copies " + n(r->candidate_input_copies) + ", warm-up copies " + n(r->candidate_warmup_copies) +
           ", checked " + (r->timed_checks ? json(*r->timed_checks).dump() : std::string("-"));
  };
  for (size_t r = 1; r < records.size(); ++r)
    if (planned(records[r]) != planned(records[0]))
      throw Error("reference pass for " + spec.folder() + ": rank " + std::to_string(r) + " planned other timing " +
                  "copies than rank 0 (" + planned(records[r]) + " vs " + planned(records[0]) + ")");
  auto t_oracle = std::chrono::steady_clock::now();
  write_expected_outputs(spec, run, o, work);
  info["oracle_s"] = wall_seconds_since(t_oracle);
  if (python) {
    PythonRunResult py = time_eager_baseline(spec, o, work);
    if (py.outcome == PythonRunResult::Outcome::error)
      throw Error("PyTorch eager baseline (reference.py in W Python processes) failed: " + py.detail);
    // A skip (reference.py cannot run with this torch) leaves no timing.py.json: the record says so.
    if (py.outcome == PythonRunResult::Outcome::skip) info["python_skip"] = py.detail;
  }
  write_json_atomically(work / "complete.json",
                        {{"seconds", wall_seconds_since(t0)}, {"files", digest_files(work, "complete.json")}});
  place_directory(work, dir, "complete.json");  // another process's entry may have won: hashed at its first use
  return dir;
}

std::pair<protocol::RankTiming, json> retime_baselines(const ProblemSpec& spec, const EvalOptions& o, bool python,
                                                       const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  WorkerOptions w = worker_options(spec, o, dir);
  w.trials = {0};
  w.save_inputs = python;
  ProcessResult pr = launch_trusted(o, to_args(w), dir, "retime");
  const std::optional<protocol::RankRecord> rank0 = read_rank_records(dir, o.world)[0];
  if (!pr.ok() || !rank0 || !rank0->timing)
    throw Error("timing the libtorch+NCCL baseline again failed: " + pr.summary() + " (files in " + dir.string() + ")");
  json py = nullptr;
  if (python && time_eager_baseline(spec, o, dir).outcome == PythonRunResult::Outcome::ok)
    py = read_json_or_null(dir / "timing.py.json");
  return {*rank0->timing, py};
}

}  // namespace pkb
