#include "reference/reference.h"

#include <algorithm>

namespace problem_085 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// One int64 per rank, all-gathered.
std::vector<int64_t> all_gather_count(Communicator& comm, int64_t value, const at::Device& device) {
  at::Tensor mine = at::full({1}, value, at::TensorOptions().dtype(at::kLong).device(device));
  at::Tensor all = at::empty({comm.size()}, mine.options());
  comm.all_gather(mine, all);
  return host_vector(all);
}

// Uneven all-to-all of a 1-D tensor: the counts first, then the values.
at::Tensor exchange(Communicator& comm, const at::Tensor& values, const std::vector<int64_t>& send) {
  at::Tensor send_counts = at::tensor(send, at::kLong).to(values.device());
  at::Tensor recv_counts = at::empty_like(send_counts);
  comm.all_to_all(send_counts, recv_counts);
  std::vector<int64_t> recv = host_vector(recv_counts);
  int64_t total = 0;
  for (int64_t c : recv) total += c;
  at::Tensor out = at::empty({total}, values.options());
  comm.all_to_all(values.contiguous(), out, send, recv);
  return out;
}

// Sample sort as reference.py: local sort, W regular samples, W - 1 splitters, bucket all-to-all, local sort,
// exact rebalance.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int w = ctx.world;
  at::Tensor local = std::get<0>(in[0].sort());
  const int64_t n = local.numel();
  std::vector<int64_t> shard_sizes = all_gather_count(*ctx.comm, n, local.device());
  int64_t total = 0;
  for (int64_t s : shard_sizes) total += s;

  std::vector<int64_t> picks;
  for (int i = 0; i < w; ++i) picks.push_back(std::max<int64_t>(0, (i + 1) * n / w - 1));
  at::Tensor samples = local.index_select(0, at::tensor(picks, at::kLong).to(local.device())).contiguous();
  at::Tensor all_samples = at::empty({w * w}, samples.options());
  ctx.comm->all_gather(samples, all_samples);
  at::Tensor splitters = std::get<0>(all_samples.sort()).slice(0, w - 1, w * w - 1, w);

  at::Tensor bucket = local.unsqueeze(1).gt(splitters.unsqueeze(0)).sum(1);
  std::vector<int64_t> counts = host_vector(at::bincount(bucket, {}, w));
  at::Tensor mine = std::get<0>(exchange(*ctx.comm, local, counts).sort());

  std::vector<int64_t> sizes = all_gather_count(*ctx.comm, mine.numel(), mine.device());
  int64_t offset = 0;
  for (int q = 0; q < ctx.rank; ++q) offset += sizes[q];
  const int64_t base = total / w, extra = total % w;
  auto start = [&](int64_t q) { return q * base + std::min(q, extra); };
  std::vector<int64_t> send;
  for (int q = 0; q < w; ++q)
    send.push_back(std::max<int64_t>(0, std::min(offset + mine.numel(), start(q + 1)) - std::max(offset, start(q))));
  return {exchange(*ctx.comm, mine, send)};
}

// All shards concatenated, sorted, sliced: rank r gets base + (r < extra) values from r base + min(r, extra).
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> shards;
  for (const auto& r : in) shards.push_back(r[0].to(at::kDouble));
  at::Tensor all = std::get<0>(at::cat(shards).sort());
  const int64_t total = all.numel(), base = total / ctx.world, extra = total % ctx.world;
  std::vector<Tensors> out;
  for (int64_t r = 0; r < ctx.world; ++r) {
    int64_t begin = r * base + std::min(r, extra);
    out.push_back({all.slice(0, begin, begin + base + (r < extra ? 1 : 0)).to(in[0][0].scalar_type())});
  }
  return out;
}

// Integers in [-50, 50) minus r L, in the dtype; L = max(4 W, min(M / W, 4096)), PKB's local_n.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int64_t w = ctx.world, l = std::max<int64_t>(4 * w, std::min<int64_t>(ctx.param("M") / w, 4096));
  raw[0] = raw[0] - static_cast<double>(rank * l);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("distributed_sample_sort", reference, oracle, prepare);

}  // namespace problem_085
