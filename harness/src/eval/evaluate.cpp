#include "eval/evaluate.h"

#include <chrono>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>

#include "check/compare.h"
#include "check/outputs.h"
#include "compile/compiler.h"
#include "core/error.h"
#include "core/sha256.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "core/files.h"
#include "launch/jobs.h"
#include "runtime/runtime.h"
#include "spec/catalog.h"
#include "spec/roofline.h"
#include "spec/topology.h"
#include "validate/validate.h"

#ifndef PKB_TORCH_VERSION_STRING
#define PKB_TORCH_VERSION_STRING "unknown"
#endif

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> worker_args(const ProblemSpec& spec, const EvalOptions& o, const fs::path& dir) {
  std::vector<std::string> a = {"--problem-dir", spec.dir.string(),
                                "--device", o.device, "--dtype", o.dtype, "--seed", std::to_string(o.seed),
                                "--out", dir.string(), "--time", "--warmup", std::to_string(o.timing.warmup),
                                "--iters", std::to_string(o.timing.iters)};
  for (const auto& [k, v] : o.params) a.insert(a.end(), {"--param", k + "=" + std::to_string(v)});
  return a;
}

ProcessResult launch(const EvalOptions& o, const std::vector<std::string>& args, const fs::path& dir,
                     const std::string& tag) {
  RankJob job{o.world, o.device == "cuda", args, dir, tag, o.timeout_s, {}};
  if (!o.visible_devices.empty()) job.env["CUDA_VISIBLE_DEVICES"] = o.visible_devices;
  return run_rank_job(job);
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

json provenance(const EvalOptions& o) {
  RuntimeVersions v = runtime_versions(-1);  // library versions only: no device is touched
  auto [gpu, driver] = o.device == "cuda" ? nvidia_proc_info() : std::pair<std::string, std::string>{};
  return {{"pkb_git", repo_revision()}, {"gpu", gpu}, {"driver", driver},
          {"cuda_driver_api", v.driver}, {"cuda_runtime", v.cuda_runtime}, {"nccl", v.nccl},
          {"libtorch", PKB_TORCH_VERSION_STRING}};
}

// What the machine and software are, without pkb's own revision: a new commit keeps cached baselines.
std::string fingerprint(json prov) {
  prov.erase("pkb_git");
  return prov.dump();
}

fs::path reference_dir(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const json& prov, bool python) {
  std::string key_material = read_text_file(spec.dir / "problem.json") + read_text_file(spec.dir / "reference.cpp") +
                             read_text_file(spec.dir / "reference.py") + json(run.params).dump() +
                             std::to_string(o.world) + o.device + o.dtype + std::to_string(o.seed) +
                             std::to_string(o.trials) + std::to_string(o.timing.warmup) +
                             std::to_string(o.timing.iters) + fingerprint(prov) + (python ? "py" : "");
  return o.cache_dir / "reference" / (spec.folder() + "-" + sha256_hex(key_material).substr(0, 16));
}

// The reference pass, cached by everything that determines its outputs and timing. It is computed in a private
// directory and renamed into place once complete; if another process finished first, its result is used.
fs::path reference_pass(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const json& prov,
                        bool python, json& info) {
  int post = o.trials;
  fs::path dir = reference_dir(spec, run, o, prov, python);
  info["cache_dir"] = dir.string();
  if (fs::exists(dir / "complete.json")) {
    info["cached"] = true;
    return dir;
  }
  info["cached"] = false;
  fs::path work = private_work_dir(dir);
  auto args = worker_args(spec, o, work);
  args.insert(args.end(), {"--trials", trial_list(0, post), "--precise-too"});
  if (python) args.push_back("--save-inputs");
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult pr = launch(o, args, work, "reference");
  if (!pr.ok()) {
    std::string why = pr.summary();
    if (auto e = first_rank_error(read_rank_records(work, o.world))) why = "rank " + std::to_string(e->rank) + ": " + e->message;
    throw Error("reference pass for " + spec.folder() + " failed: " + why + " (files in " + work.string() + ")");
  }
  if (python) {
    PythonRunnerJob job{o.world, o.device, spec.dir, work, "0",
                        {"--time", "--warmup", std::to_string(o.timing.warmup), "--iters", std::to_string(o.timing.iters)},
                        o.timeout_s, {}};
    if (!o.visible_devices.empty()) job.env["CUDA_VISIBLE_DEVICES"] = o.visible_devices;
    ProcessResult py = run_python_runner(job);
    if (!py.ok())
      throw Error("PyTorch eager baseline (reference.py under torchrun) failed: " + py.summary() + ": " + stderr_tail(py, 600));
  }
  write_json_atomically(work / "complete.json", {{"seconds", since(t0)}});
  place_directory(work, dir, "complete.json");
  return dir;
}

struct Failure {
  EvalStatus status;
  std::string message;
  json detail;
};

// Classifies a candidate launch that did not end cleanly. Rank records come first: a rank that recorded a CUDA
// error or a bad return code explains why its peers then hung or were killed.
std::optional<Failure> launch_failure(const ProcessResult& pr, const std::vector<json>& records) {
  if (auto e = first_rank_error(records)) {
    if (e->status == "load_error") return Failure{EvalStatus::load_error, e->message, {{"rank", e->rank}}};
    return Failure{EvalStatus::runtime_error, "rank " + std::to_string(e->rank) + ": " + e->message, {{"rank", e->rank}}};
  }
  if (pr.ok()) return std::nullopt;
  std::string tail = stderr_tail(pr, 2000);
  if (pr.timed_out)
    return Failure{EvalStatus::timeout, "no result within " + std::to_string(static_cast<int>(pr.wall_s)) +
                                            " s (hang or deadlock); the rank group was killed", {{"stderr_tail", tail}}};
  std::smatch m;
  static const std::regex kSignal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  json detail = {{"stderr_tail", tail}};
  std::string msg = "a rank died: " + pr.summary();
  if (std::regex_search(pr.stderr_tail, m, kSignal)) {
    int sig = std::stoi(m[2]);
    detail["rank"] = std::stoi(m[1]);
    detail["signal"] = sig;
    msg = "rank " + std::string(m[1]) + " killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return Failure{EvalStatus::crash, msg, detail};
}

json comparison_json(const Comparison& c) {
  return {{"pass", c.pass}, {"max_abs_err", c.max_abs_err}, {"max_rel_err", c.max_rel_err}, {"rel_l2", c.rel_l2},
          {"mismatches", c.mismatches}, {"nan_count", c.nan_count}, {"first_bad", c.first_bad}, {"error", c.error}};
}

// Compares every trial's outputs with the reference pass; returns the first failure message or "".
std::string check_candidate_outputs(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const fs::path& ref_dir,
                          const fs::path& cand_dir, const std::vector<json>& records, json& checks) {
  std::string first_failure;
  bool robust_all = true, pkb_all = true;
  json per = json::array();
  auto note = [&](const std::string& msg) {
    if (first_failure.empty()) first_failure = msg;
  };
  auto rank_outputs = [&](const fs::path& dir, int t, const std::string& prefix, int r) {
    return outputs_in_order(spec, read_safetensors(dir / ("trial" + std::to_string(t)) / (prefix + std::to_string(r) + ".safetensors")));
  };
  for (int t = 0; t <= o.trials; ++t) {
    std::string when = t == o.trials ? "post-timing trial " + std::to_string(t) : "trial " + std::to_string(t);
    std::vector<std::vector<at::Tensor>> got, reference, precise;
    for (int r = 0; r < run.world && got.size() == static_cast<size_t>(r); ++r) {
      if (!fs::exists(cand_dir / ("trial" + std::to_string(t)) / ("rank" + std::to_string(r) + ".safetensors"))) {
        note(when + ": rank " + std::to_string(r) + " wrote no outputs");
        robust_all = pkb_all = false;
        break;
      }
      got.push_back(rank_outputs(cand_dir, t, "rank", r));
      reference.push_back(rank_outputs(ref_dir, t, "rank", r));
      precise.push_back(rank_outputs(ref_dir, t, "precise.rank", r));
    }
    if (got.size() != static_cast<size_t>(run.world)) continue;
    // Robust against the precise outputs (and replication) decides; the paper's allclose against the bf16
    // reference is recorded beside it. Both lists hold (rank, output) in the same order.
    auto robust = check_outputs(spec, run, Policy::robust, got, precise, true);
    auto paper = check_outputs(spec, run, Policy::pkb, got, reference, false);
    size_t next_paper = 0;
    for (const OutputCheck& c : robust) {
      robust_all &= c.result.pass;
      if (!c.result.pass) note(when + " " + c.where() + ": " + describe(c.result));
      if (c.replication) continue;
      const Comparison& p = paper.at(next_paper++).result;
      pkb_all &= p.pass;
      per.push_back({{"trial", t}, {"rank", c.rank}, {"output", c.output}, {"robust", comparison_json(c.result)},
                     {"pkb", comparison_json(p)}});
    }
  }
  json mutated = json::array();
  for (size_t r = 0; r < records.size(); ++r)
    if (records[r].is_object())
      for (const auto& tr : records[r].value("trials", json::array()))
        for (const auto& name : tr.value("inputs_mutated", json::array())) {
          mutated.push_back({{"rank", r}, {"trial", tr["trial"]}, {"input", name}});
          note("rank " + std::to_string(r) + " modified input '" + name.get<std::string>() + "' (inputs are read-only)");
        }
  checks = {{"policy", "robust"}, {"robust_pass", robust_all}, {"pkb_pass", pkb_all}, {"inputs_mutated", mutated},
            {"comparisons", per}};
  if (!mutated.empty()) checks["robust_pass"] = false;
  return first_failure;
}

}  // namespace

CompileOptions eval_compile_options(const EvalOptions& o) {
  CompileOptions co;
  co.cuda = o.device == "cuda";
  co.arch = o.arch;
  co.timeout_s = o.compile_timeout_s;
  co.allow_nccl = o.allow_nccl;
  co.cache_dir = o.cache_dir / "compile";
  co.include_dir = repo_root() / "harness/include";
  return co;
}

const char* eval_status_name(EvalStatus s) {
  switch (s) {
    case EvalStatus::compile_error: return "compile_error";
    case EvalStatus::lint_violation: return "lint_violation";
    case EvalStatus::load_error: return "load_error";
    case EvalStatus::runtime_error: return "runtime_error";
    case EvalStatus::timeout: return "timeout";
    case EvalStatus::crash: return "crash";
    case EvalStatus::incorrect: return "incorrect";
    case EvalStatus::correct: return "correct";
    case EvalStatus::not_evaluated: return "not_evaluated";
  }
  return "crash";
}

EvalResult evaluate_candidate(const ProblemSpec& spec, const fs::path& source, const EvalOptions& o) {
  auto t_start = std::chrono::steady_clock::now();
  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32");
  if (o.device != "cuda" && o.device != "cpu") throw Error("--device must be cuda or cpu");
  if (!fs::exists(source)) throw Error(source.string() + ": no such candidate file");
  RunShape run = resolve_run(spec, o.world, *dtype, o.params);
  std::string source_text = read_text_file(source);
  std::string source_hash = sha256_hex(source_text);
  json prov = provenance(o);

  EvalResult res;
  json& rec = res.record;
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  rec = {{"schema", "pkb.result/1"}, {"time", stamp},
         {"problem", {{"id", spec.id}, {"slug", spec.slug}, {"folder", spec.folder()}, {"category", category_name(spec.category)}}},
         {"candidate", {{"path", fs::absolute(source).string()}, {"sha256", source_hash}}},
         {"world", o.world}, {"device", o.device}, {"dtype", o.dtype}, {"params", run.params},
         {"trials", o.trials}, {"seed", o.seed},
         {"timing_settings", {{"warmup", o.timing.warmup}, {"iters", o.timing.iters}}},
         {"provenance", prov}};
  if (!o.visible_devices.empty()) rec["visible_devices"] = o.visible_devices;  // the GPU slot of a `pkb run`
  json wall = json::object();
  auto finish = [&](EvalStatus s, const std::string& message) -> EvalResult {
    res.status = s;
    rec["status"] = eval_status_name(s);
    rec["message"] = message;
    wall["total_s"] = since(t_start);
    rec["wall"] = wall;
    fs::create_directories(o.out_dir);
    append_line(o.out_dir / "results.jsonl", rec.dump());
    return res;
  };

  // 1. Lint and compile.
  CompileOptions co = eval_compile_options(o);
  auto t0 = std::chrono::steady_clock::now();
  CompileResult cr = compile_candidate(source, co);
  wall["compile_s"] = since(t0);
  json lint = json::array();
  for (const auto& f : cr.lint) lint.push_back({{"rule", f.rule}, {"line", f.line}, {"text", f.text}});
  rec["compile"] = {{"status", compile_status_name(cr.status)}, {"seconds", cr.seconds}, {"cached", cr.cached},
                    {"log", cr.log}, {"lint", lint}, {"command", cr.command}};
  if (cr.status == CompileStatus::lint_violation)
    return finish(EvalStatus::lint_violation, "forbidden construct: " + cr.log.substr(0, cr.log.find('\n')));
  if (cr.status == CompileStatus::compile_error) {
    std::istringstream lines(cr.log);
    std::string line, first_error;
    while (std::getline(lines, line))
      if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
    return finish(EvalStatus::compile_error, first_error.empty() ? cr.log.substr(0, cr.log.find('\n')) : first_error);
  }
  if (!o.not_evaluated_reason.empty()) return finish(EvalStatus::not_evaluated, "compiled; not evaluated: " + o.not_evaluated_reason);

  // 2. Reference pass and baselines (cached).
  // Importing torch to see whether the eager baseline is possible takes seconds: a cached reference pass that
  // already has it answers the question for free.
  bool python = o.baseline == "auto" && o.device == "cuda" &&
                (fs::exists(reference_dir(spec, run, o, prov, true) / "complete.json") || python_torch_available());
  json ref_info;
  t0 = std::chrono::steady_clock::now();
  fs::path ref_dir = reference_pass(spec, run, o, prov, python, ref_info);
  wall["reference_s"] = since(t0);
  rec["reference"] = ref_info;

  // 3. Candidate pass, in its own processes.
  fs::path cand_dir = o.out_dir / "runs" / (spec.folder() + "-" + source_hash.substr(0, 12) + "-w" +
                                             std::to_string(o.world) + "-" + o.device + "-" + o.dtype);
  fs::remove_all(cand_dir);
  fs::create_directories(cand_dir);
  auto args = worker_args(spec, o, cand_dir);
  args.insert(args.end(), {"--trials", trial_list(0, o.trials - 1), "--post-trial", std::to_string(o.trials),
                           "--candidate", fs::absolute(cr.library).string()});
  if (o.heap_mib) args.insert(args.end(), {"--heap-mib", std::to_string(o.heap_mib)});
  t0 = std::chrono::steady_clock::now();
  ProcessResult pr = launch(o, args, cand_dir, "candidate");
  wall["candidate_s"] = since(t0);
  rec["run_dir"] = cand_dir.string();
  auto records = read_rank_records(cand_dir, o.world);
  if (auto f = launch_failure(pr, records)) {
    rec["failure"] = f->detail;
    return finish(f->status, f->message);
  }

  // 4. Check, then time.
  t0 = std::chrono::steady_clock::now();
  json checks;
  std::string bad = check_candidate_outputs(spec, run, o, ref_dir, cand_dir, records, checks);
  wall["check_s"] = since(t0);
  rec["checks"] = checks;

  json timing;
  json cand_t = records[0].value("timing", json());
  json cpp_t = read_json_or_null(ref_dir / "rank0.json").value("timing", json());
  json py_t = read_json_or_null(ref_dir / "timing.py.json");
  timing["candidate"] = cand_t;
  timing["baseline_libtorch_nccl"] = cpp_t;
  timing["baseline_pytorch_eager"] = py_t;
  bool have_py = py_t.is_object() && py_t.contains("median_us");
  timing["baseline"] = have_py ? "pytorch_eager" : "libtorch_nccl";
  if (!have_py) timing["baseline_note"] = python ? "reference.py timing missing" : "Python torch absent: strict C++ baseline used";
  auto median = [](const json& t) { return t.is_object() ? t.value("median_us", 0.0) : 0.0; };
  double c = median(cand_t);
  if (c > 0) {
    if (median(cpp_t) > 0) timing["speedup_vs_libtorch_nccl"] = median(cpp_t) / c;
    if (have_py) timing["speedup_vs_pytorch_eager"] = median(py_t) / c;
    timing["speedup"] = (have_py ? median(py_t) : median(cpp_t)) / c;
  }
  json roof = roofline_floor(spec, run, o.topology);
  auto sol = [&](const json& t) { return speed_of_light(roof, median(t)); };
  roof["sol_candidate"] = sol(cand_t);
  roof["sol_baseline_libtorch_nccl"] = sol(cpp_t);
  roof["sol_baseline_pytorch_eager"] = sol(py_t);
  rec["roofline"] = roof;
  bool escape = false;
  for (const auto& r : records)
    if (r.is_object() && r.contains("timing")) escape |= r["timing"].value("stream_escape", false);
  timing["stream_escape"] = escape;
  rec["timing"] = timing;
  if (!bad.empty()) return finish(EvalStatus::incorrect, bad);
  return finish(EvalStatus::correct, escape ? "correct, but work escaped the timed stream (timing flagged)" : "correct");
}

std::string format_verdict(const json& r) {
  std::ostringstream s;
  s << r["problem"]["folder"].get<std::string>() << " W=" << r["world"] << " " << r["device"].get<std::string>()
    << " " << r["dtype"].get<std::string>() << ": " << r["status"].get<std::string>() << "\n";
  s << "  " << r.value("message", "") << "\n";
  if (r.contains("failure") && r["failure"].contains("stderr_tail")) {
    std::string tail = r["failure"]["stderr_tail"];
    if (tail.size() > 600) tail = tail.substr(tail.size() - 600);
    s << "  stderr (tail):\n" << tail << "\n";
  }
  if (r.contains("checks"))
    s << "  checks: robust " << (r["checks"]["robust_pass"].get<bool>() ? "pass" : "FAIL") << ", pkb (allclose 1e-2) "
      << (r["checks"]["pkb_pass"].get<bool>() ? "pass" : "FAIL") << "\n";
  if (r.contains("timing")) {
    const json& t = r["timing"];
    auto us = [](const json& x) { return x.is_object() ? x.value("median_us", 0.0) : 0.0; };
    char buf[512];
    auto cv = [](const json& x) { return x.is_object() ? 100 * x.value("cv", 0.0) : 0.0; };
    std::snprintf(buf, sizeof buf, "  median time: candidate %.1f us (cv %.1f%%)", us(t["candidate"]), cv(t["candidate"]));
    s << buf;
    if (us(t["baseline_pytorch_eager"]) > 0) {
      std::snprintf(buf, sizeof buf, ", PyTorch eager %.1f us", us(t["baseline_pytorch_eager"]));
      s << buf;
    }
    std::snprintf(buf, sizeof buf, ", libtorch reference %.1f us\n  speedup: %.2fx vs %s%s\n",
                  us(t["baseline_libtorch_nccl"]), t.value("speedup", 0.0), t.value("baseline", "").c_str(),
                  t.value("stream_escape", false) ? " [stream escape flagged]" : "");
    s << buf;
  }
  return s.str();
}

}  // namespace pkb
