#include "cli/cli_main.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "launch/process.h"
#include "models/logging.h"

namespace pkb::cli {

void add_torch_free_commands(CLI::App& app, Action& action) {
  add_eval_command(app, action);
  add_run_command(app, action);
  add_regress_command(app, action);
  add_topology_command(app, action);
  add_prompt_command(app, action);
  add_generate_command(app, action);
  add_report_command(app, action);
  add_leaderboard_command(app, action);
  add_serve_command(app, action);
  add_worker_command(app, action);
}

int cli_main(int argc, char** argv, const AddCommands& add_commands) {
  log_to_stderr();
  CLI::App app{"pkb: a benchmark of multi-GPU CUDA kernels written by language models"};
  app.require_subcommand(1);
  std::string root;
  app.add_option("--root", root,
                 "The tree holding problems/, topologies/, prompts/ (default: $PKB_ROOT, the installed "
                 "share/pkb, or the source tree pkb was built from)")
      ->check(CLI::ExistingDirectory);
  Action action;
  add_commands(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  // Through the environment, so every part of pkb (and the processes it starts) sees the same tree.
  if (!root.empty()) setenv("PKB_ROOT", std::filesystem::absolute(root).c_str(), 1);
  kill_children_on_termination();
  try {
    return action ? action() : 2;
  } catch (const Error& e) {
    std::cerr << "pkb: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {  // a library's exception that no layer translated: still one clear line
    std::cerr << "pkb: unexpected error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace pkb::cli
