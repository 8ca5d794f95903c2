// Rewards for RL training loops, computed from a result record (core/result_record.h) by a named, versioned
// shaping (docs/serve.md, "Rewards"). A reward is a pure function of the record: pkb serve stores the record and
// computes the reward when it is read, so a client may ask for any shaping of any finished evaluation, and the
// record itself is always returned beside it.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkb::serve {

// The integrity flags a record carries, each forcing a shaping's penalty whatever the status:
// "stream_escape" (work escaped the timed stream), "repeat_faster" (faster on input contents it had seen),
// "inputs_mutated" (the candidate wrote an input), "post_window_busy" (SMs still busy after a timed window),
// "lint" (a lint finding). Empty for a clean record.
std::vector<std::string> integrity_flags(const nlohmann::json& record);

struct Reward {
  std::optional<double> value;  // none: no verdict to reward (harness_error, not_evaluated, an unknown status)
  std::string shaping;          // "ladder-v1", ...
  std::string rung;             // the ladder's rung: compile, runtime, incorrect, correct; "flagged"; "" if none
  std::vector<std::string> flags;
  nlohmann::json to_json() const;
};

// The shapings' names, the default first.
const std::vector<std::string>& shaping_names();
bool known_shaping(const std::string& name);
// Throws pkb::Error for an unknown shaping.
Reward compute_reward(const nlohmann::json& record, const std::string& shaping);

}  // namespace pkb::serve
