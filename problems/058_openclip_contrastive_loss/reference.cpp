#include "reference/reference.h"

namespace problem_058 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kLogitScale = 10.0, kLogitBias = -10.0;  // PKB's values (plain multiplier and bias)

// fp32 sum of logsigmoid(label * logits) over one block; logits and each logsigmoid rounded to the dtype.
at::Tensor block_sum(const at::Tensor& image, const at::Tensor& text, bool own) {
  at::Tensor logits = at::matmul(image * kLogitScale, text.t()) + kLogitBias;
  at::Tensor labels = -at::ones_like(logits);
  if (own)
    labels = labels + (2 * at::eye(logits.size(0), logits.options().dtype(at::kFloat)))
                          .to(logits.scalar_type());  // no bf16 eye in 1.13
  return at::log_sigmoid(labels * logits).sum(at::kFloat);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &image = in[0], &text = in[1];
  at::Tensor texts = at::empty({ctx.world, text.size(0), text.size(1)}, text.options());
  ctx.comm->all_gather(text.contiguous(), texts);  // the blocks the neighbour exchange would deliver
  at::Tensor total = block_sum(image, text, true);
  for (int q = 0; q < ctx.world; ++q)
    if (q != ctx.rank) total = total + block_sum(image, texts[q], false);
  return {-total / static_cast<double>(image.size(0))};
}

// fp64: one (B_l, W B_l) logit matrix against every text row, log(sigmoid) of the signed logits, positives where the
// text row is the rank's own row i.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> texts;
  for (const auto& r : in) texts.push_back(r[1].to(at::kDouble));
  at::Tensor all_text = at::cat(texts);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor image = in[r][0].to(at::kDouble);
    int64_t b = image.size(0);
    at::Tensor logits = kLogitScale * at::mm(image, all_text.t()) + kLogitBias;  // (B_l, W B_l)
    at::Tensor sign = -at::ones_like(logits);
    sign.slice(1, r * b, (r + 1) * b).diagonal().fill_(1.0);
    out.push_back({-at::log(at::sigmoid(sign * logits)).sum() / static_cast<double>(b)});
  }
  return out;
}

// Rows L2-normalised in the dtype, as PKB draws them: x / ||x|| (norm in fp32, rounded), one rounding for the quotient.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  for (int i : {0, 1}) {
    at::Tensor norm = raw[i].to(at::kFloat).norm(2, {1}, /*keepdim=*/true).to(raw[i].scalar_type());
    raw[i] = raw[i] / norm;
  }
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("openclip_contrastive_loss", reference, oracle, prepare);

}  // namespace problem_058
