// `pkb run --agent`: the model drives the evaluation itself through tool calls (docs/runs.md "Agent mode"). Each
// sample is one conversation: the problem's prompt plus prompts/agent.txt, three tools (compile_kernel,
// evaluate_kernel, submit_kernel, each taking {"source": string}), and a loop that sends the conversation, runs the
// tools the reply calls and sends their results back, until the model submits, answers without a tool call, or
// spends a budget. Only the submitted kernel is scored, judged by a fresh evaluation whose seed the tool
// evaluations never used.
//
// RUN/agent/NNN_slug/sample_K.jsonl is the sample's transcript: every request, reply, tool call and tool result
// (the result text byte for byte as the model got it), one JSON line each, appended as it happens. A resumed run
// replays it to rebuild the conversation: only the step in flight when the run was killed is done again (a tool
// call whose result line is missing is run again; a reply that never arrived is asked again, from the reply cache
// when it had come).
//
// Known limits: samples run one at a time per evaluation slot (a CPU run has one slot); the tool evaluations and
// the judging share the slot's devices with nothing else.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace pkb::run {

/// Per-sample budgets; 0 = no limit (steps must be positive). A sample that would exceed one ends as
/// budget_exhausted, and is not judged.
struct AgentBudget {
  int steps = 20;      ///< tool calls (every call counts, refused ones included; so does an empty reply)
  int64_t tokens = 0;  ///< input + output tokens over every request of the sample (tokens)
  double wall_s = 0;   ///< wall time of the sample, over every invocation that worked on it (seconds)
  double gpu_s = 0;    ///< wall time of the sample's evaluate_kernel calls (seconds)
  nlohmann::json to_json() const;
};

struct AgentOptions {
  bool enabled = false;
  AgentBudget budget;
  size_t max_source_bytes = size_t(1) << 20;  ///< a tool's `source` beyond this is refused (bytes)
};

/// The tool names scripted agents call; the order the tools are declared in.
inline constexpr const char* kAgentTools[] = {"compile_kernel", "evaluate_kernel", "submit_kernel"};

/// The seed a submitted kernel is judged with: derived from the run's seed, never equal to it (the seed every tool
/// evaluation uses), so the judged inputs are ones the agent never saw.
uint64_t judge_seed(uint64_t seed);

}  // namespace pkb::run
