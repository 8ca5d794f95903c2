// pkb-full oracle (hidden): writes a reference-cache entry's expected outputs (eval/oracle.h). The torch-free driver
// runs it once per new entry; nobody else needs to.
#include "cli/commands.h"
#include "core/error.h"
#include "eval/oracle.h"

namespace pkb::cli {

void add_oracle_command(CLI::App& app, Action& action) {
  struct Options {
    std::string problem_dir, dtype, work;
    int world = 1, trials = 0;
    uint64_t seed = 0;
    std::vector<std::string> params;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("oracle", "The expected outputs of a reference-cache entry (for pkb eval)");
  cmd->group("");  // hidden: pkb's own plumbing
  cmd->add_option("--problem-dir", o->problem_dir)->required();
  cmd->add_option("--world", o->world)->required();
  cmd->add_option("--dtype", o->dtype)->required();
  cmd->add_option("--trials", o->trials)->required();
  cmd->add_option("--seed", o->seed)->required();
  cmd->add_option("--work", o->work)->required();
  cmd->add_option("--param", o->params);
  cmd->callback([o, &action] {
    action = [o] {
      const ProblemSpec spec = load_problem(o->problem_dir);
      const auto dtype = dtype_from_name(o->dtype);
      if (!dtype) throw Error("oracle: unknown dtype '" + o->dtype + "'");
      OracleJob job{spec.dir, resolve_run(spec, o->world, *dtype, parse_param_overrides(o->params)), o->trials, o->seed,
                    o->work};
      write_oracle_outputs(job);
      return 0;
    };
  });
}

}  // namespace pkb::cli
