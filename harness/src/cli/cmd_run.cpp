// pkb run [--model M] [--problems SPEC] [--samples K] [--turns T [--stop-speedup P|never]] [-w W]
//         [--agent [--agent-steps S] [--agent-tokens N] [--agent-wall-s S] [--agent-gpu-s S]]
//         [--device auto|cuda|cpu] [--topology NAME] [--out DIR] [--shard I/N] [--launcher mpirun|srun]
// The benchmark end to end (run/run.h): generate, compile, evaluate, score, report, resumable. With no arguments:
// the expert kernels of every problem that has one, on every local GPU.
// Exit codes: 0 the run finished (whatever the candidates did, a request the service rejected alone with a 400
// included: that sample is recorded bad_request; also without a GPU, where evaluations are skipped), 1 incomplete:
// the harness failed on some samples or the model service did not answer some requests (auth, quota, the same 400
// for several problems, network after the retries; the reason is on stderr): they stay unrecorded and the same
// command does them; 2 usage or input error.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/prompt_options.h"
#include "core/error.h"
#include "core/files.h"
#include "launch/mpirun.h"
#include "run/run.h"
#include "spec/catalog.h"
#include "worker/timing_cli.h"

namespace pkb::cli {
namespace {

struct RunCliOptions {
  run::RunOptions r;
  std::vector<std::string> params;
  std::string variant = "one-shot";
  double temperature = -1;
  std::string stop_speedup = "1";
  bool quiet = false;
  std::string shard;
  std::string launcher;
  ServiceCliOptions service;
};

int run_run(RunCliOptions& o) {
  o.r.eval.params = parse_param_overrides(o.params);
  o.r.generate.prompt.variant = o.variant == "zero-shot" ? prompt::Variant::zero_shot : prompt::Variant::one_shot;
  if (o.temperature >= 0) o.r.generate.temperature = o.temperature;
  apply_service_options(o.service, o.r.generate.provider);
  o.r.progress = !o.quiet;
  if (!o.shard.empty()) o.r.shard = run::parse_shard(o.shard);
  if (!o.launcher.empty()) set_rank_launcher(parse_launcher(o.launcher));
  if (rank_launcher() == Launcher::srun && !std::getenv("SLURM_JOB_ID"))
    std::fprintf(stderr,
                 "pkb run: warning: --launcher srun outside a Slurm allocation: each rank job asks Slurm "
                 "for an allocation of its own\n");
  if (o.stop_speedup == "never") {
    o.r.stop_speedup.reset();
  } else {
    try {
      size_t used = 0;
      o.r.stop_speedup = std::stod(o.stop_speedup, &used);
      if (used != o.stop_speedup.size() || *o.r.stop_speedup < 0) throw std::invalid_argument("");
    } catch (const std::logic_error&) {
      throw Error("--stop-speedup: '" + o.stop_speedup + "' is neither a speedup >= 0 nor 'never'");
    }
  }
  Catalog c = load_catalog(repo_root() / "problems");
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  run::RunSummary s = run::run_benchmark(c, o.r);
  std::filesystem::path summary = s.dir / "summary.md";
  if (std::filesystem::exists(summary)) std::cout << read_text_file(summary) << "\n";
  std::printf("run: %d samples", s.samples);
  if (s.later_turns) std::printf(" (+%d answers in later turns)", s.later_turns);
  std::printf(", %d recorded now, %d from earlier invocations", s.recorded, s.resumed);
  if (s.harness_errors)
    std::printf(", %d recorded harness_error: pkb itself failed, no verdict (rerun to retry)", s.harness_errors);
  if (s.rejected) std::printf(", %d rejected by the model service (HTTP 400: recorded bad_request)", s.rejected);
  if (s.service_failures)
    std::printf(", %d not answered by the model service (rerun to ask again)", s.service_failures);
  std::printf("\nreports: %s/{report.html,report.json,summary.md,curves.csv}\n", s.dir.c_str());
  if (!s.gpu_evaluation)
    std::printf(
        "no GPU on this machine: GPU evaluations were skipped (candidates compiled, references validated on "
        "CPU ranks). The same command on a GPU machine evaluates them.\n");
  if (!c.errors.empty()) return 2;
  if (!s.complete())
    std::fprintf(stderr,
                 "pkb run: incomplete: %d samples without a verdict%s%s; the same command does what is missing\n",
                 s.harness_errors + s.service_failures, s.service_error.empty() ? "" : ": ", s.service_error.c_str());
  return s.complete() ? 0 : 1;
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunCliOptions>();
  run::RunOptions& r = o->r;
  CLI::App* cmd = app.add_subcommand("run", "The benchmark end to end: generate, compile, evaluate, score, report");
  cmd->option_defaults()->group("Selection");
  cmd->add_option("--problems", r.problems,
                  "ids, ranges, lists, slugs or all (default: all; for expert, those with a solution)");
  cmd->add_option("--samples", r.samples, "Samples per problem")->check(kPositive);
  cmd->add_option("-w,--world", r.world, "Ranks per evaluation (default: every visible GPU, at least 2)")
      ->check(kPositive);
  cmd->add_option("--device", r.device, "auto (GPUs if any), cuda, or cpu (candidates are C++ on CPU ranks)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option("--dtype", r.eval.dtype, "Float dtype")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--topology", r.topology,
                  "Hardware described in prompts and used for rooflines (default: the smallest in topologies/ that "
                  "fits W, preferring this machine's GPU)");
  cmd->add_option("--param", o->params, "NAME=VALUE parameter override (repeatable)");
  cmd->add_option("--shard", o->shard,
                  "I/N: evaluate the I-th of N parts of the (problem, sample) work, in OUT/shard-I-of-N; "
                  "`pkb report OUT` merges the shards");
  cmd->option_defaults()->group("Model service");
  cmd->add_option("--model", r.model,
                  "provider:model, compat:URL@model, expert (default) or replay:DIR (see pkb generate)");
  cmd->add_option("--turns", r.turns,
                  "Turns per sample: each later turn shows the model its last kernel's evaluation (default 1)")
      ->check(kPositive);
  cmd->add_option("--stop-speedup", o->stop_speedup,
                  "With --turns: a sample stops once correct and faster than this many x the baseline (default 1; "
                  "never: always use every turn)");
  cmd->add_flag("--agent", r.agent.enabled,
                "Agent mode: the model calls compile_kernel, evaluate_kernel and submit_kernel as tools; only the "
                "submitted kernel is judged, on fresh inputs (docs/runs.md)");
  cmd->add_option("--agent-steps", r.agent.budget.steps, "With --agent: tool calls per sample (default 20)")
      ->check(kPositive);
  cmd->add_option("--agent-tokens", r.agent.budget.tokens,
                  "With --agent: input + output tokens per sample over all its requests (default 0: no limit)")
      ->check(kNonNegative);
  cmd->add_option("--agent-wall-s", r.agent.budget.wall_s, "With --agent: wall seconds per sample (default 0: none)")
      ->check(kNonNegative);
  cmd->add_option("--agent-gpu-s", r.agent.budget.gpu_s,
                  "With --agent: seconds of evaluate_kernel per sample (default 0: no limit)")
      ->check(kNonNegative);
  cmd->add_option("--variant", o->variant, "Prompt variant")->check(CLI::IsMember({"one-shot", "zero-shot"}));
  cmd->add_option("--concurrency", r.generate.concurrency, "Model requests in flight")->check(kPositive);
  cmd->add_option("--max-tokens", r.generate.max_tokens, "Output cap per request")->check(kPositive);
  cmd->add_option("--temperature", o->temperature, "Sampling temperature (default: the provider's)")
      ->check(kNonNegative);
  add_service_options(cmd, r.generate.provider, o->service);
  cmd->option_defaults()->group("Evaluation");
  cmd->add_option("--trials", r.eval.trials, "Checked trials per candidate")->check(kPositive);
  cmd->add_option("--timeout", r.eval.timeout_s, "Deadline per launch, seconds")->check(kPositive);
  add_reference_timeout_flag(cmd, r.eval);
  cmd->add_option("--arch", r.arch, "nvcc target, e.g. sm_90a (default: the topology's GPU)");
  cmd->add_option("--compile-jobs", r.compile_jobs, "Compilations at once (default, or 0: one per core)")
      ->check(kNonNegative);
  cmd->add_option("--launcher", o->launcher,
                  "How ranks start: mpirun (default) or srun (a step of the Slurm allocation; sandboxed candidate "
                  "passes still use mpirun inside the sandbox). Default: $PKB_LAUNCHER, else mpirun")
      ->check(CLI::IsMember({"mpirun", "srun"}));
  cmd->option_defaults()->group("Timing");
  add_eval_timing_flags(cmd, r.eval);
  cmd->option_defaults()->group("Isolation");
  cmd->add_flag(
      "--no-sandbox", [&r](int64_t) { r.eval.sandbox = false; },
      "Compile and run candidates without the bubblewrap sandbox (trusted code only; records say so)");
  add_candidate_process_flags(cmd, r.eval);
  cmd->option_defaults()->group("Output");
  cmd->add_option("--out", r.out_dir, "Run directory (default: results/runs/<model>-w<W>-<device>-<dtype>)");
  cmd->add_option("--cache", r.eval.cache_dir, "Compile and reference-pass cache");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress lines");
  cmd->callback([o, &action] { action = [o] { return run_run(*o); }; });
}

}  // namespace pkb::cli
