#include "models/cost.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace pkb::models {
namespace {

const nlohmann::json kTable = {
    {"entries",
     {{{"match", "openai:gpt-5.4*"}, {"input", 2.5}, {"output", 15.0}, {"source", "s"}, {"as_of", "2026"}},
      {{"match", "openai:gpt-5.4-mini*"}, {"input", 0.75}, {"output", 4.5}, {"source", "s"}, {"as_of", "2026"}},
      {{"match", "together:zai-org/*"}, {"input", 1.0}, {"output", 2.0}, {"source", "s"}, {"as_of", "2026"}}}}};

Usage usage(int64_t in, int64_t out) { return {true, in, out, 0}; }

TEST(EstimateCost, PricesPerMillionTokens) {
  auto t = PriceTable::from_json(kTable);
  EXPECT_DOUBLE_EQ(*estimate_cost(t, "openai", "gpt-5.4", usage(1000000, 100000)), 2.5 + 1.5);
}

TEST(EstimateCost, LongestPatternWins) {
  auto t = PriceTable::from_json(kTable);
  EXPECT_EQ(t.find("openai", "gpt-5.4-mini-2026")->input_per_mtok, 0.75);
  EXPECT_EQ(t.find("openai", "gpt-5.4-2026")->input_per_mtok, 2.5);
}

TEST(EstimateCost, ResponsesProviderUsesOpenAIPrices) {
  auto t = PriceTable::from_json(kTable);
  EXPECT_TRUE(estimate_cost(t, "openai-responses", "gpt-5.4", usage(1, 1)).has_value());
}

TEST(EstimateCost, SlashesInModelIdsMatchStar) {
  auto t = PriceTable::from_json(kTable);
  EXPECT_DOUBLE_EQ(*estimate_cost(t, "together", "zai-org/GLM-5.1", usage(1000000, 0)), 1.0);
}

TEST(EstimateCost, UnknownModelOrUsageIsUnknownNotZero) {
  auto t = PriceTable::from_json(kTable);
  EXPECT_FALSE(estimate_cost(t, "anthropic", "claude-opus-4-7", usage(10, 10)).has_value());
  EXPECT_FALSE(estimate_cost(t, "openai", "gpt-5.4", Usage{}).has_value());
}

TEST(PriceTable, RejectsEntriesWithoutProvenance) {
  nlohmann::json bad = {
      {"entries", {{{"match", "openai:x"}, {"input", 1.0}, {"output", 1.0}, {"source", ""}, {"as_of", "2026"}}}}};
  EXPECT_THROW(PriceTable::from_json(bad), pkb::Error);
  nlohmann::json missing = {{"entries", {{{"match", "openai:x"}, {"input", 1.0}}}}};
  EXPECT_THROW(PriceTable::from_json(missing), pkb::Error);
}

TEST(PriceTable, RepositoryTableLoadsAndPricesTheDefaultModels) {
  auto t = PriceTable::load(PKB_SOURCE_DIR "/pricing/prices.json");
  EXPECT_GE(t.entries().size(), 5u);
  for (const auto& p : t.entries()) {
    EXPECT_FALSE(p.source.empty()) << p.match;
    EXPECT_FALSE(p.as_of.empty()) << p.match;
    EXPECT_GT(p.output_per_mtok, 0) << p.match;
  }
  EXPECT_DOUBLE_EQ(t.find("openai", "gpt-5.5")->output_per_mtok, 30.0);
  EXPECT_DOUBLE_EQ(t.find("openai", "gpt-5.5-pro")->output_per_mtok, 180.0);
  EXPECT_NE(t.find("anthropic", "claude-opus-4-7"), nullptr);
  EXPECT_NE(t.find("gemini", "gemini-3-pro-preview"), nullptr);
  EXPECT_NE(t.find("deepseek", "deepseek-v4-pro"), nullptr);
  EXPECT_FALSE(estimate_cost(PKB_SOURCE_DIR "/pricing/prices.json", "together", "zai-org/GLM-5.1", usage(1, 1)));
}

TEST(PriceTable, MissingFileIsAnError) { EXPECT_THROW(PriceTable::load("/nonexistent/prices.json"), pkb::Error); }

}  // namespace
}  // namespace pkb::models
