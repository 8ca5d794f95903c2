// Options shared by `pkb prompt`, `pkb generate` and `pkb run`: which prompt to build (W, topology, variant,
// parameters, dtype, template directory). Registered once here so both commands spell and document them the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/number_checks.h"
#include "models/provider.h"
#include "prompt/prompt.h"

namespace pkb::cli {

struct PromptCliOptions {
  int world = 2;
  std::string topology;
  std::string variant = "one-shot";
  std::vector<std::string> params;  // NAME=VALUE
  std::string dtype = "bf16";
  std::string prompts_dir;
};

void add_prompt_options(CLI::App* cmd, PromptCliOptions& o);

/// Throws pkb::Error for a malformed --param.
prompt::PromptOptions to_prompt_options(const PromptCliOptions& o);

// How requests reach a model service: retries, streaming (--no-stream) and the HTTP deadlines (buffered attempt,
// stream idle, whole stream), shared by `pkb generate` and `pkb run`: --http-timeout everywhere, since --timeout is
// the launch deadline wherever a command evaluates.
struct ServiceCliOptions {
  int retry_base_ms = 2000;
};
void add_service_options(CLI::App* cmd, models::ProviderOptions& provider, ServiceCliOptions& o);
void apply_service_options(const ServiceCliOptions& o, models::ProviderOptions& provider);

}  // namespace pkb::cli
