// Problem 49: the prepared inputs keep every token's top-2 boundary clear of ties, so the check does not depend on
// PyTorch's topk tie-break: a kernel with double-rounded logits and ties broken toward the higher expert index passes,
// and wrong kernels (renormalised weights, the wrong owner rank, the third expert instead of the second) fail.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_049 {  // named, not anonymous: the references build as unity batches

enum class Flaw { none, renormalised, wrong_owner, third_expert };

struct MoeCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/049_moe_ep_balanced");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  MoeCase(int world, int trial, bool small) {
    run = pkb::resolve_run(spec, world, pkb::DType::bf16,
                           small ? spec.test_parameters : std::map<std::string, int64_t>{});
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }

  at::Tensor mlp32(int q, const at::Tensor& x) const {
    auto f = [&](int i) { return in[q][i].to(at::kFloat); };
    at::Tensor g = at::addmm(f(4), x, f(3).t());
    return at::addmm(f(8), at::silu(g) * at::addmm(f(6), x, f(5).t()), f(7).t());
  }

  // Rank r's output from an fp32 kernel whose router rounds the product and the bias add separately.
  at::Tensor kernel(int r, Flaw flaw) const {
    int world = run.world;
    at::Tensor x = in[r][0].to(at::kFloat);
    at::Tensor logits = (at::mm(in[r][0], in[r][1].t()) + in[r][2]).to(at::kFloat);  // two bf16 roundings
    at::Tensor p = at::softmax(logits, -1).to(at::kBFloat16).to(at::kFloat).contiguous();
    at::Tensor out = at::zeros_like(x);
    std::vector<at::Tensor> y;
    for (int q = 0; q < world; ++q) y.push_back(mlp32(q, x));
    for (int64_t t = 0; t < x.size(0); ++t) {
      std::vector<std::pair<float, int>> ranked;
      for (int e = 0; e < world; ++e) ranked.push_back({p[t][e].item<float>(), e});
      std::sort(ranked.begin(), ranked.end(), std::greater<>());  // equal p: the higher expert index first
      int second = flaw == Flaw::third_expert ? 2 : 1;
      float w0 = ranked[0].first, w1 = ranked[second].first, norm = flaw == Flaw::renormalised ? w0 + w1 : 1.0f;
      auto owner = [&](int e) { return flaw == Flaw::wrong_owner ? (e + 1) % world : e; };
      out[t] = (w0 / norm) * y[owner(ranked[0].second)][t] + (w1 / norm) * y[owner(ranked[second].second)][t];
    }
    return out.to(at::kBFloat16);
  }

  bool passes(Flaw flaw) const {
    for (int r = 0; r < run.world; ++r)
      if (!pkb::compare(pkb::Policy::robust, kernel(r, flaw), expected[r][0], spec.tolerance, at::kBFloat16).pass)
        return false;
    return true;
  }
};

TEST(MoeBalancedCheck, OtherRoundingAndTieBreakPassWrongRoutingFails) {
  for (int world : {3, 4}) {
    MoeCase c(world, 0, /*small=*/true);
    EXPECT_TRUE(c.passes(Flaw::none)) << "W=" << world;
    EXPECT_FALSE(c.passes(Flaw::renormalised)) << "W=" << world;
    EXPECT_FALSE(c.passes(Flaw::wrong_owner)) << "W=" << world;
    EXPECT_FALSE(c.passes(Flaw::third_expert)) << "W=" << world;
  }
}

TEST(MoeBalancedCheck, PreparedTokensKeepATopKMargin) {
  MoeCase c(4, 1, /*small=*/true);
  for (int r = 0; r < 4; ++r) {
    at::Tensor l = at::addmm(c.in[r][2].to(at::kDouble), c.in[r][0].to(at::kDouble), c.in[r][1].to(at::kDouble).t());
    at::Tensor sorted = std::get<0>(l.sort(-1, /*descending=*/true));
    at::Tensor gap = sorted.select(1, 1) - sorted.select(1, 2);
    at::Tensor bound = at::clamp_min(at::max(sorted.select(1, 1).abs(), sorted.select(1, 2).abs()) / 32, 0.25);
    EXPECT_TRUE((gap >= bound).all().item<bool>()) << "rank " << r;
  }
}

}  // namespace check_049
