// `pkb validate`: proves a problem's references right. The libtorch reference runs under mpirun (pkb-rank, W
// ranks); the driver recomputes every rank's inputs, runs the problem's oracle in-process and compares each
// rank's outputs with it. With the Python cross-check (by default on GPU nodes where Python torch exists; on CPU
// with --python on, gloo), reference.py runs in W Python processes on the very same input bytes and must agree
// with reference.cpp; where this machine's torch cannot run it (gloo without bf16) the check is skipped with why.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "spec/problem_spec.h"
#include "worker/timing.h"

namespace pkb {

enum class PythonCheck { auto_detect, on, off };

struct ValidateOptions {
  int world = 2;
  DeviceKind device = DeviceKind::cpu;
  std::string dtype = "bf16";  // bf16 | fp32
  int trials = 3;
  uint64_t seed = 1;
  std::map<std::string, int64_t> params;
  bool small = false;  // start from the problem's test_parameters (explicit params still win)
  PythonCheck python = PythonCheck::auto_detect;
  std::filesystem::path out_dir;  // per-problem working files go under it
  double timeout_s = 180;         // per launch
  // --time: also time the baselines (libtorch+NCCL reference, and reference.py where it runs) on trial 0's
  // inputs, as `pkb eval` times them, and relate them to the roofline of `topology`.
  bool time = false;
  TimingOptions timing{.warmup = 20};
  // --through-gate: the libtorch baseline timed as an evaluation whose candidate runs in a runner times it (on GPUs
  // through the call gate's flag operations, worker/call_gate.h), not by its own events alone. CPU ranks always
  // ring the runner's doorbell.
  bool through_gate = false;
  std::string topology;   // "": this machine's GPU's (spec/topology.h roofline_topology)
  int ranks_per_gpu = 0;  // > 1: ranks share GPUs even where there are enough (--ranks-per-gpu)
};

enum class Verdict { pass, fail, skip };
const char* verdict_name(Verdict v);

struct ValidationResult {
  std::string problem;  // folder name
  Verdict verdict = Verdict::fail;
  std::string detail;  // one line: why it failed or was skipped, or a summary of errors when it passed
  std::string python;  // "agrees", "skipped: why", "disagrees: ...", "failed: rank R: the exception (frame)"
  double wall_s = 0;
  std::string timing;     // with --time: one line of baseline times and SOL%, or why they are missing
  nlohmann::json record;  // everything measured, written to validation.json
};

ValidationResult validate_problem(const ProblemSpec& spec, const ValidateOptions& opts);

// Problems validated this many at a time: one mpirun launch of pkb-rank for their references and one launch of
// the W Python processes for their reference.py (start-up, not compute, is most of a small validation's time).
// A problem that ends a launch early (crash, error, hang) fails alone; the launch resumes after it.
constexpr size_t kValidateBatch = 16;
// On CPU ranks (small shapes: milliseconds of work per problem) a launch's start-up is most of its cost, so all
// problems in one launch (CI's five validations: ~35 s of CPU less in launches of 44 than of 16, ~15 s less again
// in one: W pkb-rank and W Python starts per validation instead of 2W).
constexpr size_t kValidateBatchCpu = 128;

// validate_problem over several problems in launches of kValidateBatch (kValidateBatchCpu on CPU ranks); on_result sees
// each result as soon as it is known, in order.
std::vector<ValidationResult> validate_problems(const std::vector<const ProblemSpec*>& specs,
                                                const ValidateOptions& opts,
                                                const std::function<void(const ValidationResult&)>& on_result);

}  // namespace pkb
