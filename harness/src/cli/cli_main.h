// The driver's main, shared by its two programs: pkb-full has every command; pkb, the front users run, has the
// commands that never touch a tensor and hands every other command line to pkb-full (front_main.cpp).
#pragma once

#include <functional>

#include "cli/commands.h"

namespace pkb::cli {

using AddCommands = std::function<void(CLI::App&, Action&)>;

// Parses argv with the commands `add_commands` registers and runs the chosen one. Exit codes as commands.h says.
int cli_main(int argc, char** argv, const AddCommands& add_commands);

// The commands without libtorch (eval, run, regress, topology, prompt, generate, report, leaderboard, serve,
// worker), in both programs.
void add_torch_free_commands(CLI::App& app, Action& action);

}  // namespace pkb::cli
