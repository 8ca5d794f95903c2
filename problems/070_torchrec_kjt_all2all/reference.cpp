#include "reference/reference.h"

namespace problem_070 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr int64_t kCapacity = 20;  // value entries per (feature, sample) in the fixed-size buffers

std::vector<int64_t> key_splits(int W) {
  std::vector<int64_t> k(W);
  for (int d = 0; d < W; ++d) k[d] = 1 + d % 3;
  return k;
}

// Metadata all-to-all, then lengths and values with uneven all-to-alls, then the [s][f][b] -> [f][s][b] recat.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world, r = ctx.rank;
  const int64_t B = ctx.scalar("batch_size");
  const at::Tensor& lengths = in[0];
  std::vector<int64_t> keys = key_splits(W), send_len(W), send_val(W);
  at::Tensor meta = at::empty({W, 3}, at::kLong);
  for (int64_t d = 0, o = 0; d < W; o += keys[d], ++d) {
    send_len[d] = keys[d] * B;
    send_val[d] = lengths.slice(0, o * B, (o + keys[d]) * B).sum().item<int64_t>();
    meta[d][0] = send_len[d], meta[d][1] = send_val[d], meta[d][2] = B;
  }
  meta = meta.to(lengths.device());
  at::Tensor meta_recv = at::empty_like(meta);
  ctx.comm->all_to_all(meta, meta_recv);
  meta_recv = meta_recv.to(at::kCPU);
  std::vector<int64_t> recv_len(W), recv_val(W);
  for (int s = 0; s < W; ++s)
    recv_len[s] = meta_recv[s][0].item<int64_t>(), recv_val[s] = meta_recv[s][1].item<int64_t>();

  const int64_t total = lengths.sum().item<int64_t>();
  at::Tensor len_recv = at::empty({W * keys[r] * B}, lengths.options());
  ctx.comm->all_to_all(lengths, len_recv, send_len, recv_len);
  int64_t nrecv = 0;
  for (int64_t v : recv_val) nrecv += v;
  at::Tensor val_recv = at::empty({nrecv}, lengths.options());
  ctx.comm->all_to_all(in[1].slice(0, 0, total).contiguous(), val_recv, send_val, recv_val);

  const int64_t k = keys[r];
  at::Tensor blocks = len_recv.view({W, k, B});
  at::Tensor block_sizes = blocks.sum(2).reshape(-1).to(at::kCPU);
  std::vector<at::Tensor> segments =
      val_recv.split_with_sizes(c10::IntArrayRef(block_sizes.data_ptr<int64_t>(), block_sizes.numel()));
  std::vector<at::Tensor> recat;
  for (int64_t f = 0; f < k; ++f)
    for (int s = 0; s < W; ++s) recat.push_back(segments[s * k + f]);
  at::Tensor values_out = at::zeros({k * W * B * kCapacity}, lengths.options());
  values_out.slice(0, 0, nrecv).copy_(at::cat(recat));
  const auto opts = lengths.options();
  return {blocks.transpose(0, 1).reshape(-1), values_out, at::scalar_tensor(nrecv, opts),
          at::scalar_tensor(W * B, opts), at::full({W}, B, opts)};
}

// Element by element from every rank's inputs: for each of rank r's features f, each source s and sample b, the
// length and the value segment (located by a running offset over the source's (feature, sample) order).
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t B = ctx.scalar("batch_size");
  std::vector<int64_t> keys = key_splits(W);
  int64_t F = 0;
  for (int64_t k : keys) F += k;
  // start[s][f * B + b]: offset of (f, b)'s segment in source s's values
  std::vector<std::vector<int64_t>> start(W, std::vector<int64_t>(F * B + 1, 0));
  for (int s = 0; s < W; ++s) {
    auto len = in[s][0].accessor<int64_t, 1>();
    for (int64_t i = 0; i < F * B; ++i) start[s][i + 1] = start[s][i] + len[i];
  }
  std::vector<Tensors> out;
  for (int r = 0, o = 0; r < W; o += keys[r], ++r) {
    const int64_t k = keys[r];
    std::vector<int64_t> lengths, values;
    for (int64_t f = 0; f < k; ++f)
      for (int s = 0; s < W; ++s) {
        auto len = in[s][0].accessor<int64_t, 1>();
        auto val = in[s][1].accessor<int64_t, 1>();
        for (int64_t b = 0; b < B; ++b) {
          const int64_t i = (o + f) * B + b;
          lengths.push_back(len[i]);
          for (int64_t j = start[s][i]; j < start[s][i + 1]; ++j) values.push_back(val[j]);
        }
      }
    const int64_t count = static_cast<int64_t>(values.size());
    values.resize(k * W * B * kCapacity, 0);
    out.push_back({at::tensor(lengths, at::kLong), at::tensor(values, at::kLong), at::scalar_tensor(count, at::kLong),
                   at::scalar_tensor(W * B, at::kLong), at::full({W}, B, at::kLong)});
  }
  return out;
}

PKB_REGISTER_PROBLEM("torchrec_kjt_all2all", reference, oracle);

}  // namespace problem_070
