// Problems 65 and 66 (GraphBolt's feature exchange, forward and backward): an all-to-all whose split lists are in
// rotated order, position i meaning peer (r + i) mod W, on the communicator whose splits are by peer.
#pragma once

#include <vector>

#include "reference/reference.h"

namespace pkb {

inline std::vector<int64_t> host_int64s(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// rows: this rank's blocks in rotated order with sizes `sent`; returns the received blocks in rotated order
// (block c from peer (r + c) mod W, sizes `received`).
inline at::Tensor rotated_all_to_all(Communicator& comm, int r, const at::Tensor& rows,
                                     const std::vector<int64_t>& sent, const std::vector<int64_t>& received) {
  const int W = comm.size();
  std::vector<at::Tensor> blocks = at::split_with_sizes(rows, sent), by_peer;
  std::vector<int64_t> send_rows(W), recv_rows(W);
  for (int p = 0; p < W; ++p) {
    int i = ((p - r) % W + W) % W;
    by_peer.push_back(blocks[i]);
    send_rows[p] = sent[i];
    recv_rows[p] = received[i];
  }
  int64_t total = 0;
  for (int64_t n : recv_rows) total += n;
  at::Tensor got = at::empty({total, rows.size(1)}, rows.options());
  comm.all_to_all(at::cat(by_peer).contiguous(), got, send_rows, recv_rows);
  std::vector<at::Tensor> from_peer = at::split_with_sizes(got, recv_rows), ordered;
  for (int c = 0; c < W; ++c) ordered.push_back(from_peer[(r + c) % W]);
  return at::cat(ordered);
}

}  // namespace pkb
