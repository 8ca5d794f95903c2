// Problem 39 fixes PKB's attention-over-heads bug: every head attends over the whole sequence. These tests show
// that an accurate fp32 kernel passes, and that PKB's head-mixing semantics and local-only attention (no
// exchange, each rank attending over its own positions) fail. Checked through check_outputs, as pkb eval does.
#include <gtest/gtest.h>

#include <cmath>

#include "check_case.h"

namespace check_039 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "039_ulysses_attention_e2e";

enum class Attention { full_sequence, local_positions_only, pkb_over_heads };

// fp32 everywhere, one rounding at the end. q, k, v of rank r: (B, S, H, D).
std::vector<pkb::Tensors> kernel(const Case& c, Attention kind) {
  const int W = c.run.world;
  const int64_t H = 8, B = c.inputs[0][0].size(0), S = c.inputs[0][0].size(1), width = c.inputs[0][0].size(2),
                D = width / H, G = H / W;
  std::vector<at::Tensor> q, k, v;
  for (const auto& r : c.inputs) {
    at::Tensor qkv = r[0].to(at::kFloat).matmul(r[1].to(at::kFloat).t()).view({B, S, 3, H, D});
    q.push_back(qkv.select(2, 0));
    k.push_back(qkv.select(2, 1));
    v.push_back(qkv.select(2, 2));
  }
  auto attend = [&](const at::Tensor& qq, const at::Tensor& kk, const at::Tensor& vv) {  // (B, H, T, D)
    return at::softmax(qq.matmul(kk.transpose(-1, -2)) / std::sqrt(static_cast<double>(D)), -1).matmul(vv);
  };
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor o;  // (B, S, H, D)
    if (kind == Attention::full_sequence) {
      at::Tensor Q = at::cat(q, 1).transpose(1, 2), K = at::cat(k, 1).transpose(1, 2),
                 V = at::cat(v, 1).transpose(1, 2);
      o = attend(Q, K, V).transpose(1, 2).narrow(1, r * S, S);
    } else if (kind == Attention::local_positions_only) {
      o = attend(q[r].transpose(1, 2), k[r].transpose(1, 2), v[r].transpose(1, 2)).transpose(1, 2);
    } else {  // PKB: per token, each head attends over the heads of its group
      std::vector<at::Tensor> groups;
      for (int64_t g = 0; g < W; ++g)
        groups.push_back(attend(q[r].narrow(2, g * G, G), k[r].narrow(2, g * G, G), v[r].narrow(2, g * G, G)));
      o = at::cat(groups, 2);
    }
    out.push_back({o.reshape({B, S, width}).matmul(c.inputs[r][2].to(at::kFloat).t()).to(at::kBFloat16)});
  }
  return out;
}

TEST(Problem039, FullSequenceAttentionPassesHeadMixingAndLocalAttentionFail) {
  for (int world : {1, 2, 4, 8}) {
    Case c = make_case(kProblem, world);
    EXPECT_TRUE(passes(c, kernel(c, Attention::full_sequence))) << "W=" << world;
    EXPECT_FALSE(passes(c, kernel(c, Attention::pkb_over_heads))) << "PKB's attention over heads, W=" << world;
    if (world > 1) {
      EXPECT_FALSE(passes(c, kernel(c, Attention::local_positions_only))) << "no exchange, W=" << world;
    }
  }
}

}  // namespace check_039
