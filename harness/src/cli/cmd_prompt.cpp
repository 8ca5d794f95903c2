// pkb prompt PROBLEM [-w W] [--topology NAME] [--variant zero-shot|one-shot] [--param K=V] [--json]
// Prints exactly what `pkb generate` would send for the problem: the system prompt, then the user prompt; with
// --json the provider-neutral request (models::Request as JSON). Exit codes: 0 printed, 2 usage or input error.
#include <iostream>

#include "cli/commands.h"
#include "cli/prompt_options.h"
#include "core/error.h"
#include "generate/generate.h"
#include "spec/catalog.h"

namespace pkb::cli {
namespace {

struct PromptCmdOptions {
  std::string problem;
  PromptCliOptions prompt;
  bool json = false;
};

int run_prompt(const PromptCmdOptions& o) {
  Catalog c = load_catalog(repo_root() / "problems");
  auto selected = c.select(o.problem);
  if (selected.size() != 1)
    throw Error("pkb prompt takes exactly one problem; '" + o.problem + "' selects " + std::to_string(selected.size()));
  prompt::Prompt p = prompt::build_prompt(*selected[0], to_prompt_options(o.prompt));
  if (o.json) {
    generate::GenerateOptions defaults;  // the request generate would send for sample 0
    std::cout << models::to_json(generate::make_request(p, defaults.max_tokens, defaults.temperature, 0)).dump(2)
              << "\n";
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
  cmd->callback([o, &action] { action = [o] { return run_prompt(*o); }; });
}

}  // namespace pkb::cli
