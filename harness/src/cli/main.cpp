// pkb-full: the driver with every command. See docs/cli.md for the commands and docs/architecture.md for how they
// fit together. Users run pkb (front_main.cpp), which runs this program for the commands that need libtorch.
#include "cli/cli_main.h"

int main(int argc, char** argv) {
  return pkb::cli::cli_main(argc, argv, [](CLI::App& app, pkb::cli::Action& action) {
    pkb::cli::add_problems_command(app, action);
    pkb::cli::add_validate_command(app, action);
    pkb::cli::add_oracle_command(app, action);
    pkb::cli::add_torch_free_commands(app, action);
  });
}
