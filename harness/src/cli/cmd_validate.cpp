// pkb validate PROBLEMS [-w W] [--device cpu|cuda] [--dtype bf16|fp32] [--trials T] [--python auto|on|off]
// Exit 0 only when every selected problem passed (skips for a W the problem forbids are not failures).
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "spec/catalog.h"
#include "validate/validate.h"

namespace pkb::cli {
namespace {

struct ValidateCliOptions {
  std::string selection;
  ValidateOptions v;
  std::vector<std::string> params;
  std::string python = "auto";
  std::string out = "results/validate";
};

int run_validate(ValidateCliOptions& o) {
  o.v.params = parse_param_overrides(o.params);
  o.v.python = o.python == "on" ? PythonCheck::on : o.python == "off" ? PythonCheck::off : PythonCheck::auto_detect;
  o.v.out_dir = std::filesystem::absolute(o.out);
  Catalog c = load_catalog(repo_root() / "problems");
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  auto selected = c.select(o.selection);
  int passed = 0, failed = 0, skipped = 0;
  for (const ProblemSpec* p : selected) {
    ValidationResult r;
    try {
      r = validate_problem(*p, o.v);
    } catch (const Error& e) {
      r.problem = p->folder();
      r.verdict = Verdict::fail;
      r.detail = e.what();
    }
    std::printf("%s %-28s W=%d %s %s %5.1fs  %s\n", verdict_name(r.verdict), r.problem.c_str(), o.v.world,
                o.v.device.c_str(), o.v.dtype.c_str(), r.wall_s, r.detail.c_str());
    if (o.v.device == "cuda" && !r.python.empty()) std::printf("     %-28s python: %s\n", "", r.python.c_str());
    std::fflush(stdout);
    (r.verdict == Verdict::pass ? passed : r.verdict == Verdict::skip ? skipped : failed)++;
  }
  std::printf("validate: %d passed, %d failed, %d skipped (W=%d, %s, %s)\n", passed, failed, skipped, o.v.world,
              o.v.device.c_str(), o.v.dtype.c_str());
  if (!c.errors.empty()) return 2;
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ValidateCliOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check references against their oracles (and reference.py)");
  cmd->add_option("problems", o->selection, "ids, ranges (9-30), lists (1,4,7), slugs or all")->required();
  cmd->add_option("-w,--world", o->v.world, "World size (ranks)")->check(CLI::PositiveNumber);
  cmd->add_option("--device", o->v.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--dtype", o->v.dtype, "Float dtype of the run")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--trials", o->v.trials, "Trials with fresh random inputs")->check(CLI::PositiveNumber);
  cmd->add_option("--seed", o->v.seed, "Base seed");
  cmd->add_option("--param", o->params, "NAME=VALUE parameter override (repeatable)");
  cmd->add_option("--python", o->python, "Cross-check reference.py under torchrun")->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--out", o->out, "Working directory for outputs");
  cmd->add_option("--timeout", o->v.timeout_s, "Deadline per launch, seconds");
  cmd->callback([o, &action] { action = [o] { return run_validate(*o); }; });
}

}  // namespace pkb::cli
