// The per-turn part of a multi-turn run's reports (pkb run --turns): after each turn, pass@k and fast_p@k of the
// samples as they stood (solved if any turn so far is), what the turn added, what it asked and what it cost.
// Empty for a single-turn run, whose reports therefore read exactly as before.
#include <sstream>

#include "scoring/format.h"
#include "scoring/html.h"
#include "scoring/report.h"

namespace pkb::scoring {
namespace {

using ojson = nlohmann::ordered_json;

double mean_at(const Aggregate& a, const std::vector<double>& sums, size_t i) { return a.mean(sums[i]); }

// Per k: the mean after this turn minus the mean after the previous one (turn 1: its own mean).
ojson added_json(const TurnScore* prev, const TurnScore& t, const std::vector<int>& ks, bool fast) {
  ojson out = ojson::array();
  for (size_t i = 0; i < ks.size(); ++i) {
    const auto& now = fast ? t.overall.fast : t.overall.pass_robust;
    double before = prev ? mean_at(prev->overall, fast ? prev->overall.fast : prev->overall.pass_robust, i) : 0.0;
    out.push_back({{"k", ks[i]}, {"mean", mean_at(t.overall, now, i) - before}});
  }
  return out;
}

std::string cost_text(const TurnScore& t) {
  if (t.priced == 0) return "unknown";
  return "$" + fixed(t.cost_usd, 4) + (t.priced < t.asked ? " (" + std::to_string(t.priced) + " priced)" : "");
}

std::string signed_fixed(double x) { return (x >= 0 ? "+" : "") + fixed(x, 3); }

}  // namespace

ojson turns_json(const Scores& s) {
  ojson out = ojson::array();
  const auto& ks = s.settings.ks;
  for (size_t i = 0; i < s.turns.size(); ++i) {
    const TurnScore& t = s.turns[i];
    const TurnScore* prev = i ? &s.turns[i - 1] : nullptr;
    ojson a = aggregate_json(t.overall, ks);
    out.push_back(
        {{"turn", t.turn},
         {"asked", t.asked},
         {"correct", t.correct},
         {"newly_solved", t.newly_solved},
         {"input_tokens", t.input_tokens},
         {"output_tokens", t.output_tokens},
         {"cost_usd", t.priced ? ojson(t.cost_usd) : ojson(nullptr)},
         {"priced", t.priced},
         {"pass_at_k", a["pass_at_k"]},
         {"pkb_pass_at_k", a["pkb_pass_at_k"]},
         {"fast_p_at_k", a["fast_p_at_k"]},
         {"geomean_speedup", a["geomean_speedup"]},
         {"added", {{"pass_at_k", added_json(prev, t, ks, false)}, {"fast_p_at_k", added_json(prev, t, ks, true)}}}});
  }
  return out;
}

std::string turns_md(const Scores& s) {
  if (s.turns.empty()) return "";
  const auto& st = s.settings;
  std::string fast = fast_name(st);
  std::ostringstream o;
  o << "\n## Turns\n\nAfter each turn: a sample counts as solved if any turn so far is. `asked`: samples whose "
    << "conversation reached the turn; `new`: samples first correct at it; `+` columns: what the turn added to "
    << "pass@1 and " << fast << "@1; tokens and cost of the turn's answers.\n\n";
  o << "| turn | asked | correct | new |";
  for (int k : st.ks) o << " pass@" << k << " |";
  for (int k : st.ks) o << " " << fast << "@" << k << " |";
  o << " +pass@1 | +" << fast << "@1 | geomean | input tokens | output tokens | cost |\n|";
  for (size_t i = 0; i < 4 + 2 * st.ks.size() + 6; ++i) o << "--:|";
  o << "\n";
  size_t k1 = 0;  // the first k, normally 1
  for (size_t i = 0; i < s.turns.size(); ++i) {
    const TurnScore& t = s.turns[i];
    const Aggregate& a = t.overall;
    o << "| " << t.turn << " | " << t.asked << " | " << t.correct << " | " << t.newly_solved << " |";
    for (double sum : a.pass_robust) o << " " << (a.problems ? fixed(a.mean(sum), 3) : "-") << " |";
    for (double sum : a.fast) o << " " << (a.problems ? fixed(a.mean(sum), 3) : "-") << " |";
    double prev_pass = i ? s.turns[i - 1].overall.mean(s.turns[i - 1].overall.pass_robust[k1]) : 0.0;
    double prev_fast = i ? s.turns[i - 1].overall.mean(s.turns[i - 1].overall.fast[k1]) : 0.0;
    o << " " << signed_fixed(a.mean(a.pass_robust[k1]) - prev_pass) << " | "
      << signed_fixed(a.mean(a.fast[k1]) - prev_fast) << " | " << or_dash(a.geomean_speedup(), 2, "x") << " | "
      << t.input_tokens << " | " << t.output_tokens << " | " << cost_text(t) << " |\n";
  }
  if (st.ks.empty() || st.ks[0] != 1) o << "(+ columns are at k = " << (st.ks.empty() ? 1 : st.ks[0]) << ")\n";
  return o.str();
}

std::string turns_html(const Scores& s) {
  if (s.turns.empty()) return "";
  const auto& st = s.settings;
  std::string fast = fast_name(st);
  std::vector<html::Column> cols = {{"turn", "turn"}, {"asked", "asked"}, {"correct", "correct"}, {"new", "new"}};
  for (int k : st.ks) cols.push_back({"pass_at_" + std::to_string(k), "pass@" + std::to_string(k)});
  for (int k : st.ks) cols.push_back({fast + "_at_" + std::to_string(k), fast + "@" + std::to_string(k)});
  for (html::Column c : std::initializer_list<html::Column>{{"added_pass", "+pass@" + std::to_string(st.ks[0])},
                                                            {"added_fast", "+" + fast + "@" + std::to_string(st.ks[0])},
                                                            {"geomean_speedup", "geomean speedup"},
                                                            {"input_tokens", "input tokens"},
                                                            {"output_tokens", "output tokens"},
                                                            {"cost_usd", "cost $"}})
    cols.push_back(std::move(c));
  std::vector<std::vector<html::Cell>> rows;
  for (size_t i = 0; i < s.turns.size(); ++i) {
    const TurnScore& t = s.turns[i];
    const Aggregate& a = t.overall;
    std::vector<html::Cell> row = {html::number_cell(t.turn, 0), html::number_cell(t.asked, 0),
                                   html::number_cell(t.correct, 0), html::number_cell(t.newly_solved, 0)};
    for (double sum : a.pass_robust) row.push_back(html::number_cell(a.mean(sum), 3));
    for (double sum : a.fast) row.push_back(html::number_cell(a.mean(sum), 3));
    const Aggregate* prev = i ? &s.turns[i - 1].overall : nullptr;
    row.push_back(html::number_cell(a.mean(a.pass_robust[0]) - (prev ? prev->mean(prev->pass_robust[0]) : 0.0), 3));
    row.push_back(html::number_cell(a.mean(a.fast[0]) - (prev ? prev->mean(prev->fast[0]) : 0.0), 3));
    row.push_back(html::number_cell(a.geomean_speedup(), 2, "x"));
    row.push_back(html::number_cell(static_cast<double>(t.input_tokens), 0));
    row.push_back(html::number_cell(static_cast<double>(t.output_tokens), 0));
    row.push_back(html::number_cell(t.priced ? std::optional<double>(t.cost_usd) : std::nullopt, 4));
    rows.push_back(std::move(row));
  }
  return "<h2>Turns</h2>\n<p class=\"note\">After each turn a sample counts as solved if any turn so far is; "
         "+ columns: what the turn added.</p>\n" +
         html::sortable_table("turns", cols, rows);
}

}  // namespace pkb::scoring
