#include "reference/reference.h"

#include <cmath>

namespace problem_077 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// (spb, H, C) -> (W spb, H/W, C): this rank's head group over the range's tokens (source rank = token block).
at::Tensor to_heads(Communicator& comm, const at::Tensor& x) {
  const int W = comm.size();
  at::Tensor send = at::stack(x.chunk(W, 1)).contiguous();  // (W, spb, H/W, C)
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  return recv.flatten(0, 1);
}

// (W spb, H/W, C) -> (spb, H, C): every head group of this rank's own tokens.
at::Tensor to_tokens(Communicator& comm, const at::Tensor& x) {
  const int W = comm.size();
  at::Tensor send = x.reshape({W, -1, x.size(1), x.size(2)}).contiguous();
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  return at::cat(recv.unbind(0), 1);
}

// fp32 softmax attention, q (S, Hl, D) against k, v (T, Hl, D), in blocks of queries.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  at::Tensor qh = q.to(at::kFloat).transpose(0, 1), kh = k.to(at::kFloat).transpose(0, 1),
             vh = v.to(at::kFloat).transpose(0, 1);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  std::vector<at::Tensor> out;
  for (int64_t i = 0; i < qh.size(1); i += 4096) {
    at::Tensor s = at::matmul(qh.slice(1, i, i + 4096), kh.transpose(1, 2)) * scale;
    out.push_back(at::matmul(at::softmax(s, -1), vh));
  }
  return at::cat(out, 1).transpose(0, 1);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &query = in[0], &kv_all = in[1];
  const int64_t R = ctx.scalar("cp_shuffle_num"), chunk = ctx.scalar("clip_token_nums");
  const int64_t spb = query.size(0) / R, D = query.size(2), group = query.size(1) / kv_all.size(1);
  std::vector<at::Tensor> outs;
  for (int64_t rho = 0; rho < R; ++rho) {
    at::Tensor q = to_heads(*ctx.comm, query.slice(0, rho * spb, (rho + 1) * spb));
    at::Tensor kv = to_heads(*ctx.comm, kv_all.slice(0, rho * spb, (rho + 1) * spb)).slice(0, 0, chunk);
    at::Tensor k = kv.slice(2, 0, D).repeat_interleave(group, 1), v = kv.slice(2, D, 2 * D).repeat_interleave(group, 1);
    outs.push_back(to_tokens(*ctx.comm, attention(q, k, v).to(query.scalar_type())));
  }
  return {at::cat(outs, 0)};
}

// fp64, range by range and q head by q head: the range's global queries (the ranks' token blocks in rank order),
// keys and values = its first chunk tokens of kv head floor(h Hkv / Hq), a dense softmax; then each rank's tokens.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t R = ctx.scalar("cp_shuffle_num"), chunk = ctx.scalar("clip_token_nums");
  const int64_t spb = in[0][0].size(0) / R, Hq = in[0][0].size(1), D = in[0][0].size(2), Hkv = in[0][1].size(1);
  std::vector<std::vector<at::Tensor>> per_rank(W);
  for (int64_t rho = 0; rho < R; ++rho) {
    std::vector<at::Tensor> qs, kvs;
    for (int r = 0; r < W; ++r) {
      qs.push_back(in[r][0].slice(0, rho * spb, (rho + 1) * spb).to(at::kDouble));
      kvs.push_back(in[r][1].slice(0, rho * spb, (rho + 1) * spb).to(at::kDouble));
    }
    at::Tensor q = at::cat(qs, 0), kv = at::cat(kvs, 0).slice(0, 0, chunk);  // (W spb, Hq, D), (chunk, Hkv, 2D)
    at::Tensor out = at::empty_like(q);
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h * Hkv / Hq;
      at::Tensor k = kv.select(1, g).slice(1, 0, D), v = kv.select(1, g).slice(1, D, 2 * D);
      at::Tensor p = at::softmax(at::matmul(q.select(1, h), k.t()) / std::sqrt(static_cast<double>(D)), -1);
      out.select(1, h).copy_(at::matmul(p, v));
    }
    for (int r = 0; r < W; ++r) per_rank[r].push_back(out.slice(0, r * spb, (r + 1) * spb));
  }
  std::vector<Tensors> result;
  for (int r = 0; r < W; ++r) result.push_back({at::cat(per_rank[r], 0).to(in[0][0].scalar_type())});
  return result;
}

PKB_REGISTER_PROBLEM("magi1_cso_async_attention", reference, oracle);

}  // namespace problem_077
