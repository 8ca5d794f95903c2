#include "protocol/rank_plan.h"

namespace pkb::protocol {

using json = nlohmann::json;

void to_json(json& j, const RankPlan& p) { j = p.args; }

void from_json(const json& j, RankPlan& p) { read_value(j, p.args, "the plan"); }

void to_json(json& j, const RankBatchEntry& e) {
  j = {{"problem_dir", e.problem_dir}, {"out", e.out_dir}, {"params", e.params}};
}

void from_json(const json& j, RankBatchEntry& e) {
  Fields f(j, "the batch entry");
  f.required("problem_dir", e.problem_dir);
  f.required("out", e.out_dir);
  f.optional("params", e.params);
}

std::vector<RankBatchEntry> rank_batch_from_json(const json& j) {
  std::vector<RankBatchEntry> entries;
  read_value(j, entries, "the batch");
  if (entries.empty()) throw ProtocolError("the batch lists no problem");
  return entries;
}

}  // namespace pkb::protocol
