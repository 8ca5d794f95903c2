// The agent loop's entry point for run_benchmark (run/agent.h says what the mode does).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "generate/generate.h"
#include "run/run.h"

namespace pkb::run {

/// Runs every sample of `problems` that `mine` accepts and that has no record yet in `results`, each as one agent
/// conversation (resumed from its transcript), on the evaluation `slots` (CUDA_VISIBLE_DEVICES lists; one per
/// concurrent sample), appending one record per finished sample. `g` holds the prompt and model settings.
void run_agent_samples(const std::vector<const ProblemSpec*>& problems, const RunOptions& o,
                       const generate::GenerateOptions& g, const std::vector<std::string>& slots,
                       const std::function<bool(const ProblemSpec*, int)>& mine, const std::filesystem::path& results,
                       RunSummary& sum);

}  // namespace pkb::run
