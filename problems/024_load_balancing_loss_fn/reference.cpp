#include "reference/reference.h"

namespace problem_024 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& logits = in[0];
  const int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k");
  // softmax and mean compute in fp32 and round once to the logits' dtype; top-k picks from the rounded p.
  at::Tensor probs = at::softmax(logits, -1);
  at::Tensor selected = std::get<1>(probs.topk(top_k, -1));                              // (M, K)
  at::Tensor tokens_per_expert = at::one_hot(selected, experts).to(at::kFloat).mean(0);  // (K, E) fp32
  at::Tensor prob_per_expert = probs.mean(0);                                            // (E,)
  at::Tensor loss = (tokens_per_expert * prob_per_expert.unsqueeze(0)).sum() * experts;  // fp32
  ctx.comm->all_reduce(loss, ReduceOp::sum);
  return {loss / ctx.world};
}

// In fp64 from every rank's logits: local = (E / M) * sum over tokens of the mean probability of each chosen expert.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k");
  double total = 0;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor p = at::softmax(in[r][0].to(at::kDouble), 1).contiguous();
    auto a = p.accessor<double, 2>();
    const int64_t tokens = p.size(0);
    std::vector<double> mean(experts, 0.0);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t e = 0; e < experts; ++e) mean[e] += a[t][e] / tokens;
    double local = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<int64_t> order(experts);
      for (int64_t e = 0; e < experts; ++e) order[e] = e;
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [&](int64_t x, int64_t y) { return a[t][x] > a[t][y]; });
      for (int64_t k = 0; k < top_k; ++k) local += mean[order[k]];
    }
    total += local * experts / tokens;
  }
  at::Tensor loss = at::scalar_tensor(total / ctx.world, at::kFloat);
  return std::vector<Tensors>(ctx.world, Tensors{loss});
}

// Uneven expert load: every row gets the same per-rank preference, 1.5 x the first row of the rank's own draw.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  at::Tensor draw = raw[0].to(at::kFloat);
  raw[0] = (draw + 1.5 * draw[0]).to(raw[0].scalar_type());
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("load_balancing_loss_fn", reference, oracle, prepare);

}  // namespace problem_024
