#include "reference/reference.h"

#include "core/error.h"

namespace problem_035 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Shapes first (an all-gather of one int64 per rank: the row counts), then the rows themselves through an
// uneven all-to-all that sends this rank's whole x to every rank.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  if (ctx.scalar("gather_dim") != 0) throw pkb::Error("ulysses_all_gather_variable: gather_dim must be 0");
  const at::Tensor& x = in[0];
  at::Tensor mine = at::full({1}, x.size(0), x.options().dtype(at::kLong)),
             all = at::empty({ctx.world}, mine.options());
  ctx.comm->all_gather(mine, all);
  at::Tensor host = all.to(at::kCPU);
  std::vector<int64_t> recv(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + ctx.world);
  std::vector<int64_t> send(ctx.world, x.size(0));
  int64_t total = 0;
  for (int64_t rows : recv) total += rows;
  at::Tensor out = at::empty({total, x.size(1)}, x.options());
  ctx.comm->all_to_all(x.repeat({ctx.world, 1}).contiguous(), out, send, recv);
  return {out};
}

// Row by row, with rank q's offset counted from the ranks before it.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t total = 0;
  for (const auto& r : in) total += r[0].size(0);
  at::Tensor out = at::empty({total, in[0][0].size(1)}, in[0][0].options());
  int64_t row = 0;
  for (const auto& r : in)
    for (int64_t i = 0; i < r[0].size(0); ++i) out[row++].copy_(r[0][i]);
  return std::vector<Tensors>(ctx.world, Tensors{out});
}

PKB_REGISTER_PROBLEM("ulysses_all_gather_variable_primitive", reference, oracle);

}  // namespace problem_035
