// The routing tables behind problems 28 and 29 (moe_pre_all2all, the dispatch; moe_post_all2all, the combine):
// the host copy of split sizes the references need, and, for prepare, the count table every rank derives from the
// shared draw (uneven but reproducible splits, each rank sending and receiving exactly K*M rows), each rank's
// assignments sorted by expert, and its send/receive sizes and per-(source, local expert) counts. Each problem seeds
// the table with its own constant and turns the assignments into its own inputs (28: a slot mask; 29: selected
// experts, a routing map and router weights).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/splitmix.h"
#include "reference/reference.h"

namespace pkb::moe_all2all {

inline std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();  // split sizes live on the device: copy to the host
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// ---- prepare ----

// total split into parts proportional to random weights in [100, 200] (at most 2x apart); floors, then the
// remainder one by one.
inline std::vector<int64_t> random_split(int64_t total, int parts, uint64_t& state) {
  std::vector<int64_t> w(parts), out(parts);
  int64_t wsum = 0, given = 0;
  for (auto& x : w) wsum += x = 100 + static_cast<int64_t>((state = splitmix64(state)) % 101);
  for (int i = 0; i < parts; ++i) given += out[i] = total * w[i] / wsum;
  for (int i = 0; given < total; i = (i + 1) % parts, ++given) ++out[i];
  return out;
}

// cnt[s][e]: assignments of rank s's tokens to expert e, the same on every rank (from the shared draw, hashed into
// a generator started at `seed`). Rank s sends c[(q - s) mod W] rows to rank q (c[0] = rows/W stays local, the rest
// is split randomly), and each such block is split randomly among q's experts, so every rank sends and receives
// exactly `rows` rows.
inline std::vector<std::vector<int64_t>> count_table(const at::Tensor& shared, int W, int64_t experts, int64_t rows,
                                                     uint64_t seed) {
  uint64_t state = seed;
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

// Rank `rank`'s assignments sorted by expert: expert e repeated cnt[rank][e] times. A count above M (tokens per
// rank) would give a token the same expert twice: an error naming `slug`.
inline std::vector<int64_t> sorted_experts(const std::vector<std::vector<int64_t>>& cnt, int rank, int64_t M,
                                           const std::string& slug) {
  std::vector<int64_t> sorted;
  for (int64_t e = 0; e < static_cast<int64_t>(cnt[rank].size()); ++e) {
    if (cnt[rank][e] > M) throw Error(slug + ": an expert count exceeds M");
    sorted.insert(sorted.end(), cnt[rank][e], e);
  }
  return sorted;
}

struct Splits {
  at::Tensor send, recv;  // (W) rows this rank sends to / receives from each rank
  at::Tensor table;       // (W, L): rows this rank receives from source s for its local expert j
};

inline Splits splits_of(const std::vector<std::vector<int64_t>>& cnt, int rank, int W, int64_t local) {
  at::Tensor send = at::zeros({W}, at::kLong), recv = at::zeros({W}, at::kLong),
             table = at::zeros({W, local}, at::kLong);
  for (int q = 0; q < W; ++q)
    for (int64_t j = 0; j < local; ++j) {
      send[q] += cnt[rank][q * local + j];
      recv[q] += cnt[q][rank * local + j];
      table[q][j] = cnt[q][rank * local + j];
    }
  return {send, recv, table};
}

}  // namespace pkb::moe_all2all
