// pkb eval FILE --problem ID [-w W] [--device cuda|cpu] [--trials T] [--out DIR] ...
// Prints a readable verdict and appends the result record to OUT/results.jsonl.
// Exit codes: 0 correct, 1 any other status (the record says which), 2 usage or harness error (a harness_error
// record is still appended).
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "core/enum_option.h"
#include "core/error.h"
#include "core/files.h"
#include "core/timing_method.h"
#include "eval/evaluate.h"
#include "spec/catalog.h"
#include "worker/timing_cli.h"

namespace pkb::cli {
namespace {

struct EvalCliOptions {
  std::string file, problem;
  EvalOptions e;
  std::vector<std::string> params;
  bool json = false;
};

int run_eval(EvalCliOptions& o) {
  o.e.params = parse_param_overrides(o.params);
  o.e.out_dir = std::filesystem::absolute(o.e.out_dir);
  o.e.cache_dir = std::filesystem::absolute(o.e.cache_dir);
  Catalog c = load_catalog(repo_root() / "problems", o.problem);
  auto selected = c.select(o.problem);
  if (selected.size() != 1) throw Error("--problem must name exactly one problem");
  EvalResult r = evaluate_candidate(*selected[0], o.file, o.e);
  std::filesystem::create_directories(o.e.out_dir);
  append_line(o.e.out_dir / "results.jsonl", r.record.dump());
  if (o.json)
    std::cout << r.record.dump(2) << "\n";
  else
    std::cout << format_verdict(r.record) << "  record appended to " << (o.e.out_dir / "results.jsonl").string()
              << "\n";
  return r.status == ResultStatus::correct ? 0 : r.status == ResultStatus::harness_error ? 2 : 1;
}

}  // namespace

void add_eval_timing_flags(CLI::App* cmd, EvalOptions& e) {
  add_timing_flags(cmd, e.timing);
  cmd->add_option("--timing-method", e.timing_method,
                  "Which timing drives the speedup, fast_p and the curves: pkb (default), paper or device (GPUs at W = "
                  "1, candidates in process only); "
                  "all that measured are recorded")
      ->check(CLI::IsMember(timing_method_names()));
  add_enum_option(*cmd, "--retime-baseline", e.retime_baseline,
                  "Time the baselines again right after a correct candidate, in place of the cached ones: drift "
                  "(when the host probes say the host's speed changed), always (same-window baselines), never, or "
                  "auto (default: drift on GPUs, never on CPU ranks)");
}

void add_candidate_process_flags(CLI::App* cmd, EvalOptions& e) {
  add_enum_option(
      *cmd, "--candidate-process", e.candidate_process,
      "auto or runner (the candidate in a process of its own, frozen between calls; on GPUs under MPS, each call "
      "timed on the device through the call gate, baselines alike) or in-process (GPUs: loaded into the rank "
      "program, which it can then tamper with)");
  add_enum_option(
      *cmd, "--draw-copies", e.draw_copies,
      "on: the rank draws every timing copy into its input slot (a kernel on GPUs, the host's bytes) instead "
      "of making it on the host and copying it in; off; auto: on on GPUs, off on CPU ranks");
}

void add_reference_timeout_flag(CLI::App* cmd, EvalOptions& e) {
  cmd->add_option("--reference-timeout", e.reference_timeout_s,
                  "Deadline per launch of pkb's own reference pass and baselines, seconds (default: the larger of " +
                      std::to_string(static_cast<int>(kReferenceTimeoutS)) +
                      " and --timeout; --timeout never shortens it). Past it: a harness_error record")
      ->check(CLI::PositiveNumber);
}

void add_eval_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<EvalCliOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate one candidate kernel: compile, check, time");
  cmd->option_defaults()->group("Selection");
  cmd->add_option("file", o->file, "Candidate source (.cu for --device cuda, .cpp for --device cpu)")->required();
  cmd->add_option("--problem", o->problem, "Problem id or slug")->required();
  cmd->add_option("-w,--world", o->e.world, "World size (ranks)")->check(kPositive);
  add_enum_option(*cmd, "--device", o->e.device, "cuda or cpu");
  cmd->add_option("--dtype", o->e.dtype, "Float dtype")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--param", o->params, "NAME=VALUE parameter override (repeatable)");
  cmd->add_option(
      "--topology", o->e.topology,
      "Topology for the roofline fields (topologies/NAME.json; default: this machine's GPU's, else h200_2)");
  cmd->option_defaults()->group("Evaluation");
  cmd->add_option("--trials", o->e.trials, "Checked trials with fresh inputs (one more follows timing)")
      ->check(kPositive);
  cmd->add_option("--seed", o->e.seed, "Base seed")->check(kNonNegative);
  cmd->add_option("--timeout", o->e.timeout_s, "Deadline per launch of the candidate's ranks, seconds")
      ->check(kPositive);
  add_reference_timeout_flag(cmd, o->e);
  cmd->add_option(
         "--ranks-per-gpu", o->e.ranks_per_gpu,
         "Ranks sharing each GPU (MPS) even where there are enough GPUs: a functional check, times marked contended")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--arch", o->e.arch, "nvcc target, e.g. sm_90a");
  cmd->add_flag("--allow-nccl", o->e.allow_nccl, "Let the candidate call NCCL (lint policy)");
  // eager and libtorch, the names the reports use; auto and cpp, the names of earlier releases.
  cmd->add_option("--baseline", o->e.baseline,
                  "The headline's baseline: eager (PyTorch eager where Python torch exists, else libtorch+NCCL) or "
                  "libtorch")
      ->check(CLI::IsMember({"eager", "libtorch", "auto", "cpp"}))
      ->transform(CLI::Transformer(std::map<std::string, std::string>{{"eager", "auto"}, {"libtorch", "cpp"}}));
  cmd->add_option("--heap-mib", o->e.heap_mib, "Arena for the candidate's symm_alloc, MiB (0: the device's default)")
      ->check(kNonNegative);
  cmd->option_defaults()->group("Timing");
  add_eval_timing_flags(cmd, o->e);
  cmd->option_defaults()->group("Isolation");
  cmd->add_flag(
      "--no-sandbox", [o](int64_t) { o->e.sandbox = false; },
      "Compile and run the candidate without the bubblewrap sandbox: it then runs as this user with "
      "this user's files, environment and network (trusted code only; the record says so)");
  add_candidate_process_flags(cmd, o->e);
  cmd->option_defaults()->group("Output");
  cmd->add_option("--out", o->e.out_dir, "Where run directories and results.jsonl go");
  cmd->add_option("--cache", o->e.cache_dir, "Compile and reference-pass cache");
  cmd->add_flag("--json", o->json, "Print the whole record");
  cmd->callback([o, &action] { action = [o] { return run_eval(*o); }; });
}

}  // namespace pkb::cli
