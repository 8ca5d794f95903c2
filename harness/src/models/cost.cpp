#include "models/cost.h"

#include <fnmatch.h>

#include <fstream>

#include "core/error.h"

namespace pkb::models {
namespace {

Price parse_entry(const nlohmann::json& e) {
  Price p{e.at("match").get<std::string>(), e.at("input").get<double>(), e.at("output").get<double>(),
          e.at("source").get<std::string>(), e.at("as_of").get<std::string>()};
  if (p.match.find(':') == std::string::npos) throw Error("match '" + p.match + "' is not provider:model-glob");
  if (p.input_per_mtok < 0 || p.output_per_mtok < 0) throw Error("negative price for '" + p.match + "'");
  if (p.source.empty() || p.as_of.empty()) throw Error("entry '" + p.match + "' needs source and as_of");
  return p;
}

const Price* best_match(const std::vector<Price>& entries, const std::string& subject) {
  const Price* best = nullptr;
  for (const auto& p : entries)
    if (fnmatch(p.match.c_str(), subject.c_str(), 0) == 0 && (!best || p.match.size() > best->match.size())) best = &p;
  return best;
}

}  // namespace

PriceTable PriceTable::from_json(const nlohmann::json& j) {
  PriceTable t;
  try {
    for (const auto& e : j.at("entries")) t.entries_.push_back(parse_entry(e));
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("price table: ") + e.what());
  }
  return t;
}

PriceTable PriceTable::load(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error(path.string() + ": cannot open");
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error(path.string() + ": not valid JSON");
  return with_context(path.string(), [&] { return from_json(j); });
}

const Price* PriceTable::find(const std::string& provider, const std::string& model) const {
  if (const Price* p = best_match(entries_, provider + ":" + model)) return p;
  if (provider == "openai-responses") return best_match(entries_, "openai:" + model);
  return nullptr;
}

std::optional<double> estimate_cost(const PriceTable& prices, const std::string& provider, const std::string& model,
                                    const Usage& usage) {
  const Price* p = prices.find(provider, model);
  if (!p || !usage.known) return std::nullopt;
  return (double(usage.input_tokens) * p->input_per_mtok + double(usage.output_tokens) * p->output_per_mtok) / 1e6;
}

std::optional<double> estimate_cost(const std::filesystem::path& prices_json, const std::string& provider,
                                    const std::string& model, const Usage& usage) {
  return estimate_cost(PriceTable::load(prices_json), provider, model, usage);
}

}  // namespace pkb::models
