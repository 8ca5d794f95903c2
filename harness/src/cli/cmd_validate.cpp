// pkb validate PROBLEMS [-w W] [--device cpu|cuda] [--dtype bf16|fp32] [--trials T] [--python auto|on|off]
// [--time [--warmup N] [--iters N] [--topology NAME]]
// With --time, each problem also gets its baselines timed and a closing table of times and SOL%.
// Exit 0 only when every selected problem passed (skips for a W the problem forbids are not failures).
#include <cstdio>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "core/enum_option.h"
#include "core/error.h"
#include "core/files.h"
#include "spec/catalog.h"
#include "spec/topology.h"
#include "validate/validate.h"
#include "worker/timing_cli.h"

namespace pkb::cli {
namespace {

struct ValidateCliOptions {
  std::string selection;
  ValidateOptions v;
  std::vector<std::string> params;
  std::string python = "auto";
  std::string out = "results/validate";
  std::string verdicts;  // where to write {folder: {verdict, detail}} ("": nowhere)
};

std::string cell(const nlohmann::json& j, const char* key, double scale, const char* fmt) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number() || j[key].get<double>() <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, scale * j[key].get<double>());
  return buf;
}

// The markdown table of baseline times against the roofline, for notes and docs/results.
void print_timing_table(const std::vector<ValidationResult>& results, const ValidateOptions& v) {
  std::printf(
      "\n| problem | libtorch+NCCL us | PyTorch eager us | roofline floor us | bound | SOL%% libtorch+NCCL | SOL%% "
      "eager |\n"
      "|---|---|---|---|---|---|---|\n");
  int below_half = 0, timed = 0;
  for (const auto& r : results) {
    if (r.verdict == Verdict::skip || !r.record.contains("roofline")) continue;
    const auto& t = r.record["timing"];
    const auto& roof = r.record["roofline"];
    std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", r.problem.c_str(),
                cell(t["libtorch_nccl"], "median_us", 1, "%.1f").c_str(),
                cell(t["pytorch_eager"], "median_us", 1, "%.1f").c_str(), cell(roof, "floor_us", 1, "%.3g").c_str(),
                roof.value("bound", "").c_str(), cell(roof, "sol_libtorch_nccl", 100, "%.0f").c_str(),
                cell(roof, "sol_pytorch_eager", 100, "%.0f").c_str());
    const auto& sol = roof.contains("sol_pytorch_eager") && roof["sol_pytorch_eager"].is_number()
                          ? roof["sol_pytorch_eager"]
                          : roof["sol_libtorch_nccl"];
    if (sol.is_number()) ++timed, below_half += sol.get<double>() < 0.5;
  }
  std::printf(
      "\n%d of %d timed baselines are below 50%% of the roofline (W=%d, %s, topology %s; PyTorch eager "
      "where measured, else libtorch+NCCL; libtorch+NCCL timed %s)\n",
      below_half, timed, v.world, v.dtype.c_str(), v.topology.c_str(),
      v.device != DeviceKind::cuda ? "with the runner's doorbell"
      : v.through_gate             ? "through the call gate"
                                   : "by its own events");
}

int run_validate(ValidateCliOptions& o) {
  o.v.params = parse_param_overrides(o.params);
  o.v.python = o.python == "on" ? PythonCheck::on : o.python == "off" ? PythonCheck::off : PythonCheck::auto_detect;
  o.v.out_dir = std::filesystem::absolute(o.out);
  o.v.topology = roofline_topology(o.v.topology);
  Catalog c = load_catalog(repo_root() / "problems");
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  auto selected = c.select(o.selection);
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> python_verdicts;  // agrees, skipped, disagrees, failed
  bool python_asked =
      o.v.python == PythonCheck::on || (o.v.python == PythonCheck::auto_detect && o.v.device == DeviceKind::cuda);
  auto print = [&](const ValidationResult& r) {
    std::printf("%s %-28s W=%d %s %s %5.1fs  %s\n", verdict_name(r.verdict), r.problem.c_str(), o.v.world,
                enum_name(o.v.device), o.v.dtype.c_str(), r.wall_s, r.detail.c_str());
    if (python_asked && !r.python.empty()) {
      std::printf("     %-28s python: %s\n", "", r.python.c_str());
      python_verdicts[r.python.substr(0, r.python.find(':'))]++;
    }
    if (!r.timing.empty()) std::printf("     %-28s time: %s\n", "", r.timing.c_str());
    std::fflush(stdout);
    (r.verdict == Verdict::pass ? passed : r.verdict == Verdict::skip ? skipped : failed)++;
  };
  std::vector<ValidationResult> results = validate_problems(selected, o.v, print);
  if (!o.verdicts.empty()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& r : results) out[r.problem] = {{"verdict", verdict_name(r.verdict)}, {"detail", r.detail}};
    write_json_atomically(o.verdicts, out);
  }
  if (o.v.time) print_timing_table(results, o.v);
  std::printf("validate: %d passed, %d failed, %d skipped (W=%d, %s, %s)\n", passed, failed, skipped, o.v.world,
              enum_name(o.v.device), o.v.dtype.c_str());
  if (python_asked) {
    std::string line;
    for (const auto& [verdict, n] : python_verdicts)
      line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + verdict;
    std::printf("validate: reference.py cross-check: %s\n", line.empty() ? "none ran" : line.c_str());
  }
  if (!c.errors.empty()) return 2;
  return failed == 0 ? 0 : 1;
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ValidateCliOptions>();
  CLI::App* cmd = app.add_subcommand("validate", "Check references against their oracles (and reference.py)");
  cmd->add_option("problems", o->selection, "ids, ranges (9-30), lists (1,4,7), slugs or all")->required();
  cmd->add_option("-w,--world", o->v.world, "World size (ranks)")->check(kPositive);
  add_enum_option(*cmd, "--device", o->v.device, "cpu or cuda");
  cmd->add_option("--dtype", o->v.dtype, "Float dtype of the run")->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--trials", o->v.trials, "Trials with fresh random inputs")->check(kPositive);
  cmd->add_option("--seed", o->v.seed, "Base seed")->check(kNonNegative);
  cmd->add_option("--param", o->params, "NAME=VALUE parameter override (repeatable)");
  cmd->add_flag("--small", o->v.small, "Use each problem's test_parameters (small CI shapes); --param still wins");
  cmd->add_option("--python", o->python, "Cross-check reference.py (auto: on GPUs where torch imports)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  cmd->add_option("--out", o->out, "Working directory for outputs");
  cmd->add_option("--verdicts", o->verdicts, "Also write each problem's verdict and detail to this JSON file");
  cmd->add_option("--timeout", o->v.timeout_s, "Deadline per launch, seconds")->check(kPositive);
  cmd->add_option("--ranks-per-gpu", o->v.ranks_per_gpu,
                  "Ranks sharing each GPU (MPS) even where there are enough GPUs (NCCL cannot run: references stage "
                  "through host memory)")
      ->check(CLI::Range(1, 64));
  CLI::Option* time = cmd->add_flag("--time", o->v.time, "Also time the baselines and relate them to the roofline");
  add_timing_flags(cmd, o->v.timing, " (--time)");
  cmd->add_option("--topology", o->v.topology,
                  "Topology of the roofline (--time; default: this machine's GPU's, else h200_2)");
  cmd->add_flag("--through-gate", o->v.through_gate,
                "On GPUs, time the libtorch baseline through the call gate, as an evaluation with its candidate in a "
                "runner does (default: by its own events)")
      ->needs(time);
  cmd->callback([o, &action] { action = [o] { return run_validate(*o); }; });
}

}  // namespace pkb::cli
