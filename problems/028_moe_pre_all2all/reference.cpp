#include "reference/reference.h"

#include <numeric>

namespace {

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();  // split sizes live on the device: copy to the host
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &mask = in[1];
  const int64_t experts = ctx.scalar("num_experts"), local = experts / ctx.world;
  at::Tensor routing_map = mask.sum(1);  // (E, M) fp32 0/1
  at::Tensor token_ids = at::arange(hidden.size(0), routing_map.options().dtype(at::kLong)).unsqueeze(0).expand({experts, -1});
  at::Tensor perm = token_ids.masked_select(routing_map.to(at::kBool));  // expert-major, tokens ascending
  at::Tensor permuted = hidden.index_select(0, perm);

  std::vector<int64_t> send = host_vector(in[2]), recv = host_vector(in[3]);
  at::Tensor received = at::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0}), hidden.size(1)}, hidden.options());
  ctx.comm->all_to_all(permuted.contiguous(), received, send, recv);

  // Received chunks are in (source s, local expert j) order; emit them in (j, s) order.
  std::vector<at::Tensor> chunks = at::split_with_sizes(received, host_vector(in[4]));
  std::vector<at::Tensor> regrouped;
  for (int64_t j = 0; j < local; ++j)
    for (int s = 0; s < ctx.world; ++s) regrouped.push_back(chunks[s * local + j]);
  at::Tensor shape = at::tensor(std::vector<int64_t>{hidden.size(0), hidden.size(1)}, at::kLong);
  return {at::cat(regrouped, 0), routing_map, perm, shape};
}

// The tokens of rank s routed to expert e, ascending, read off s's mask.
std::vector<int64_t> tokens_of(const at::Tensor& mask, int64_t e) {
  auto a = mask.accessor<float, 3>();
  std::vector<int64_t> tokens;
  for (int64_t t = 0; t < mask.size(2); ++t) {
    bool hit = false;
    for (int64_t k = 0; k < mask.size(1); ++k) hit |= a[e][k][t] != 0;
    if (hit) tokens.push_back(t);
  }
  return tokens;
}

// Every rank's outputs from the masks alone: rank r's rows are, for each local expert j and source rank s,
// rank s's hidden rows of the tokens it routed to expert r*L + j.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), local = experts / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    std::vector<at::Tensor> rows;
    for (int64_t j = 0; j < local; ++j)
      for (int s = 0; s < W; ++s)
        rows.push_back(in[s][0].index_select(0, at::tensor(tokens_of(in[s][1], r * local + j), at::kLong)));
    std::vector<int64_t> perm;
    at::Tensor routing_map = at::zeros({experts, in[r][1].size(2)}, at::kFloat);
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t t : tokens_of(in[r][1], e)) {
        perm.push_back(t);
        routing_map[e][t] = 1.0;
      }
    out.push_back({at::cat(rows, 0), routing_map, at::tensor(perm, at::kLong),
                   at::tensor(std::vector<int64_t>{in[r][0].size(0), in[r][0].size(1)}, at::kLong)});
  }
  return out;
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// total split into parts proportional to random weights in [100, 200] (at most 2x apart); floors, then the
// remainder one by one.
std::vector<int64_t> random_split(int64_t total, int parts, uint64_t& state) {
  std::vector<int64_t> w(parts), out(parts);
  int64_t wsum = 0, given = 0;
  for (auto& x : w) wsum += x = 100 + static_cast<int64_t>((state = splitmix64(state)) % 101);
  for (int i = 0; i < parts; ++i) given += out[i] = total * w[i] / wsum;
  for (int i = 0; given < total; i = (i + 1) % parts, ++given) ++out[i];
  return out;
}

// cnt[s][e]: assignments of rank s's tokens to expert e, the same on every rank (from the shared draw). Rank s
// sends c[(q - s) mod W] rows to rank q (c[0] = K*M/W stays local, the rest is split randomly), and each such
// block is split randomly among q's experts, so every rank sends and receives exactly K*M rows.
std::vector<std::vector<int64_t>> count_table(const at::Tensor& shared, int W, int64_t experts, int64_t rows) {
  uint64_t state = 0x28;
  auto a = shared.accessor<int64_t, 1>();
  for (int64_t i = 0; i < shared.numel(); ++i) state = splitmix64(state ^ static_cast<uint64_t>(a[i]));
  const int64_t local = experts / W;
  std::vector<int64_t> c = {rows / W};
  if (W > 1)
    for (int64_t part : random_split(rows - rows / W, W - 1, state)) c.push_back(part);
  std::vector<std::vector<int64_t>> cnt(W, std::vector<int64_t>(experts));
  for (int s = 0; s < W; ++s)
    for (int q = 0; q < W; ++q) {
      auto parts = random_split(c[(q - s + W) % W], static_cast<int>(local), state);
      for (int64_t j = 0; j < local; ++j) cnt[s][q * local + j] = parts[j];
    }
  return cnt;
}

// Routing of this rank consistent with the shared count table: the K*M assignments, sorted by expert, are dealt
// to tokens in a random order, assignment i + k*M going to the i-th token. No expert has more than M assignments,
// so a token's K experts are distinct. Slot order is then rotated at random per token.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  const int64_t experts = ctx.param("NE"), K = ctx.param("K"), M = ctx.param("M"), local = experts / W;
  auto cnt = count_table(raw[2], W, experts, K * M);
  std::vector<int64_t> sorted_experts;
  for (int64_t e = 0; e < experts; ++e) {
    if (cnt[rank][e] > M) throw std::runtime_error("moe_pre_all2all: an expert count exceeds M");
    sorted_experts.insert(sorted_experts.end(), cnt[rank][e], e);
  }
  auto u = raw[1].accessor<float, 3>();  // this rank's uniform draws: token order and slot rotation
  std::vector<int64_t> order(M);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return u[0][0][x] < u[0][0][y]; });
  at::Tensor mask = at::zeros({experts, K, M}, at::kFloat);
  auto m = mask.accessor<float, 3>();
  for (int64_t i = 0; i < M; ++i) {
    int64_t t = order[i], rotate = std::min<int64_t>(K - 1, static_cast<int64_t>(u[experts - 1][K - 1][t] * K));
    for (int64_t k = 0; k < K; ++k) m[sorted_experts[k * M + i]][(k + rotate) % K][t] = 1;
  }
  at::Tensor send = at::zeros({W}, at::kLong), recv = at::zeros({W}, at::kLong), table = at::zeros({W, local}, at::kLong);
  for (int q = 0; q < W; ++q)
    for (int64_t j = 0; j < local; ++j) {
      send[q] += cnt[rank][q * local + j];
      recv[q] += cnt[q][rank * local + j];
      table[q][j] = cnt[q][rank * local + j];
    }
  return {raw[0], mask, send, recv, table};
}

}  // namespace

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_pre_all2all", reference, oracle, prepare);
