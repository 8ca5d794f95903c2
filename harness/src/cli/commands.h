// Each subcommand lives in its own file: it registers its options on the app and, when chosen, sets `action`
// to a function that runs with the parsed options and returns the exit code. Run functions never see argv.
// Exit codes: 0 success, 1 a check failed (validation, evaluation), 2 usage or input error.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "cli/number_checks.h"

namespace pkb {
struct EvalOptions;
}

namespace pkb::cli {

using Action = std::function<int()>;

void add_problems_command(CLI::App& app, Action& action);
void add_topology_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_eval_command(CLI::App& app, Action& action);
void add_oracle_command(CLI::App& app, Action& action);  // pkb-full only, hidden
void add_prompt_command(CLI::App& app, Action& action);
void add_generate_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_run_command(CLI::App& app, Action& action);
void add_regress_command(CLI::App& app, Action& action);
void add_leaderboard_command(CLI::App& app, Action& action);
void add_serve_command(CLI::App& app, Action& action);
void add_worker_command(CLI::App& app, Action& action);

// The evaluation's timing flags, one spelling for eval, run and regress: the timing options (worker/timing_cli.h),
// --timing-method and --retime-baseline.
void add_eval_timing_flags(CLI::App* cmd, EvalOptions& e);
// --reference-timeout: the reference pass's own deadline (eval, run, regress).
void add_reference_timeout_flag(CLI::App* cmd, EvalOptions& e);
// --candidate-process and --draw-copies: where the candidate runs and where its timing copies come from (eval, run).
void add_candidate_process_flags(CLI::App* cmd, EvalOptions& e);

}  // namespace pkb::cli
