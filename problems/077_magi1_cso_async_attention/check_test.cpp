// Problem 77: with atol 1e-4 and a slack of 2 bf16 eps x rms, fp32 attention and FlashAttention-style bf16
// probabilities pass, while attention over the rank's own tokens only, the wrong GQA head mapping and the wrong
// range's keys fail. W = 3 at the test shapes: a 2-token surplus on the last rank, GQA groups of 8.
#include <gtest/gtest.h>

#include <cmath>

#include "check_case.h"

namespace check_077 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "077_magi1_cso_async_attention";

enum class Kernel { fp32, bf16_probs, local_only, modulo_heads, next_range };

std::vector<pkb::Tensors> kernel(const Case& c, Kernel k) {
  const int W = c.run.world;
  const int64_t R = 4, spb = c.inputs[0][0].size(0) / R, Hq = c.inputs[0][0].size(1), D = c.inputs[0][0].size(2);
  const int64_t Hkv = c.inputs[0][1].size(1), chunk = c.spec.test_parameters.at("CHS");  // W <= 4
  std::vector<std::vector<at::Tensor>> outs(W);
  for (int64_t rho = 0; rho < R; ++rho) {
    auto tokens = [&](int i, int64_t range) {
      std::vector<at::Tensor> parts;
      for (int r = 0; r < W; ++r)
        parts.push_back(c.inputs[r][i].slice(0, range * spb, (range + 1) * spb).to(at::kFloat));
      return at::cat(parts, 0);
    };
    at::Tensor q = tokens(0, rho), kv = tokens(1, k == Kernel::next_range ? (rho + 1) % R : rho).slice(0, 0, chunk);
    at::Tensor out = at::empty_like(q);
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = k == Kernel::modulo_heads ? h % Hkv : h * Hkv / Hq;
      at::Tensor keys = kv.select(1, g).slice(1, 0, D), values = kv.select(1, g).slice(1, D, 2 * D);
      at::Tensor s = at::matmul(q.select(1, h), keys.t()) / std::sqrt(static_cast<double>(D));
      if (k == Kernel::local_only) {  // each query block attends only to the keys of its own rank's block
        at::Tensor mask = at::ones_like(s, at::kBool);
        for (int r = 0; r < W; ++r)
          mask.slice(0, r * spb, (r + 1) * spb).slice(1, r * spb, std::min((r + 1) * spb, chunk)).fill_(false);
        s = s.masked_fill(mask, -INFINITY);
      }
      at::Tensor p = at::softmax(s, -1);
      if (k == Kernel::bf16_probs) p = p.to(at::kBFloat16).to(at::kFloat);
      out.select(1, h).copy_(at::matmul(p, values));
    }
    for (int r = 0; r < W; ++r) outs[r].push_back(out.slice(0, r * spb, (r + 1) * spb));
  }
  std::vector<pkb::Tensors> got;
  for (int r = 0; r < W; ++r) got.push_back({at::cat(outs[r], 0).to(at::kBFloat16)});
  return got;
}

TEST(Problem077, HonestAttentionPassesMistakesFail) {
  Case c = make_case(kProblem, 3, {.small = true});
  EXPECT_TRUE(passes(c, kernel(c, Kernel::fp32)));
  EXPECT_TRUE(passes(c, kernel(c, Kernel::bf16_probs))) << "FlashAttention rounds P to bf16 before PV";
  EXPECT_FALSE(passes(c, kernel(c, Kernel::local_only))) << "no Ulysses exchange";
  EXPECT_FALSE(passes(c, kernel(c, Kernel::modulo_heads))) << "q head h on kv head h % Hkv";
  EXPECT_FALSE(passes(c, kernel(c, Kernel::next_range))) << "another range's keys";
}

}  // namespace check_077
