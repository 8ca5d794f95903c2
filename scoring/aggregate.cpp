#include "scoring/aggregate.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "scoring/estimators.h"

namespace pkb::scoring {
namespace {

std::optional<double> exp_of(const Mean& logs) {
  auto m = logs.value();
  return m ? std::optional<double>(std::exp(*m)) : std::nullopt;
}

// pass@k at each requested k, clipped to n; 0 for a problem without samples.
std::vector<AtK> estimates(int n, int c, const std::vector<int>& ks) {
  std::vector<AtK> out;
  for (int k : ks) {
    int used = std::min(k, n);
    out.push_back({k, used, used ? pass_at_k(n, c, used) : 0.0});
  }
  return out;
}

void add_correct_sample(ProblemScore& ps, const Sample& s) {
  // A speedup of 0 or less is a broken timing, not a slow kernel: it cannot enter a geometric mean.
  if (s.speedup && *s.speedup > 0) {
    ps.log_speedup.add(std::log(*s.speedup));
    ps.best_speedup = std::max(ps.best_speedup.value_or(0.0), *s.speedup);
  }
  if (s.sol_candidate) ps.sol_candidate.add(*s.sol_candidate);
  if (s.sol_baseline) ps.sol_baseline.add(*s.sol_baseline);
}

ProblemScore score_problem(const ProblemSamples& p, const ScoreSettings& st) {
  ProblemScore ps;
  ps.id = p.id, ps.slug = p.slug, ps.folder = p.folder, ps.category = p.category;
  ps.n = static_cast<int>(p.samples.size());
  ps.not_evaluated = static_cast<int>(p.not_evaluated.size());
  for (const Sample& s : p.not_evaluated) ps.harness_errors += s.status == "harness_error";
  ps.missing = p.missing;
  for (const Sample& s : p.samples) {
    ps.generation_failed += s.status == "generation_failed";
    if (!s.robust_pass) ++ps.failures[s.failure.empty() ? "unknown" : s.failure];
    ps.c_robust += s.correct(Policy::robust);
    ps.c_pkb += s.correct(Policy::paper_allclose);
    if (s.correct(Policy::robust)) add_correct_sample(ps, s);
    ps.contended += s.correct(Policy::robust) && s.record.contended;
    ps.host_drift += s.correct(Policy::robust) && s.record.host_drift;
    ps.below_roofline += s.record.below_roofline;
    ps.shared_gpu += s.record.contended || s.record.fields.contains("gpu_sharing");
  }
  ps.c_fast = count_fast(p.samples, st.headline_p);
  ps.pass_robust = estimates(ps.n, ps.c_robust, st.ks);
  ps.pass_pkb = estimates(ps.n, ps.c_pkb, st.ks);
  ps.fast = estimates(ps.n, ps.c_fast, st.ks);
  return ps;
}

void add_values(std::vector<double>& sums, const std::vector<AtK>& xs) {
  sums.resize(xs.size(), 0.0);
  for (size_t i = 0; i < xs.size(); ++i) sums[i] += xs[i].value;
}

void add_problem(Aggregate& a, const ProblemScore& ps) {
  a.not_evaluated += ps.not_evaluated;
  a.harness_errors += ps.harness_errors;
  if (!ps.fully_evaluated()) {
    ++a.not_fully_evaluated;
    return;
  }
  ++a.problems;
  a.missing += ps.missing;
  for (const auto& [kind, count] : ps.failures) a.failures[kind] += count;
  a.generation_failed += ps.generation_failed;
  a.contended += ps.contended;
  a.host_drift += ps.host_drift;
  a.below_roofline += ps.below_roofline;
  a.shared_gpu += ps.shared_gpu;
  a.without_samples += ps.n == 0;
  a.samples += ps.n;
  a.correct += ps.c_robust;
  add_values(a.pass_robust, ps.pass_robust);
  add_values(a.pass_pkb, ps.pass_pkb);
  add_values(a.fast, ps.fast);
  a.log_speedup.merge(ps.log_speedup);
  a.sol_candidate.merge(ps.sol_candidate);
  a.sol_baseline.merge(ps.sol_baseline);
}

// Over the same problems as the aggregates: those without a skipped evaluation.
std::vector<CurvePoint> curve(const LoadedResults& loaded, const ScoreSettings& st) {
  std::vector<const ProblemSamples*> scored;
  for (const auto& prob : loaded.problems)
    if (prob.not_evaluated.empty()) scored.push_back(&prob);
  std::vector<CurvePoint> out;
  for (double p : st.thresholds)
    for (int k : st.ks) {
      double sum = 0;
      for (const ProblemSamples* prob : scored) {
        int n = static_cast<int>(prob->samples.size());
        if (n) sum += fast_p_at_k(prob->samples, p, std::min(k, n));
      }
      out.push_back({p, k, scored.empty() ? 0.0 : sum / scored.size()});
    }
  return out;
}

// Sized per k up front so that an empty set (or one whose problems were all left out) still reports a 0 per k.
Aggregate empty_aggregate(size_t ks) {
  Aggregate a;
  a.pass_robust = a.pass_pkb = a.fast = std::vector<double>(ks, 0.0);
  return a;
}

// The loaded results with every sample's speedup taken from the method settings name (a record without that
// method's speedup, from before both were recorded, then has none). Every turn too: at_turn() collapses from them.
LoadedResults with_timing_method(const LoadedResults& loaded, const std::string& method) {
  LoadedResults r = loaded;
  for (auto& p : r.problems)
    for (auto* list : {&p.samples, &p.turns})
      for (auto& s : *list) {
        if (s.record.contended || s.record.below_roofline) continue;  // no speedup by any method
        const std::string& recorded = s.record.timing_method.empty() ? "pkb" : s.record.timing_method;
        if (method == recorded) continue;
        s.speedup = s.record.speedup_by(timing_method_from_name(method).value_or(TimingMethod::barrier));
      }
  r.settings["timing_method"] = nlohmann::json::array({method});
  return r;
}

// The scores of one view (every sample as one record).
Scores score_view(const LoadedResults& loaded, const ScoreSettings& settings) {
  Scores s;
  s.settings = settings;
  s.overall = empty_aggregate(settings.ks.size());
  for (const auto& p : loaded.problems) {
    s.problems.push_back(score_problem(p, settings));
    const ProblemScore& ps = s.problems.back();
    if (!ps.fully_evaluated())
      s.not_fully_evaluated.push_back(ps.folder);
    else if (ps.n == 0)
      s.without_samples.push_back(ps.folder);
    if (ps.missing) s.missing.push_back(ps.folder);
    add_problem(s.overall, ps);
    std::string category = ps.category.empty() ? "unknown" : ps.category;
    add_problem(s.by_category.try_emplace(category, empty_aggregate(settings.ks.size())).first->second, ps);
  }
  for (const auto& p : loaded.problems)
    for (const Sample& x : p.samples)
      if (x.robust_pass && x.speedup && std::isfinite(*x.speedup))
        s.largest_speedup = std::max(s.largest_speedup.value_or(0.0), *x.speedup);
  if (settings.extend_thresholds) s.settings.thresholds = threshold_grid(settings.thresholds, s.largest_speedup);
  s.curve = curve(loaded, s.settings);
  return s;
}

std::vector<TurnScore> turn_scores(const LoadedResults& loaded, const ScoreSettings& settings) {
  std::vector<TurnScore> out;
  int last = max_turn(loaded);
  if (last <= 1) return out;
  for (int t = 1; t <= last; ++t) {
    TurnScore ts;
    ts.turn = t;
    ts.overall = score_view(at_turn(loaded, t), settings).overall;
    for (const auto& p : loaded.problems) {
      std::map<std::string, int> first_correct;  // sample key -> first robust-correct turn
      for (const Sample& x : p.turns)
        if (x.robust_pass && (!first_correct.count(x.key) || x.turn < first_correct[x.key]))
          first_correct[x.key] = x.turn;
      for (const auto& [key, turn] : first_correct) ts.newly_solved += turn == t;
      for (const Sample& x : p.turns) {
        if (x.turn != t) continue;
        ++ts.asked;
        ts.correct += x.robust_pass;
        ts.input_tokens += x.input_tokens.value_or(0);
        ts.output_tokens += x.output_tokens.value_or(0);
        if (x.cost_usd) ts.cost_usd += *x.cost_usd, ++ts.priced;
      }
    }
    out.push_back(std::move(ts));
  }
  return out;
}

// `loaded` as if every agent sample had been stopped after `steps` tool calls: one that used more is a failed sample.
LoadedResults within_steps(LoadedResults loaded, int steps) {
  for (auto& p : loaded.problems)
    for (auto* list : {&p.samples, &p.turns})
      for (Sample& x : *list)
        if (x.agent_steps && *x.agent_steps > steps) {
          x.robust_pass = x.pkb_pass = false;
          x.status = "budget_exhausted";
          x.failure = "budget";
        }
  return loaded;
}

std::vector<StepScore> step_scores(const LoadedResults& loaded, const ScoreSettings& settings, AgentTotals& totals) {
  int most = 0;
  for (const auto& p : loaded.problems)
    for (const Sample& x : p.samples) {
      if (!x.agent_steps) continue;
      most = std::max(most, *x.agent_steps);
      ++totals.samples;
      totals.steps += *x.agent_steps;
      totals.input_tokens += x.input_tokens.value_or(0);
      totals.output_tokens += x.output_tokens.value_or(0);
      if (x.cost_usd) totals.cost_usd += *x.cost_usd, ++totals.priced;
    }
  std::vector<StepScore> out;
  if (totals.samples == 0) return out;
  for (int s : step_grid(most)) {
    StepScore st;
    st.steps = s;
    st.overall = score_view(within_steps(loaded, s), settings).overall;
    st.solved = st.overall.correct;
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace

std::vector<int> step_grid(int most) {
  std::vector<int> grid;
  for (int s = 1; s <= std::min(most, 8); ++s) grid.push_back(s);
  for (int s = 12; s < most; s = s % 3 == 0 ? s * 4 / 3 : s * 3 / 2) grid.push_back(s);
  if (most > 8) grid.push_back(most);
  if (grid.empty()) grid.push_back(std::max(most, 0));  // every sample answered without a tool call
  return grid;
}

std::vector<double> threshold_grid(std::vector<double> base, std::optional<double> largest) {
  std::sort(base.begin(), base.end());
  base.erase(std::unique(base.begin(), base.end()), base.end());
  if (base.empty() || !largest || base.back() <= 0) return base;
  constexpr double kFarthest = 1 << 20;  // a bogus speedup must not make the grid endless
  double p = base.back();
  while (p < *largest && p < kFarthest) {
    // Powers of two step by 1.5 (4 -> 6), the rest to the next power of two (6 -> 8); other values join that ladder.
    double power = std::exp2(std::ceil(std::log2(p)));
    p = p == power ? 1.5 * p : power;
    base.push_back(p);
  }
  return base;
}

std::optional<double> ProblemScore::geomean_speedup() const { return exp_of(log_speedup); }
std::optional<double> Aggregate::geomean_speedup() const { return exp_of(log_speedup); }

Scores score(const LoadedResults& input, const ScoreSettings& settings) {
  if (!settings.timing_method.empty() && !timing_method_from_name(settings.timing_method)) {
    std::string names;
    for (const std::string& n : timing_method_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("--timing-method must be one of " + names + ", got '" + settings.timing_method + "'");
  }
  for (int k : settings.ks)
    if (k < 1) throw Error("k must be at least 1 (got " + std::to_string(k) + ")");
  LoadedResults rescored =
      settings.timing_method.empty() ? LoadedResults{} : with_timing_method(input, settings.timing_method);
  const LoadedResults& loaded = settings.timing_method.empty() ? input : rescored;
  Scores s = score_view(loaded, settings);
  s.turns = turn_scores(loaded, settings);
  s.steps = step_scores(loaded, settings, s.agent);
  return s;
}

}  // namespace pkb::scoring
