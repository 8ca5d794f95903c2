// Dollar estimates from pricing/prices.json (see pricing/README.md). An entry matches "provider:model" with a
// shell glob; the most specific (longest) pattern wins. Unknown model or unknown usage -> no estimate, never 0.
// Estimates charge every input token at the uncached rate and ignore long-context and time-of-day tiers, so
// they are upper bounds for cached prompts and lower bounds past a long-context threshold.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/types.h"

namespace pkb::models {

struct Price {
  std::string match;       ///< "provider:model-glob", e.g. "anthropic:claude-opus-4-7*"
  double input_per_mtok;   ///< USD per 1M input tokens
  double output_per_mtok;  ///< USD per 1M output tokens (reasoning included)
  std::string source;      ///< where the number was read
  std::string as_of;       ///< date it was read, YYYY-MM[-DD]
};

class PriceTable {
 public:
  /// Throws pkb::Error naming the file and the bad entry.
  static PriceTable load(const std::filesystem::path& path);
  static PriceTable from_json(const nlohmann::json& j);

  /// "openai-responses" falls back to "openai" entries (same models, same prices).
  const Price* find(const std::string& provider, const std::string& model) const;
  const std::vector<Price>& entries() const { return entries_; }

 private:
  std::vector<Price> entries_;
};

/// USD, or nullopt when the model is not priced or the reply reported no usage.
std::optional<double> estimate_cost(const PriceTable& prices, const std::string& provider, const std::string& model,
                                    const Usage& usage);
std::optional<double> estimate_cost(const std::filesystem::path& prices_json, const std::string& provider,
                                    const std::string& model, const Usage& usage);

}  // namespace pkb::models
