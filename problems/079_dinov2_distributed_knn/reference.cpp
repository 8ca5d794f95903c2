#include "reference/reference.h"

#include <cmath>

namespace problem_079 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// DINOv2's loop: for each owner, its queries are broadcast, every rank takes its local top-K (fp32 similarities and
// labels), the candidates are gathered to the owner, which keeps the top-K of the W K.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &queries = in[0], &train = in[1], &labels = in[2];
  const int64_t k = ctx.scalar("max_k");
  at::Tensor train32 = train.to(at::kFloat), shard_labels = labels[0];
  at::Tensor sims_out, labels_out;
  for (int owner = 0; owner < ctx.world; ++owner) {
    at::Tensor q = owner == ctx.rank ? queries.clone() : at::empty_like(queries);
    ctx.comm->broadcast(q, owner);
    auto [values, index] = at::mm(q.to(at::kFloat), train32).topk(k, 1);  // (Q, K) descending
    at::Tensor local_labels = shard_labels.index_select(0, index.reshape(-1)).view_as(index);
    at::Tensor all_values = at::empty({ctx.world, values.size(0), k}, values.options());
    at::Tensor all_labels = at::empty({ctx.world, values.size(0), k}, local_labels.options());
    ctx.comm->gather(values.contiguous(), all_values, owner);
    ctx.comm->gather(local_labels.contiguous(), all_labels, owner);
    if (owner != ctx.rank) continue;
    at::Tensor candidates = all_values.permute({1, 0, 2}).reshape({values.size(0), -1});  // rank order
    at::Tensor candidate_labels = all_labels.permute({1, 0, 2}).reshape({values.size(0), -1});
    auto [best, pick] = candidates.topk(k, 1);
    sims_out = best;
    labels_out = candidate_labels.gather(1, pick);
  }
  return {sims_out, labels_out};
}

// fp64: every query of rank r against all W L train items at once, a full descending sort, the first K.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> train, labels;
  for (const auto& r : in) {
    train.push_back(r[1].to(at::kDouble));
    labels.push_back(r[2][0]);
  }
  at::Tensor all_train = at::cat(train, 1), all_labels = at::cat(labels);
  const int64_t k = ctx.scalar("max_k");
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor sims = at::mm(in[r][0].to(at::kDouble), all_train);
    auto [sorted, order] = at::sort(sims, 1, /*descending=*/true);
    at::Tensor top = order.slice(1, 0, k);
    out.push_back({sorted.slice(1, 0, k).to(at::kFloat), all_labels.index_select(0, top.reshape(-1)).view_as(top)});
  }
  return out;
}

// Quantised features whose dot products are exact in fp32 and distinct: queries [2^-22, 2^-15, u / 16 ...], train
// items [g % 128, g / 128, v / 16 ...] with u, v = clamp(round(draw), -1, 1) and g the item's global index, so
// q . t = (sum u v) / 256 + g * 2^-22. Labels g mod C, as PKB.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const auto dtype = raw[0].scalar_type();
  auto ternary = [](const at::Tensor& x) { return x.to(at::kFloat).round().clamp(-1, 1) / 16.0; };
  at::Tensor q = ternary(raw[0]);
  q.select(1, 0).fill_(std::ldexp(1.0, -22));
  q.select(1, 1).fill_(std::ldexp(1.0, -15));
  const int64_t items = raw[1].size(1);
  at::Tensor g = at::arange(items, at::kLong) + rank * items;
  at::Tensor t = ternary(raw[1]);
  t.select(0, 0).copy_(g.remainder(128));
  t.select(0, 1).copy_(at::div(g, 128, c10::string_view("floor")));
  raw[0] = q.to(dtype);
  raw[1] = t.to(dtype);
  raw[2] = g.remainder(ctx.param("C")).unsqueeze(0);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("dinov2_distributed_knn", reference, oracle, prepare);

}  // namespace problem_079
