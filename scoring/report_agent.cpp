// The agent part of an agent run's reports (pkb run --agent): pass@k and fast_p@k of the samples as if each had been
// allowed s tool calls ("solved within s steps"), for each s of the step grid, and what the agents spent. Empty for
// other runs, whose reports therefore read exactly as before.
#include <sstream>

#include "scoring/format.h"
#include "scoring/report.h"

namespace pkb::scoring {

nlohmann::ordered_json agent_json(const Scores& s) {
  using ojson = nlohmann::ordered_json;
  if (s.steps.empty()) return ojson();
  ojson rows = ojson::array();
  for (const StepScore& st : s.steps) {
    ojson a = aggregate_json(st.overall, s.settings.ks);
    rows.push_back({{"steps", st.steps},
                    {"solved", st.solved},
                    {"pass_at_k", a["pass_at_k"]},
                    {"fast_p_at_k", a["fast_p_at_k"]},
                    {"geomean_speedup", a["geomean_speedup"]}});
  }
  const AgentTotals& t = s.agent;
  return {{"samples", t.samples},
          {"mean_steps", t.samples ? ojson(double(t.steps) / t.samples) : ojson()},
          {"input_tokens", t.input_tokens},
          {"output_tokens", t.output_tokens},
          {"cost_usd", t.priced ? ojson(t.cost_usd) : ojson()},
          {"priced", t.priced},
          {"steps", rows}};
}

std::string agent_md(const Scores& s) {
  if (s.steps.empty()) return "";
  const auto& st = s.settings;
  std::string fast = fast_name(st);
  const AgentTotals& t = s.agent;
  std::ostringstream o;
  o << "\n## Agent\n\nSolved within s tool calls: each sample counts as failed if it used more than s (its "
    << "submitted kernel is judged on fresh inputs either way). " << t.samples << " samples used "
    << fixed(t.samples ? double(t.steps) / t.samples : 0.0, 1) << " tool calls on average and " << t.input_tokens
    << " input and " << t.output_tokens << " output tokens in all, costing "
    << (t.priced ? "$" + fixed(t.cost_usd, 4) : std::string("an unknown amount"))
    << (t.priced && t.priced < t.samples ? " (" + std::to_string(t.priced) + " priced)" : "") << " in total.\n\n";
  o << "| steps | solved |";
  for (int k : st.ks) o << " pass@" << k << " |";
  for (int k : st.ks) o << " " << fast << "@" << k << " |";
  o << " geomean |\n|";
  for (size_t i = 0; i < 3 + 2 * st.ks.size(); ++i) o << "--:|";
  o << "\n";
  for (const StepScore& row : s.steps) {
    const Aggregate& a = row.overall;
    o << "| " << row.steps << " | " << row.solved << " |";
    for (double sum : a.pass_robust) o << " " << (a.problems ? fixed(a.mean(sum), 3) : "-") << " |";
    for (double sum : a.fast) o << " " << (a.problems ? fixed(a.mean(sum), 3) : "-") << " |";
    o << " " << or_dash(a.geomean_speedup(), 2, "x") << " |\n";
  }
  return o.str();
}

std::string agent_csv(const Scores& s) {
  std::ostringstream o;
  o << "steps,k,pass_at_k,fast_p_at_k\n";
  for (const StepScore& row : s.steps)
    for (size_t i = 0; i < s.settings.ks.size(); ++i)
      o << row.steps << "," << s.settings.ks[i] << "," << fixed(row.overall.mean(row.overall.pass_robust[i]), 6) << ","
        << fixed(row.overall.mean(row.overall.fast[i]), 6) << "\n";
  return o.str();
}

}  // namespace pkb::scoring
