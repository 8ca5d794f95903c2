#include "reference/reference.h"

namespace problem_048 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &x = in[0], &w1 = in[1], &w2 = in[2], &w3 = in[3];
  Communicator& fsdp = ctx.group("fsdp");
  int64_t nf = fsdp.size();
  auto gather = [&](const at::Tensor& shard) {  // (n_fsdp, rows, cols), FSDP rank order
    at::Tensor all = at::empty({nf, shard.size(0), shard.size(1)}, shard.options());
    fsdp.all_gather(shard.contiguous(), all);
    return all;
  };
  at::Tensor w1_t = gather(w1).reshape({-1, w1.size(1)});  // rows stacked
  at::Tensor w2_t = gather(w2).reshape({-1, w2.size(1)});
  at::Tensor w3_t = gather(w3).permute({1, 0, 2}).reshape({w3.size(0), -1});  // columns stacked
  at::Tensor x1 = at::matmul(x, w1_t), x2 = at::matmul(x, w2_t);
  at::Tensor z = at::silu(x1) * x2;  // silu rounded, then the product rounded
  at::Tensor y = at::matmul(z, w3_t);
  ctx.group("tp").all_reduce(y, ReduceOp::sum);
  return {y};
}

// fp64: assemble the full W1, W2, W3 from every rank's block, then the dense FFN for each FSDP index's rows.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t n_tp = ctx.scalar("n_tp"), n_fsdp = ctx.scalar("n_fsdp");
  auto rank_of = [&](int64_t fsdp_rank, int64_t tp_rank) { return fsdp_rank * n_tp + tp_rank; };
  auto assemble = [&](int input, bool w3) {
    std::vector<at::Tensor> rows;
    for (int64_t i = 0; i < (w3 ? n_tp : n_fsdp); ++i) {
      std::vector<at::Tensor> cols;
      for (int64_t j = 0; j < (w3 ? n_fsdp : n_tp); ++j)
        cols.push_back(in[w3 ? rank_of(j, i) : rank_of(i, j)][input].to(at::kDouble));
      rows.push_back(at::cat(cols, 1));
    }
    return at::cat(rows, 0);
  };
  at::Tensor w1 = assemble(1, false), w2 = assemble(2, false), w3 = assemble(3, true);
  std::vector<Tensors> out(ctx.world);
  for (int64_t i = 0; i < n_fsdp; ++i) {
    at::Tensor x = in[rank_of(i, 0)][0].to(at::kDouble);
    at::Tensor a = at::mm(x, w1);
    at::Tensor y = at::mm(a * at::sigmoid(a) * at::mm(x, w2), w3);
    for (int64_t t = 0; t < n_tp; ++t) out[rank_of(i, t)] = {y};
  }
  return out;
}

PKB_REGISTER_PROBLEM("fsdp_and_tp", reference, oracle);

}  // namespace problem_048
