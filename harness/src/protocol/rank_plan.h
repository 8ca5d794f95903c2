// What the driver hands a job's ranks in files rather than on their command line. The plan (`--plan FILE`: a
// candidate pass's schedule, which the ranks read and delete before any candidate code starts, since /proc shows a
// command line to every process of the sandbox; eval/evaluate.cpp writes it, worker/rank_common.cpp reads it) is the
// rank program's own flags (worker/worker_args.cpp to_args, parsed back by worker/worker_cli.h), one JSON string
// each. A batch (`--batch FILE`: `pkb validate`'s reference passes of several problems in one launch;
// validate/validate.cpp writes it) lists per problem its directory, its output directory and its parameters. Every
// key is spelled here only; a file of another shape does not parse (ProtocolError, protocol/fields.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/fields.h"

namespace pkb::protocol {

struct RankPlan {
  std::vector<std::string> args;  // pkb-rank's flags and their values, in order
  bool operator==(const RankPlan&) const = default;
};

struct RankBatchEntry {
  std::string problem_dir, out_dir;
  std::vector<std::string> params;  // NAME=VALUE
  bool operator==(const RankBatchEntry&) const = default;
};

void to_json(nlohmann::json& j, const RankPlan& p);    // a JSON array of strings
void from_json(const nlohmann::json& j, RankPlan& p);  // throws ProtocolError unless an array of strings
void to_json(nlohmann::json& j, const RankBatchEntry& e);
void from_json(const nlohmann::json& j, RankBatchEntry& e);

// A batch file's entries; throws ProtocolError unless a non-empty array of entries.
std::vector<RankBatchEntry> rank_batch_from_json(const nlohmann::json& j);

}  // namespace pkb::protocol
