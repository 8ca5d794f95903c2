// The agent part of an agent run's reports (pkb run --agent): pass@k and fast_p@k of the samples as if each had been
// allowed s tool calls ("solved within s steps"), for each s of the step grid, and what the agents spent. Empty for
// other runs, whose reports therefore read exactly as before.
#include <sstream>

#include "scoring/format.h"
#include "scoring/html.h"
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

std::string agent_html(const Scores& s) {
  if (s.steps.empty()) return "";
  const auto& st = s.settings;
  const std::string fast = fast_name(st);
  const AgentTotals& t = s.agent;
  std::vector<double> steps;
  for (const StepScore& row : s.steps) steps.push_back(row.steps);
  // One series per estimator and k: pass@k, then fast_p@k, each over the step budgets.
  std::vector<html::Series> series;
  for (size_t i = 0; i < st.ks.size(); ++i)
    for (bool is_fast : {false, true}) {
      html::Series one{(is_fast ? fast : std::string("pass")) + "@" + std::to_string(st.ks[i]), {}};
      for (const StepScore& row : s.steps)
        one.values.push_back(row.overall.mean(is_fast ? row.overall.fast[i] : row.overall.pass_robust[i]));
      series.push_back(std::move(one));
    }
  std::vector<html::Column> cols = {{"steps", "steps"}, {"solved", "solved"}};
  for (int k : st.ks) cols.push_back({"pass_at_" + std::to_string(k), "pass@" + std::to_string(k)});
  for (int k : st.ks) cols.push_back({fast + "_at_" + std::to_string(k), fast + "@" + std::to_string(k)});
  std::vector<std::vector<html::Cell>> rows;
  for (const StepScore& row : s.steps) {
    const Aggregate& a = row.overall;
    std::vector<html::Cell> r = {html::number_cell(row.steps, 0), html::number_cell(row.solved, 0)};
    for (double sum : a.pass_robust) r.push_back(html::number_cell(a.mean(sum), 3));
    for (double sum : a.fast) r.push_back(html::number_cell(a.mean(sum), 3));
    rows.push_back(std::move(r));
  }
  std::ostringstream o;
  o << "<h2 id=\"agent\">Agent: solved within s tool calls</h2>\n<p class=\"note\">Each sample counts as failed at a "
    << "budget of s if it used more than s tool calls; its submitted kernel is judged on fresh inputs either way. "
    << t.samples << " samples used " << fixed(t.samples ? double(t.steps) / t.samples : 0.0, 1)
    << " tool calls on average, " << t.input_tokens << " input and " << t.output_tokens << " output tokens in all, "
    << (t.priced ? "$" + fixed(t.cost_usd, 4) : std::string("cost unknown")) << ". The points: agent_steps.csv.</p>\n"
    << html::curve_svg(steps, series, "score", {"tool calls allowed per sample (s)", "s"})
    << html::sortable_table("agent-steps", cols, rows);
  return o.str();
}

}  // namespace pkb::scoring
