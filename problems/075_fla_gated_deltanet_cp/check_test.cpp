// Problem 75: the outputs are small (rms ~ 0.0025, below PKB's atol of 1e-2), so the check uses atol 1e-4: a kernel that
// never communicates and runs each rank's positions from a zero state fails; an fp32 recurrence over the whole
// sequence, rounded once, passes. At the default shapes, W = 2.
#include <gtest/gtest.h>

#include <cmath>

#include "check/expected.h"
#include "check/outputs.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace {

struct Case {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/075_fla_gated_deltanet_cp");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;
  explicit Case(int world) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, 0, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  bool passes(const std::vector<pkb::Tensors>& got, pkb::Policy policy = pkb::Policy::robust) const {
    for (const auto& c : pkb::check_outputs(spec, run, policy, got, expected, true))
      if (!c.result.pass) return false;
    return true;
  }
};

// fp32 gated delta rule over (T, H, .) tensors, all heads at once.
at::Tensor gdn(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor a_log, at::Tensor dt) {
  q = q.to(at::kFloat), k = k.to(at::kFloat), v = v.to(at::kFloat);
  q = q / q.norm(2, {-1}, true).clamp_min(1e-6) / std::sqrt(static_cast<double>(q.size(-1)));
  k = k / k.norm(2, {-1}, true).clamp_min(1e-6);
  at::Tensor decay = at::exp(-a_log.to(at::kFloat).exp() * at::softplus(gate.to(at::kFloat) + dt.to(at::kFloat)));
  at::Tensor b = beta.to(at::kFloat), S = at::zeros({q.size(1), q.size(2), v.size(2)});
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < q.size(0); ++t) {
    S = S * decay[t].view({-1, 1, 1});
    at::Tensor u = (v[t] - at::bmm(k[t].unsqueeze(1), S).squeeze(1)) * b[t].unsqueeze(-1);
    S = S + k[t].unsqueeze(-1) * u.unsqueeze(1);
    out.push_back(at::bmm(q[t].unsqueeze(1), S).squeeze(1));
  }
  return at::stack(out);
}

// Every rank's output from the whole sequence (honest) or from its own positions only (no communication).
std::vector<pkb::Tensors> kernel(const Case& c, bool whole_sequence) {
  const int W = c.run.world;
  std::vector<at::Tensor> a, d;
  for (const auto& r : c.in) a.push_back(r[5]), d.push_back(r[6]);
  at::Tensor a_log = at::cat(a), dt = at::cat(d);
  auto seq = [&](int i, int r) {
    if (!whole_sequence) return c.in[r][i][0];
    std::vector<at::Tensor> parts;
    for (const auto& x : c.in) parts.push_back(x[i][0]);
    return at::cat(parts, 0);
  };
  std::vector<pkb::Tensors> got;
  const int64_t L = c.in[0][0].size(1);
  for (int r = 0; r < W; ++r) {
    at::Tensor o = gdn(seq(0, r), seq(1, r), seq(2, r), seq(3, r), seq(4, r), a_log, dt);
    if (whole_sequence) o = o.slice(0, r * L, (r + 1) * L);
    got.push_back({o.unsqueeze(0).to(at::kBFloat16)});
  }
  return got;
}

TEST(Problem075, SmallOutputsNeedASmallAtol) {
  Case c(2);
  EXPECT_TRUE(c.passes(kernel(c, true), pkb::Policy::robust));
  EXPECT_FALSE(c.passes(kernel(c, false), pkb::Policy::robust)) << "no communication";
}

}  // namespace
