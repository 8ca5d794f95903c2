#include "validate/validate.h"

#include <chrono>
#include <fstream>
#include <sstream>

#include "check/compare.h"
#include "check/outputs.h"
#include "core/error.h"
#include "core/files.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "launch/gpus.h"
#include "launch/jobs.h"
#include "reference/reference.h"
#include "spec/catalog.h"
#include "spec/roofline.h"

namespace pkb {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

fs::path rank_file(const fs::path& dir, int trial, const std::string& prefix, int rank) {
  return dir / ("trial" + std::to_string(trial)) / (prefix + std::to_string(rank) + ".safetensors");
}

// First error any rank recorded, else the process summary with the tail of stderr.
std::string launch_failure(const ProcessResult& pr, const fs::path& dir, int world) {
  if (auto e = first_rank_error(read_rank_records(dir, world))) return "rank " + std::to_string(e->rank) + ": " + e->message;
  std::string tail = stderr_tail(pr, 600);
  return pr.summary() + (tail.empty() ? "" : "; stderr: " + tail);
}

ProcessResult run_reference_job(const ProblemSpec& spec, const ValidateOptions& o, const fs::path& dir, bool save_inputs) {
  RankJob job{o.world, o.device == "cuda",
              {"--problem-dir", spec.dir.string(), "--device", o.device, "--dtype", o.dtype, "--trials",
               trial_list(0, o.trials - 1), "--seed", std::to_string(o.seed), "--out", dir.string()},
              dir, "mpirun", o.timeout_s, {}};
  for (const auto& [k, v] : o.params) job.args.insert(job.args.end(), {"--param", k + "=" + std::to_string(v)});
  if (o.device == "cuda") job.env = plan_gpu_sharing(o.world, static_cast<int>(visible_gpus().size())).env;
  if (save_inputs) job.args.push_back("--save-inputs");
  if (o.time) {
    job.args.push_back("--time");
    for (const auto& t : o.timing.to_args()) job.args.push_back(t);
  }
  return run_rank_job(job);
}

PythonRunResult run_python_job(const ProblemSpec& spec, const ValidateOptions& o, const fs::path& dir) {
  std::vector<std::string> extra;
  if (o.time) {
    extra = {"--time"};
    for (const auto& t : o.timing.to_args()) extra.push_back(t);
  }
  // Ranks sharing a GPU cannot use NCCL: reference.py then runs with gloo on CPU tensors of the same input bytes.
  bool shared = o.device == "cuda" && plan_gpu_sharing(o.world, static_cast<int>(visible_gpus().size())).ranks_per_gpu > 1;
  return run_python_runner({o.world, shared ? "cpu" : o.device, spec.dir, dir, trial_list(0, o.trials - 1), extra,
                            o.timeout_s, {}});
}

struct Tally {
  bool pass = true;
  std::string first_failure;
  double worst_rel_l2 = 0, worst_abs = 0;

  void add(const Comparison& c, const std::string& where, json& log) {
    log.push_back({{"where", where}, {"pass", c.pass}, {"max_abs_err", c.max_abs_err}, {"rel_l2", c.rel_l2},
                   {"mismatches", c.mismatches}, {"first_bad", c.first_bad}, {"error", c.error}});
    worst_rel_l2 = std::max(worst_rel_l2, c.rel_l2);
    worst_abs = std::max(worst_abs, c.max_abs_err);
    if (!c.pass && pass) {
      pass = false;
      first_failure = where + ": " + describe(c);
    }
  }
};

std::vector<Tensors> read_outputs(const ProblemSpec& spec, const RunShape& run, const fs::path& dir, int trial,
                                  const std::string& prefix) {
  std::vector<Tensors> out;
  for (int r = 0; r < run.world; ++r) out.push_back(outputs_in_order(spec, read_safetensors(rank_file(dir, trial, prefix, r))));
  return out;
}

// Compares every rank's outputs in `prefix` files with `expected` (per rank, per output, replication included).
void compare_trial(const ProblemSpec& spec, const RunShape& run, const fs::path& dir, int trial, const std::string& prefix,
                   const std::vector<Tensors>& expected, Policy policy, Tally& tally, json& log) {
  for (const OutputCheck& c : check_outputs(spec, run, policy, read_outputs(spec, run, dir, trial, prefix), expected, true))
    tally.add(c.result, "trial " + std::to_string(trial) + " " + c.where(), log);
}

double median_us(const json& t) { return t.is_object() ? t.value("median_us", 0.0) : 0.0; }
double paper_us(const json& t) { return t.is_object() ? median_us(t.value("paper", json())) : 0.0; }

// The baselines' times and their fraction of the roofline, into the record and one printable line.
std::string baseline_timing(const ProblemSpec& spec, const RunShape& run, const ValidateOptions& o,
                            const fs::path& dir, bool python_ran, json& record) {
  json cpp = read_json_or_null(dir / "rank0.json").value("timing", json());
  json py = python_ran ? read_json_or_null(dir / "timing.py.json") : json();
  json roof = roofline_floor(spec, run, o.topology);
  roof["sol_libtorch_nccl"] = speed_of_light(roof, median_us(cpp));
  roof["sol_pytorch_eager"] = speed_of_light(roof, median_us(py));
  record["timing"] = {{"libtorch_nccl", cpp}, {"pytorch_eager", py}};
  record["roofline"] = roof;
  if (median_us(cpp) <= 0) return "no libtorch+NCCL timing recorded";
  char buf[256];
  double floor = roof["floor_us"].get<double>();
  const char* name = o.device == "cuda" ? "libtorch+NCCL" : "libtorch+MPI on CPU";
  int n = std::snprintf(buf, sizeof buf, "%s %.1f us (IQR %.1f, SOL %.0f%%; paper method %.1f us)", name,
                        median_us(cpp), cpp.value("iqr_us", 0.0), 100 * floor / median_us(cpp), paper_us(cpp));
  if (median_us(py) > 0)
    n += std::snprintf(buf + n, sizeof buf - n, ", PyTorch eager %.1f us (SOL %.0f%%; paper %.1f us)", median_us(py),
                       100 * floor / median_us(py), paper_us(py));
  std::snprintf(buf + n, sizeof buf - n, "; roofline floor %.3g us (%s-bound, %s)", floor,
                roof["bound"].get<std::string>().c_str(), o.topology.c_str());
  return buf;
}

}  // namespace

const char* verdict_name(Verdict v) { return v == Verdict::pass ? "PASS" : v == Verdict::skip ? "SKIP" : "FAIL"; }

bool python_torch_available() { return !python_with_torch().empty(); }

ValidationResult validate_problem(const ProblemSpec& spec, const ValidateOptions& options) {
  ValidateOptions o = options;
  if (o.time) o.timing.validate();
  if (o.small) {
    std::map<std::string, int64_t> params = spec.test_parameters;
    for (const auto& [k, v] : options.params) params[k] = v;
    o.params = params;
  }
  auto start = std::chrono::steady_clock::now();
  ValidationResult res;
  res.problem = spec.folder();
  fs::path dir;  // the problem's working directory, once made: validation.json goes there
  std::string python_verdict = "not run", python_detail;
  auto finish = [&](Verdict v, std::string detail) {
    res.verdict = v;
    res.detail = std::move(detail);
    res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    res.record["verdict"] = verdict_name(v);
    res.record["detail"] = res.detail;
    res.record["python"] = {{"verdict", python_verdict}, {"detail", python_detail}};
    res.record["wall_s"] = res.wall_s;
    if (!dir.empty()) std::ofstream(dir / "validation.json") << res.record.dump(2) << "\n";
    return res;
  };

  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32, got '" + o.dtype + "'");
  std::map<std::string, int64_t> params = spec.parameters;
  for (const auto& [k, v] : o.params) params[k] = v;
  if (auto why = world_size_violation(spec, o.world, params)) return finish(Verdict::skip, *why);
  RunShape run = resolve_run(spec, o.world, *dtype, o.params);
  const ReferenceImpl* impl = find_reference(spec.slug);
  if (!impl) return finish(Verdict::fail, "no reference.cpp registered for '" + spec.slug + "'");

  dir = o.out_dir / spec.folder() / ("w" + std::to_string(o.world) + "_" + o.device + "_" + o.dtype);
  fs::remove_all(dir);
  fs::create_directories(dir);
  bool want_python = o.python == PythonCheck::on ||
                     (o.python == PythonCheck::auto_detect && o.device == "cuda" && python_torch_available());
  res.record = {{"problem", spec.folder()}, {"world", o.world}, {"device", o.device}, {"dtype", o.dtype},
                {"trials", o.trials}, {"seed", o.seed}, {"params", run.params}};

  ProcessResult pr = run_reference_job(spec, o, dir, want_python);
  res.record["reference_launch_s"] = pr.wall_s;
  if (!pr.ok()) return finish(Verdict::fail, "reference run failed: " + launch_failure(pr, dir, o.world));

  OracleContext octx = oracle_context(spec, run);
  Tally tally;
  json& log = res.record["comparisons"] = json::array();
  for (int t = 0; t < o.trials; ++t) {
    std::vector<Tensors> inputs;
    for (int r = 0; r < o.world; ++r) inputs.push_back(make_inputs(spec, run, r, t, o.seed).tensors);
    std::vector<Tensors> expected = impl->oracle(octx, inputs);
    if (static_cast<int>(expected.size()) != o.world)
      throw Error(spec.folder() + ": oracle returned outputs for " + std::to_string(expected.size()) + " ranks");
    compare_trial(spec, run, dir, t, "rank", expected, Policy::robust, tally, log);
  }
  // The paper-compatible policy against the oracle, recorded for information.
  res.record["worst_rel_l2"] = tally.worst_rel_l2;
  res.record["worst_abs_err"] = tally.worst_abs;

  if (!want_python) {
    python_verdict = "skipped";
    python_detail = o.python == PythonCheck::off ? "--python off"
                    : o.device == "cuda"         ? "no python3 here can import torch"
                                                 : "on --device cpu the reference.py cross-check runs with --python on";
  } else {
    PythonRunResult py = run_python_job(spec, o, dir);
    res.record["python_launch_s"] = py.wall_s;
    if (py.outcome == PythonRunResult::Outcome::skip) {
      python_verdict = "skipped";
      python_detail = "cannot run here: " + py.detail;
    } else if (py.outcome == PythonRunResult::Outcome::error) {
      python_verdict = "failed";
      python_detail = py.detail;
      if (tally.pass) tally.pass = false, tally.first_failure = "reference.py failed: " + py.detail;
    } else {
      Tally py_tally;
      json& pylog = res.record["python_comparisons"] = json::array();
      for (int t = 0; t < o.trials; ++t)
        compare_trial(spec, run, dir, t, "py.rank", read_outputs(spec, run, dir, t, "rank"), Policy::pkb, py_tally, pylog);
      python_verdict = py_tally.pass ? "agrees" : "disagrees";
      python_detail = py_tally.pass ? "" : py_tally.first_failure;
      if (!py_tally.pass && tally.pass) {
        tally.pass = false;
        tally.first_failure = "reference.py vs reference.cpp: " + py_tally.first_failure;
      }
    }
  }
  res.python = python_verdict + (python_detail.empty() ? "" : ": " + python_detail);
  if (o.time) res.timing = baseline_timing(spec, run, o, dir, python_verdict == "agrees", res.record);
  if (!tally.pass) return finish(Verdict::fail, tally.first_failure);
  char buf[160];
  std::snprintf(buf, sizeof buf, "%d trials x %d ranks match the oracle (worst rel_l2 %.2g, max abs err %.2g)",
                o.trials, o.world, tally.worst_rel_l2, tally.worst_abs);
  return finish(Verdict::pass, buf);
}

}  // namespace pkb
