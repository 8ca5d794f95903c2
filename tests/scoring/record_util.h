// Builds pkb.result/1 lines for tests that need a results.jsonl of their own: `pkb eval` outcomes and the
// generation_failed / not_evaluated records `pkb run` adds.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pkb::test {

struct RecordSpec {
  int id = 1;
  std::string folder = "001_allreduce", slug = "allreduce", category = "collective";
  std::string sha256 = "";
  std::string status = "correct";
  std::optional<double> speedup = std::nullopt;
  int sample = -1;                                // the record's "sample" field; -1: none
  int turn = 0;                                   // the record's "turn" field (pkb run --turns); 0: none
  std::optional<double> cost_usd = std::nullopt;  // generation.cost_usd; output_tokens 100 alongside
};

inline std::string record_line(const RecordSpec& r) {
  nlohmann::json j = {
      {"schema", "pkb.result/1"},
      {"problem", {{"id", r.id}, {"slug", r.slug}, {"folder", r.folder}, {"category", r.category}}},
      {"candidate", {{"path", r.status == "generation_failed" ? "" : "/c/" + r.sha256 + ".cu"}, {"sha256", r.sha256}}},
      {"world", 2},
      {"device", "cuda"},
      {"dtype", "bf16"},
      {"status", r.status},
      {"message", r.status},
      {"provenance", {{"gpu", "NVIDIA H200"}, {"pkb_git", "abc123"}}}};
  if (r.sample >= 0) j["sample"] = r.sample;
  if (r.turn > 0) j["turn"] = r.turn;
  if (r.cost_usd) j["generation"] = {{"input_tokens", 1000}, {"output_tokens", 100}, {"cost_usd", *r.cost_usd}};
  if (r.status == "generation_failed") j["generation"] = {{"status", "no_code"}, {"message", "no code block"}};
  if (r.status == "correct") j["checks"] = {{"robust_pass", true}, {"pkb_pass", true}};
  if (r.speedup) j["timing"] = {{"baseline", "pytorch_eager"}, {"speedup", *r.speedup}};
  return j.dump() + "\n";
}

}  // namespace pkb::test
