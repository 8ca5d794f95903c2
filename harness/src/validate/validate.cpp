#include "validate/validate.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

#include "check/compare.h"
#include "check/expected.h"
#include "check/outputs.h"
#include "core/cores.h"
#include "core/error.h"
#include "core/files.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "launch/gpus.h"
#include "launch/jobs.h"
#include "protocol/instruments.h"
#include "protocol/rank_plan.h"
#include "protocol/rank_record.h"
#include "reference/reference.h"
#include "spec/catalog.h"
#include "spec/roofline.h"
#include "worker/worker.h"

namespace pkb {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

fs::path rank_file(const fs::path& dir, int trial, const std::string& prefix, int rank) {
  return dir / ("trial" + std::to_string(trial)) / (prefix + std::to_string(rank) + ".safetensors");
}

// First error any rank recorded, else the process summary with the tail of stderr.
std::string launch_failure_detail(const ProcessResult& pr, const fs::path& dir, int world) {
  try {
    if (auto e = first_rank_error(read_rank_records(dir, world)))
      return "rank " + std::to_string(e->rank) + ": " + e->message;
  } catch (const protocol::ProtocolError& e) {
    return pr.summary() + "; " + e.what();
  }
  std::string tail = stderr_tail(pr, kMessageTailBytes);
  return pr.summary() + (tail.empty() ? "" : "; stderr: " + tail);
}

struct Tally {
  bool pass = true;
  std::string first_failure;
  double worst_rel_l2 = 0, worst_abs = 0;

  void add(const Comparison& c, const std::string& where, json& log) {
    log.push_back({{"where", where},
                   {"pass", c.pass},
                   {"max_abs_err", c.max_abs_err},
                   {"rel_l2", c.rel_l2},
                   {"mismatches", c.mismatches},
                   {"first_bad", c.first_bad},
                   {"error", c.error}});
    worst_rel_l2 = std::max(worst_rel_l2, c.rel_l2);
    worst_abs = std::max(worst_abs, c.max_abs_err);
    if (!c.pass && pass) {
      pass = false;
      first_failure = where + ": " + describe(c);
    }
  }
};

// One problem of a validation: its options (parameters resolved), shape and working directory, the verdict so
// far, and what its launches left.
struct Planned {
  const ProblemSpec* spec = nullptr;
  ValidateOptions o;
  RunShape run;
  fs::path dir;
  bool want_python = false;
  bool done = false;  // verdict decided (a skip, or a failure before or between the launches)
  ValidationResult res;
  Tally tally;
  std::vector<std::vector<Tensors>> expected;  // per trial: every rank's oracle outputs
  std::string python_verdict = "not run", python_detail;
  double launch_share_s = 0;  // this problem's share of the batched launches' wall time
  double driver_s = 0;        // time spent on it here (planning, the oracle and the comparisons)
};

// The libtorch references of several problems in one mpirun launch (pkb-rank --batch), from `first` on; returns
// the launch and how many of them finished on every rank (the one after those ended the launch).
std::pair<ProcessResult, size_t> run_reference_batch(const std::vector<Planned*>& batch, const ValidateOptions& o,
                                                     const fs::path& batch_dir) {
  std::vector<protocol::RankBatchEntry> entries;
  for (const Planned* p : batch) {
    std::vector<std::string> params;
    for (const auto& [k, v] : p->o.params) params.push_back(k + "=" + std::to_string(v));
    entries.push_back({p->spec->dir.string(), p->dir.string(), params});
  }
  fs::create_directories(batch_dir);
  fs::path file = batch_dir / "batch.json";
  write_json_atomically(file, json(entries));
  WorkerOptions w;
  w.batch_file = file.string();
  w.device = o.device;
  w.dtype = o.dtype;
  w.trials = trial_range(0, o.trials - 1);
  w.seed = o.seed;
  w.save_inputs = std::any_of(batch.begin(), batch.end(), [](const Planned* p) { return p->want_python; });
  w.time = o.time;
  w.timing = o.timing;
  // The baselines' own speed, by events on their stream (no candidate to compare with), unless --through-gate asks
  // for the instrument an evaluation times them with (eval/reference.cpp): the call gate's flag operations in each
  // window.
  w.candidate_process = o.through_gate ? CandidateProcess::runner : CandidateProcess::in_process;
  RankJob job{o.world,    o.device == DeviceKind::cuda,
              to_args(w), batch_dir,
              "mpirun",   o.timeout_s * static_cast<double>(batch.size()),
              {},         nullptr,
              {}};
  if (o.device == DeviceKind::cuda)
    // --through-gate: under MPS, as an evaluation's reference pass runs beside a runner (eval/reference.cpp). On the
    // H100 the same gated baseline read 18.0 us without the daemon and 10.8 us in an evaluation with it (001 at W = 1).
    job.env = plan_gpu_sharing(o.world, static_cast<int>(visible_gpus().size()), o.ranks_per_gpu, o.through_gate).env;
  ProcessResult pr = run_rank_job(job);
  size_t finished = 0;
  for (const Planned* p : batch) {
    auto records = read_rank_records(p->dir, o.world);
    bool ok = std::all_of(records.begin(), records.end(), [](const std::optional<protocol::RankRecord>& r) {
      return r && r->status == protocol::RankStatus::ok;
    });
    if (!ok) break;
    ++finished;
  }
  return {pr, finished};
}

PythonRunnerJob python_job(const ValidateOptions& o) {
  std::vector<std::string> extra;
  // Ranks sharing a GPU cannot use NCCL: reference.py then runs with gloo on CPU tensors of the same input bytes.
  bool shared = o.device == DeviceKind::cuda &&
                plan_gpu_sharing(o.world, static_cast<int>(visible_gpus().size()), o.ranks_per_gpu).ranks_per_gpu > 1;
  if (o.time) {
    extra = {"--time"};
    for (const auto& t : o.timing.to_args()) extra.push_back(t);
    for (const auto& a : eager_gate_args(o.device == DeviceKind::cuda && o.through_gate && !shared)) extra.push_back(a);
  }
  PythonRunnerJob job{
      o.world, shared ? DeviceKind::cpu : o.device, {}, {}, trial_list(0, o.trials - 1), extra, o.timeout_s, {}};
  // A GPU's work on the host's cores: one torch thread a rank made 077's fp32 attention (~7 TFLOP a trial at W = 2)
  // run past the 180 s deadline; the ranks split the cores instead, as pkb-rank's do.
  if (shared) job.host_threads = std::max(1, usable_cores() / o.world);
  return job;
}

std::vector<Tensors> read_outputs(const ProblemSpec& spec, const RunShape& run, const fs::path& dir, int trial,
                                  const std::string& prefix) {
  std::vector<Tensors> out;
  for (int r = 0; r < run.world; ++r)
    out.push_back(outputs_in_order(spec, read_safetensors(rank_file(dir, trial, prefix, r))));
  return out;
}

// Compares every rank's outputs in `prefix` files with `expected` (per rank, per output, replication included).
void compare_trial(const ProblemSpec& spec, const RunShape& run, const fs::path& dir, int trial,
                   const std::string& prefix, const std::vector<Tensors>& expected, Policy policy, Tally& tally,
                   json& log) {
  for (const OutputCheck& c :
       check_outputs(spec, run, policy, read_outputs(spec, run, dir, trial, prefix), expected, true))
    tally.add(c.result, "trial " + std::to_string(trial) + " " + c.where(), log);
}

using protocol::RankTiming;
double median_us(const std::optional<RankTiming>& t) { return t ? t->pkb.median_us : 0.0; }
double paper_us(const std::optional<RankTiming>& t) { return t ? t->paper.stats.median_us : 0.0; }
double device_us(const std::optional<RankTiming>& t) {
  return t && t->device && t->device->stats ? t->device->stats->median_us : 0.0;
}
// ", device view X us" where the device view measured the baseline (GPU references), else nothing.
std::string device_part(const std::optional<RankTiming>& t) {
  if (device_us(t) <= 0) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, ", device view %.1f us", device_us(t));
  return buf;
}

// The baselines' times and their fraction of the roofline, into the record and one printable line.
// The libtorch baseline's instrument, named as an evaluation's record names it (timing.instruments): on CPU ranks
// validate always times through the doorbell.
const char* baseline_instrument(const ValidateOptions& o) {
  return protocol::libtorch_baseline_instrument(o.device, o.device != DeviceKind::cuda || o.through_gate);
}

std::string baseline_timing(const ProblemSpec& spec, const RunShape& run, const ValidateOptions& o, const fs::path& dir,
                            bool python_ran, json& record) {
  const std::optional<RankTiming> cpp = read_rank0_record(dir).timing;
  const json py_raw = python_ran ? read_json_or_null(dir / "timing.py.json") : json();
  const std::optional<RankTiming> py = protocol::reference_py_timing(py_raw);
  json roof = roofline_floor(spec, run, o.topology);
  roof["sol_libtorch_nccl"] = speed_of_light(roof, median_us(cpp));
  roof["sol_pytorch_eager"] = speed_of_light(roof, median_us(py));
  record["timing"] = {{"libtorch_nccl", cpp ? json(*cpp) : json()},
                      {"pytorch_eager", py_raw},
                      {"instruments",
                       {{"libtorch_nccl", baseline_instrument(o)},
                        {"pytorch_eager", protocol::eager_baseline_instrument(py ? py->instrument : std::nullopt)}}}};
  record["roofline"] = roof;
  if (median_us(cpp) <= 0) return "no libtorch+NCCL timing recorded";
  char buf[384];
  double floor = roof["floor_us"].get<double>();
  const char* name = o.device == DeviceKind::cuda ? "libtorch+NCCL" : "libtorch+MPI on CPU";
  int n = std::snprintf(buf, sizeof buf, "%s %.1f us (%s; IQR %.1f, SOL %.0f%%; paper method %.1f us%s)", name,
                        median_us(cpp), baseline_instrument(o), cpp->pkb.iqr_us, 100 * floor / median_us(cpp),
                        paper_us(cpp), device_part(cpp).c_str());
  if (median_us(py) > 0)
    n += std::snprintf(buf + n, sizeof buf - n, ", PyTorch eager %.1f us (SOL %.0f%%; paper %.1f us%s)", median_us(py),
                       100 * floor / median_us(py), paper_us(py), device_part(py).c_str());
  std::snprintf(buf + n, sizeof buf - n, "; roofline floor %.3g us (%s-bound, %s)", floor,
                roof["bound"].get<std::string>().c_str(), roof["topology"].get<std::string>().c_str());
  return buf;
}

}  // namespace

const char* verdict_name(Verdict v) { return v == Verdict::pass ? "PASS" : v == Verdict::skip ? "SKIP" : "FAIL"; }

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void finish(Planned& p, Verdict v, std::string detail) {
  ValidationResult& res = p.res;
  res.verdict = v;
  res.detail = std::move(detail);
  res.python = p.python_verdict + (p.python_detail.empty() ? "" : ": " + p.python_detail);
  res.wall_s = p.driver_s + p.launch_share_s;
  res.record["verdict"] = verdict_name(v);
  res.record["detail"] = res.detail;
  res.record["python"] = {{"verdict", p.python_verdict}, {"detail", p.python_detail}};
  res.record["wall_s"] = res.wall_s;
  if (!p.dir.empty())
    write_file_atomically(p.dir / "validation.json",
                          res.record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  p.done = true;
}

// Parameters, W rules and the working directory; decides skips and missing references before any launch.
Planned plan(const ProblemSpec& spec, const ValidateOptions& options) {
  Planned p;
  p.spec = &spec;
  p.res.problem = spec.folder();
  p.o = options;
  ValidateOptions& o = p.o;
  if (o.time) o.timing.validate();
  if (o.small) {
    std::map<std::string, int64_t> params = spec.test_parameters;
    for (const auto& [k, v] : options.params) params[k] = v;
    o.params = params;
  }
  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32, got '" + o.dtype + "'");
  std::map<std::string, int64_t> params = spec.parameters;
  for (const auto& [k, v] : o.params) params[k] = v;
  if (auto why = world_size_violation(spec, o.world, params)) {
    finish(p, Verdict::skip, *why);
    return p;
  }
  p.run = resolve_run(spec, o.world, *dtype, o.params);
  if (!find_reference(spec.slug)) {
    finish(p, Verdict::fail, "no reference.cpp registered for '" + spec.slug + "'");
    return p;
  }
  p.dir = o.out_dir / spec.folder() / ("w" + std::to_string(o.world) + "_" + enum_name(o.device) + "_" + o.dtype);
  fs::remove_all(p.dir);
  fs::create_directories(p.dir);
  p.want_python = o.python == PythonCheck::on ||
                  (o.python == PythonCheck::auto_detect && o.device == DeviceKind::cuda && python_torch_available());
  p.res.record = {{"problem", spec.folder()}, {"world", o.world}, {"device", enum_name(o.device)}, {"dtype", o.dtype},
                  {"trials", o.trials},       {"seed", o.seed},   {"params", p.run.params}};
  return p;
}

// A reference whose process ran fp32 math with TF32 fails validation, whatever its outputs.
void require_ieee_fp32(Planned& p, const json& fp32_math, const std::string& who) {
  if (protocol::fp32_math_is_ieee(fp32_math)) return;
  if (p.tally.pass)
    p.tally.pass = false, p.tally.first_failure = who + " ran without IEEE fp32 math (TF32?): " + fp32_math.dump();
}

// Every rank's reference outputs against the oracle, run here on inputs recomputed from the seed.
void check_against_oracle(Planned& p) {
  const ProblemSpec& spec = *p.spec;
  json& log = p.res.record["comparisons"] = json::array();
  for (int t = 0; t < p.o.trials; ++t) {
    p.expected.push_back(expected_outputs(spec, p.run, all_rank_inputs(spec, p.run, t, p.o.seed)));
    compare_trial(spec, p.run, p.dir, t, "rank", p.expected.back(), Policy::robust, p.tally, log);
  }
  p.res.record["worst_rel_l2"] = p.tally.worst_rel_l2;
  p.res.record["worst_abs_err"] = p.tally.worst_abs;
  p.res.record["fp32_math"] = read_rank0_record(p.dir).fp32_math;
  require_ieee_fp32(p, p.res.record["fp32_math"], "reference.cpp");
}

void apply_python(Planned& p, const PythonRunResult& py) {
  p.res.record["python_launch_s"] = py.wall_s;
  if (py.outcome == PythonRunResult::Outcome::skip) {
    p.python_verdict = "skipped";
    p.python_detail = "cannot run here: " + py.detail;
  } else if (py.outcome == PythonRunResult::Outcome::error) {
    p.python_verdict = "failed";
    p.python_detail = py.detail;
    if (p.tally.pass) p.tally.pass = false, p.tally.first_failure = "reference.py failed: " + py.detail;
  } else {
    // Same device: reference.py against reference.cpp under the paper's allclose. Ranks sharing a GPU run
    // reference.py on CPU ranks (no NCCL), whose bf16 GEMMs round differently from cuBLAS by an ulp here and there:
    // then reference.py is held to what reference.cpp is held to, the oracle under the robust policy.
    bool same_device = python_job(p.o).device == p.o.device;
    p.res.record["python_fp32_math"] = protocol::reference_py_fp32_math(read_json_or_null(p.dir / "py.rank0.json"));
    require_ieee_fp32(p, p.res.record["python_fp32_math"], "reference.py");
    p.res.record["python_check"] =
        same_device ? "pkb allclose vs reference.cpp"
                    : "robust vs the oracle (reference.py on CPU ranks, reference.cpp on the shared GPU)";
    Tally py_tally;
    json& pylog = p.res.record["python_comparisons"] = json::array();
    for (int t = 0; t < p.o.trials; ++t)
      if (same_device)
        compare_trial(*p.spec, p.run, p.dir, t, "py.rank", read_outputs(*p.spec, p.run, p.dir, t, "rank"),
                      Policy::paper_allclose, py_tally, pylog);
      else
        compare_trial(*p.spec, p.run, p.dir, t, "py.rank", p.expected.at(t), Policy::robust, py_tally, pylog);
    p.python_verdict = py_tally.pass ? "agrees" : "disagrees";
    p.python_detail = py_tally.pass ? "" : py_tally.first_failure;
    if (!py_tally.pass && p.tally.pass) {
      p.tally.pass = false;
      p.tally.first_failure = "reference.py vs reference.cpp: " + py_tally.first_failure;
    }
  }
}

void conclude(Planned& p) {
  const ValidateOptions& o = p.o;
  if (!p.want_python) {
    p.python_verdict = "skipped";
    p.python_detail = o.python == PythonCheck::off ? "--python off"
                      : o.device == DeviceKind::cuda
                          ? "no python3 here can import torch"
                          : "on --device cpu the reference.py cross-check runs with --python on";
  }
  if (o.time) p.res.timing = baseline_timing(*p.spec, p.run, o, p.dir, p.python_verdict == "agrees", p.res.record);
  if (!p.tally.pass) return finish(p, Verdict::fail, p.tally.first_failure);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d trials x %d ranks match the oracle (worst rel_l2 %.2g, max abs err %.2g)",
                o.trials, o.world, p.tally.worst_rel_l2, p.tally.worst_abs);
  finish(p, Verdict::pass, buf);
}

// The chunk's problems planned (a problem that cannot be planned fails here, alone).
std::vector<Planned> plan_chunk(const std::vector<const ProblemSpec*>& specs, const ValidateOptions& options) {
  std::vector<Planned> chunk;
  for (const ProblemSpec* spec : specs) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      chunk.push_back(plan(*spec, options));
      chunk.back().driver_s += seconds_since(t0);
    } catch (const Error& e) {
      Planned p;
      p.spec = spec;
      p.res.problem = spec->folder();
      finish(p, Verdict::fail, e.what());
      chunk.push_back(std::move(p));
    }
  }
  return chunk;
}

// References: one launch for the chunk; a problem that ends a launch early fails with its ranks' error, and the
// launch resumes after it.
void run_references(std::vector<Planned>& chunk, const ValidateOptions& options) {
  std::vector<Planned*> todo;
  for (auto& p : chunk)
    if (!p.done) todo.push_back(&p);
  fs::path batch_root = options.out_dir / ".launches";
  while (!todo.empty()) {
    auto t0 = std::chrono::steady_clock::now();
    ProcessResult pr;
    size_t finished = 0;
    try {
      std::tie(pr, finished) = run_reference_batch(todo, options, batch_root / todo.front()->spec->folder());
    } catch (const std::exception& e) {
      for (Planned* p : todo) finish(*p, Verdict::fail, std::string("reference launch failed: ") + e.what());
      break;
    }
    size_t covered = std::min(todo.size(), finished + 1);
    double share = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / covered;
    for (size_t i = 0; i < covered; ++i) {
      Planned& p = *todo[i];
      p.launch_share_s += share;
      p.res.record["reference_launch_s"] = pr.wall_s;
      p.res.record["reference_launch_problems"] = todo.size();
      if (i < finished) continue;
      p.res.record["reference_launch"] = {
          {"stdout", (batch_root / todo.front()->spec->folder() / "mpirun.stdout").string()}};
      finish(p, Verdict::fail, "reference run failed: " + launch_failure_detail(pr, p.dir, options.world));
    }
    todo.erase(todo.begin(), todo.begin() + static_cast<std::ptrdiff_t>(covered));
  }
}

void check_chunk_against_oracle(std::vector<Planned>& chunk) {
  for (auto& p : chunk) {
    if (p.done) continue;
    auto t0 = std::chrono::steady_clock::now();
    try {
      check_against_oracle(p);
      p.driver_s += seconds_since(t0);
    } catch (const std::exception& e) {
      p.driver_s += seconds_since(t0);
      finish(p, Verdict::fail, std::string("oracle check failed: ") + e.what());
    }
  }
}

// reference.py: one launch of W Python processes for the chunk, again resumed after a problem that ends it.
void run_python_references(std::vector<Planned>& chunk, const ValidateOptions& options) {
  std::vector<Planned*> python;
  for (auto& p : chunk)
    if (!p.done && p.want_python) python.push_back(&p);
  while (!python.empty()) {
    std::vector<PythonBatchEntry> entries;
    for (const Planned* p : python) entries.push_back({p->spec->dir, p->dir});
    auto t0 = std::chrono::steady_clock::now();
    std::vector<PythonRunResult> got = run_python_batch(python_job(options), entries);
    double share = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / got.size();
    for (size_t i = 0; i < got.size() && i < python.size(); ++i) {
      python[i]->launch_share_s += share;
      try {
        apply_python(*python[i], got[i]);
      } catch (const std::exception& e) {
        python[i]->python_verdict = "failed";
        python[i]->python_detail = e.what();
        python[i]->tally.pass = false;
        if (python[i]->tally.first_failure.empty()) python[i]->tally.first_failure = e.what();
      }
    }
    python.erase(python.begin(), python.begin() + static_cast<std::ptrdiff_t>(std::min(got.size(), python.size())));
  }
}

}  // namespace

std::vector<ValidationResult> validate_problems(const std::vector<const ProblemSpec*>& specs,
                                                const ValidateOptions& given,
                                                const std::function<void(const ValidationResult&)>& on_result) {
  ValidateOptions options = given;
  options.timing = options.timing.for_device(options.device);  // once, for every launch and record: as evaluate does
  std::vector<ValidationResult> results;
  const size_t batch = options.device == DeviceKind::cpu ? kValidateBatchCpu : kValidateBatch;
  for (size_t first = 0; first < specs.size(); first += batch) {
    std::vector<Planned> chunk =
        plan_chunk({specs.begin() + static_cast<std::ptrdiff_t>(first),
                    specs.begin() + static_cast<std::ptrdiff_t>(std::min(specs.size(), first + batch))},
                   options);
    run_references(chunk, options);
    check_chunk_against_oracle(chunk);
    run_python_references(chunk, options);
    for (auto& p : chunk) {
      if (!p.done) {
        try {
          conclude(p);
        } catch (const std::exception& e) {
          finish(p, Verdict::fail, e.what());
        }
      }
      if (on_result) on_result(p.res);
      results.push_back(p.res);
    }
  }
  return results;
}

ValidationResult validate_problem(const ProblemSpec& spec, const ValidateOptions& options) {
  return validate_problems({&spec}, options, nullptr).front();
}

}  // namespace pkb
