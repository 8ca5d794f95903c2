// pkb generate --model M --problems SPEC --samples K [-w W] [--topology NAME] [--variant ...] [--concurrency N]
//              [--max-tokens N] [--temperature T] [--out DIR] [--retry-base-ms MS] [--max-attempts N] [--timeout S]
// Asks a model for kernels (or takes them from `expert` / `replay:DIR`) and writes candidates, raw replies and
// generations.jsonl under OUT (layout: generate/generate.h). Exit codes: 0 every request was answered (whatever
// the answers held), 1 some requests failed after their retries (rerun: the cache keeps what was answered),
// 2 usage or input error.
#include <iostream>

#include "cli/commands.h"
#include "cli/prompt_options.h"
#include "core/error.h"
#include "generate/generate.h"
#include "spec/catalog.h"

namespace pkb::cli {
namespace {

struct GenerateCmdOptions {
  generate::GenerateOptions g;
  PromptCliOptions prompt;
  std::string out;
  double temperature = -1;  // < 0: the provider's default
  ServiceCliOptions service;
};

int run_generate_cmd(GenerateCmdOptions& o) {
  o.g.prompt = to_prompt_options(o.prompt);
  if (o.temperature >= 0) o.g.temperature = o.temperature;
  if (!o.out.empty()) o.g.out_dir = o.out;
  apply_service_options(o.service, o.g.provider);
  Catalog c = load_catalog(repo_root() / "problems");
  for (const auto& e : c.errors) std::cerr << "pkb: error: " << e << "\n";
  generate::GenerateResult r = generate::run_generate(c, o.g);
  using S = generate::SampleStatus;
  std::cout << "generate: " << r.records.size() << " samples: " << r.count(S::ok) << " ok, " << r.count(S::no_code)
            << " no code, " << r.count(S::truncated) << " truncated, " << r.count(S::refused) << " refused, "
            << r.count(S::bad_request) << " rejected (bad_request), " << r.count(S::error)
            << " not answered (service failures)";
  for (S s : {S::skipped, S::no_solution, S::missing})
    if (r.count(s)) std::cout << ", " << r.count(s) << " " << generate::sample_status_name(s);
  std::cout << "; records in " << (r.out_dir / "generations.jsonl").string() << "\n";
  if (!c.errors.empty()) return 2;
  return r.count(S::error) == 0 ? 0 : 1;
}

}  // namespace

void add_generate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<GenerateCmdOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Ask a model for kernels and write the candidates");
  cmd->add_option("--model", o->g.model,
                  "provider:model (openai, openai-responses, anthropic, gemini, together, deepseek, vllm, sglang, "
                  "ollama), compat:URL@model, expert, or replay:DIR")
      ->required();
  cmd->add_option("--problems", o->g.problems, "ids, ranges (9-30), lists (1,4,7), slugs or all");
  cmd->add_option("--samples", o->g.samples, "Samples per problem")->check(kPositive);
  add_prompt_options(cmd, o->prompt);
  cmd->add_option("--concurrency", o->g.concurrency, "Requests in flight")->check(kPositive);
  cmd->add_option("--max-tokens", o->g.max_tokens, "Output cap per request, reasoning included")->check(kPositive);
  cmd->add_option("--temperature", o->temperature, "Sampling temperature (default: the provider's)")
      ->check(kNonNegative);
  cmd->add_option("--out", o->out, "Output directory (default: results/generate/<model>)");
  add_service_options(cmd, o->g.provider, o->service);
  cmd->callback([o, &action] { action = [o] { return run_generate_cmd(*o); }; });
}

}  // namespace pkb::cli
