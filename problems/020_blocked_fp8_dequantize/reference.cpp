#include "reference/reference.h"

namespace problem_020 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &y = in[0], &s = in[1];
  int64_t block = ctx.scalar("block_size");
  // (W, blocks, block) * (W, blocks, 1) in fp32: exact for bf16 inputs.
  at::Tensor x = (y.to(at::kFloat).reshape({y.size(0), -1, block}) * s.to(at::kFloat).unsqueeze(-1)).reshape(y.sizes());
  at::Tensor out = at::empty_like(x);
  ctx.comm->all_to_all(x.contiguous(), out);
  return {out};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t block = ctx.scalar("block_size");
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    std::vector<at::Tensor> slices;
    for (int q = 0; q < ctx.world; ++q) {
      // Rank q's slice r: one scale per block_size consecutive elements of the row-major (M, N) slice.
      at::Tensor y = in[q][0][r].to(at::kDouble);
      at::Tensor scale = in[q][1][r].to(at::kDouble).repeat_interleave(block).reshape(y.sizes());
      slices.push_back(y * scale);
    }
    out.push_back({at::stack(slices)});
  }
  return out;
}

PKB_REGISTER_PROBLEM("blocked_fp8_dequantize", reference, oracle);

}  // namespace problem_020
