// pkb prompt PROBLEM [-w W] [--topology NAME] [--variant zero-shot|one-shot] [--param K=V] [--json]
//                    [--turn] [--feedback STATUS] [--turns T]
// Prints exactly what `pkb generate` would send for the problem: the system prompt, then the user prompt; with
// --json the provider-neutral request (models::Request as JSON). With --turn, the second turn of `pkb run
// --turns T` instead: the first prompt, a stand-in for the model's first answer, and the follow-up message with
// example feedback of the given status (prompt/feedback.h). Exit codes: 0 printed, 2 usage or input error.
#include <iostream>

#include "cli/commands.h"
#include "cli/prompt_options.h"
#include "core/error.h"
#include "generate/generate.h"
#include "prompt/feedback.h"
#include "spec/catalog.h"

namespace pkb::cli {
namespace {

struct PromptCmdOptions {
  std::string problem;
  PromptCliOptions prompt;
  bool json = false;
  bool turn = false;
  std::string feedback;  // "" = incorrect
  int turns = 3;
};

constexpr const char* kExampleAnswer =
    "(the model's answer to turn 1: its explanation and the kernel in one ```cuda block, sent back verbatim)";

int run_prompt(const PromptCmdOptions& o) {
  Catalog c = load_catalog(repo_root() / "problems");
  auto selected = c.select(o.problem);
  if (selected.size() != 1)
    throw Error("pkb prompt takes exactly one problem; '" + o.problem + "' selects " + std::to_string(selected.size()));
  prompt::PromptOptions po = to_prompt_options(o.prompt);
  prompt::Prompt p = prompt::build_prompt(*selected[0], po);
  generate::GenerateOptions defaults;  // the request generate would send for sample 0
  models::Request req = generate::make_request(p, defaults.max_tokens, defaults.temperature, 0);
  std::string follow_up;
  bool turn = o.turn || !o.feedback.empty();
  if (turn) {
    ResultRecord rec = prompt::example_record(o.feedback.empty() ? "incorrect" : o.feedback, selected[0]->folder());
    follow_up = prompt::render_follow_up(rec, {1, o.turns, po.prompts_dir});
    req.history.push_back({req.user, kExampleAnswer});
    req.user = follow_up;
  }
  if (o.json) {
    std::cout << models::to_json(req).dump(2) << "\n";
  } else if (turn) {
    std::cout << "===== system =====\n"
              << p.system << "\n===== user (turn 1) =====\n"
              << p.user << "\n===== assistant (turn 1) =====\n"
              << kExampleAnswer << "\n===== user (turn 2, example feedback) =====\n"
              << follow_up << "\n";
  } else {
    std::cout << "===== system =====\n" << p.system << "\n===== user =====\n" << p.user << "\n";
  }
  return 0;
}

}  // namespace

void add_prompt_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PromptCmdOptions>();
  CLI::App* cmd = app.add_subcommand("prompt", "Print the prompt a model would get for one problem");
  cmd->add_option("problem", o->problem, "Problem id or slug")->required();
  add_prompt_options(cmd, o->prompt);
  cmd->add_flag("--json", o->json, "Print the provider-neutral request as JSON");
  cmd->add_flag("--turn", o->turn, "Show the follow-up of pkb run --turns: turn 2 after example feedback");
  std::string statuses;
  for (const auto& s : prompt::example_feedback_statuses()) statuses += (statuses.empty() ? "" : ", ") + s;
  cmd->add_option("--feedback", o->feedback,
                  "The example feedback's status (implies --turn; default incorrect): " + statuses);
  cmd->add_option("--turns", o->turns, "The run's --turns, as the follow-up states it")->check(CLI::Range(2, 1000));
  cmd->callback([o, &action] { action = [o] { return run_prompt(*o); }; });
}

}  // namespace pkb::cli
