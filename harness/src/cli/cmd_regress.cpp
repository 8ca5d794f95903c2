// pkb regress --baseline report.json --candidates DIR [--slowdown 10%] [--junit FILE] [-w W] [--device ...]
// Evaluates submitted kernels and compares them with a baseline report (run/regress.h); writes JUnit XML.
// Exit codes: 0 no regression and every new kernel correct, 1 some test case failed, 2 usage or input error.
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "run/regress.h"
#include "spec/catalog.h"
#include "worker/timing_cli.h"

namespace pkb::cli {
namespace {

struct RegressCliOptions {
  run::RegressOptions r;
  std::string slowdown = "10%";
  std::vector<std::string> params;
};

int run_regress(RegressCliOptions& o) {
  o.r.slowdown = run::parse_slowdown(o.slowdown);
  o.r.run.eval.params = parse_param_overrides(o.params);
  Catalog c = load_catalog(repo_root() / "problems");
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  run::RegressResult res = run::regress(c, o.r);
  std::printf("\n%-36s %-10s %s\n", "problem", "verdict", "detail");
  for (const auto& k : res.cases)
    std::printf("%-36s %-10s %s\n", k.folder.c_str(), k.verdict.c_str(), k.message.c_str());
  std::printf("regress: %zu cases, %d failed; JUnit: %s; run: %s\n", res.cases.size(), res.failures(),
              res.junit.c_str(), res.run_dir.c_str());
  if (!c.errors.empty()) return 2;
  return res.failures() ? 1 : 0;
}

}  // namespace

void add_regress_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<RegressCliOptions>();
  run::RegressOptions& r = o->r;
  CLI::App* cmd = app.add_subcommand("regress", "CI: evaluate submitted kernels against a baseline report, JUnit out");
  cmd->add_option("--baseline", r.baseline, "report.json of the accepted kernels")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--candidates", r.candidates, "Directory of NNN_slug.cu (or NNN_slug/sample_0.cu)")->required();
  cmd->add_option("--slowdown", o->slowdown, "Tolerated loss of speedup before a kernel counts as slower (10%)");
  cmd->add_option("--junit", r.junit, "JUnit XML path (default: RUN/junit.xml)");
  cmd->add_option("-w,--world", r.run.world, "Ranks per evaluation (default: every visible GPU)")->check(kPositive);
  cmd->add_option("--device", r.run.device, "auto, cuda, or cpu (C++ kernels on CPU ranks)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option("--dtype", r.run.eval.dtype, "Float dtype")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--topology", r.run.topology, "Topology for the roofline fields");
  cmd->add_option("--out", r.run.out_dir, "Run directory (default: results/regress/<UTC time>)");
  cmd->add_option("--cache", r.run.eval.cache_dir, "Compile and reference-pass cache");
  cmd->add_option("--trials", r.run.eval.trials, "Checked trials per kernel")->check(kPositive);
  add_eval_timing_flags(cmd, r.run.eval);
  cmd->add_option("--timeout", r.run.eval.timeout_s, "Deadline per launch, seconds")->check(kPositive);
  add_reference_timeout_flag(cmd, r.run.eval);
  cmd->add_option("--param", o->params, "NAME=VALUE parameter override (repeatable)");
  cmd->callback([o, &action] { action = [o] { return run_regress(*o); }; });
}

}  // namespace pkb::cli
