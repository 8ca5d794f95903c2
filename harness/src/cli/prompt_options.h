// Options shared by `pkb prompt` and `pkb generate`: which prompt to build (W, topology, variant, parameters,
// dtype, template directory). Registered once here so both commands spell and document them the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

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

}  // namespace pkb::cli
