// Problem 58: the foreign text blocks add only ~4.6e-5 per negative pair (2-4e-3 of the ~10 loss), which PKB's bf16
// scalar additions round away, so its check passes a kernel that never exchanges features. Ours (fp32 loss,
// rtol = 1e-3) passes an fp32-accumulating kernel and fails one that drops the foreign blocks, and PKB's
// bf16-accumulated value.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_058 {  // named, not anonymous: the references build as unity batches

struct LossCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/058_openclip_contrastive_loss");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  LossCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  bool passes(int r, double loss) const {
    return pkb::compare(pkb::Policy::robust, at::scalar_tensor(loss, at::kFloat), expected[r][0], spec.tolerance,
                        at::kFloat)
        .pass;
  }
  // fp32 logits (from the bf16 features) and fp32 sums; own block only when `foreign` is false.
  double fp32_loss(int r, bool foreign) const {
    at::Tensor image = in[r][0].to(at::kFloat);
    at::Tensor total = at::zeros({}, at::kFloat);
    for (int q = 0; q < run.world; ++q) {
      if (q != r && !foreign) continue;
      at::Tensor logits = 10 * at::mm(image, in[q][1].to(at::kFloat).t()) - 10;
      at::Tensor labels = -at::ones_like(logits);
      if (q == r) labels += 2 * at::eye(logits.size(0), at::kFloat);
      total += at::log_sigmoid(labels * logits).sum();
    }
    return -total.item<double>() / image.size(0);
  }
  // PKB's rounding: bf16 block sums and terms, bf16 additions of the foreign terms.
  double pkb_bf16_loss(int r) const {
    auto bf = [](double v) { return static_cast<double>(static_cast<float>(c10::BFloat16(static_cast<float>(v)))); };
    int64_t b = in[r][0].size(0);
    auto term = [&](int q) {
      at::Tensor logits = at::matmul(in[r][0] * 10.0, in[q][1].t()) - 10.0;
      at::Tensor labels = -at::ones_like(logits);
      if (q == r) labels = labels + (2 * at::eye(b, at::kFloat)).to(logits.scalar_type());
      return bf(-bf(at::log_sigmoid(labels * logits).sum(at::kFloat).item<double>()) / b);
    };
    double loss = term(r);
    for (int q = 0; q < run.world; ++q)
      if (q != r) loss = bf(loss + term(q));
    return loss;
  }
};

TEST(SiglipLossCheck, Fp32KernelPassesOwnBlockOnlyFails) {
  for (int world : {2, 4}) {
    LossCase c(world, 0);
    for (int r = 0; r < world; ++r) {
      EXPECT_TRUE(c.passes(r, c.fp32_loss(r, true))) << "W=" << world << " rank " << r;
      EXPECT_FALSE(c.passes(r, c.fp32_loss(r, false))) << "no exchange, W=" << world << " rank " << r;
    }
  }
}

TEST(SiglipLossCheck, PkbsBf16AccumulationFails) {
  LossCase c(4, 0);
  int failing = 0;
  for (int r = 0; r < 4; ++r) failing += !c.passes(r, c.pkb_bf16_loss(r));
  EXPECT_GT(failing, 0) << "PKB's bf16 value (10.0 or 10.0625) misses the foreign terms";
}

}  // namespace check_058
