#include "reference/reference.h"

namespace problem_015 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor x_local = in[0].contiguous();
  const at::Tensor& w1 = in[1];
  const at::Tensor& w2 = in[2];
  int64_t rows = x_local.size(0), rows_local = rows / ctx.world;

  at::Tensor shards = at::empty({ctx.world, rows, x_local.size(1)}, x_local.options());
  ctx.comm->all_gather(x_local, shards);
  at::Tensor x = shards.permute({1, 0, 2}).reshape({rows, -1});  // column blocks side by side, rank order

  // PyTorch's bf16 semantics: the GEMM rounds once; SiLU runs in fp32 on that rounded value and rounds once.
  at::Tensor h = at::mm(x, w1);
  at::Tensor a = at::silu(h.to(at::kFloat)).to(h.scalar_type());
  at::Tensor block = at::mm(a.slice(0, ctx.rank * rows_local, (ctx.rank + 1) * rows_local), w2);

  // As PKB: reduce-scatter a buffer that holds this rank's block and zeros elsewhere (adding zeros is exact).
  at::Tensor buf = at::zeros({rows, block.size(1)}, block.options());
  buf.slice(0, ctx.rank * rows_local, (ctx.rank + 1) * rows_local).copy_(block);
  at::Tensor out = at::empty({rows_local, block.size(1)}, block.options());
  ctx.comm->reduce_scatter(buf, out, ReduceOp::sum);
  return {out};
}

// float64 throughout, no intermediate rounding; only rank r's rows of x are needed for rank r.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> column_blocks;
  for (const auto& rank_inputs : in) column_blocks.push_back(rank_inputs[0].to(at::kDouble));
  at::Tensor x = at::cat(column_blocks, 1);
  int64_t rows_local = x.size(0) / ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor z = at::matmul(x.slice(0, r * rows_local, (r + 1) * rows_local), in[r][1].to(at::kDouble));
    at::Tensor a = z / (1 + at::exp(-z));  // SiLU
    out.push_back({at::matmul(a, in[r][2].to(at::kDouble))});
  }
  return out;
}

PKB_REGISTER_PROBLEM("combined_sharded_gemms", reference, oracle);

}  // namespace problem_015
