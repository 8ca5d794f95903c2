#include "reference/reference.h"

namespace problem_060 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// PKB's path: conj-pad, all-gather along H, flip the tail rows, inverse FFT along Wd, all-to-all of column
// chunks, inverse FFT along H, real part.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world, r = ctx.rank;
  at::Tensor half = at::view_as_complex(in[0].contiguous());
  const int64_t B = half.size(0), C = half.size(1), Hl = half.size(2), Wh = half.size(3);
  const int64_t H = Hl * W, Wd = 2 * (Wh - 1), Wl = Wd / W;

  at::Tensor padded = at::zeros({B, C, Hl, Wd}, half.options());
  padded.slice(3, 0, Wh).copy_(half);
  padded.slice(3, Wh, Wd).copy_(half.slice(3, 1, Wd - Wh + 1).flip({3}).conj());
  at::Tensor gathered = at::empty({W, B, C, Hl, Wd, 2}, in[0].options());
  ctx.comm->all_gather(at::view_as_real(padded).contiguous(), gathered);
  at::Tensor full = at::view_as_complex(gathered).permute({1, 2, 0, 3, 4}).reshape({B, C, H, Wd});
  at::Tensor tail = full.slice(3, Wh, Wd).slice(2, 1, H);
  tail.copy_(tail.flip({2}).clone());  // row k <- row H - k
  at::Tensor mine = full.slice(2, r * Hl, (r + 1) * Hl);

  at::Tensor rows = at::fft_ifft(mine, c10::nullopt, 3, "ortho");  // (B, C, Hl, Wd)
  at::Tensor send = at::view_as_real(rows.view({B, C, Hl, W, Wl}).permute({3, 0, 1, 2, 4}).contiguous()).contiguous();
  at::Tensor recv = at::empty_like(send);  // (W, B, C, Hl, Wl, 2): rows of rank s, my columns
  ctx.comm->all_to_all(send, recv);
  at::Tensor columns = at::view_as_complex(recv).permute({1, 2, 0, 3, 4}).reshape({B, C, H, Wl});
  return {at::real(at::fft_ifft(columns, c10::nullopt, 2, "ortho")).contiguous()};
}

// The half spectrum assembled from every rank's rows, one fp64 irfft2, each rank's column slab.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  std::vector<at::Tensor> rows;
  for (const auto& r : in) rows.push_back(at::view_as_complex(r[0].to(at::kDouble).contiguous()));
  at::Tensor half = at::cat(rows, 2);
  const int64_t H = half.size(2), Wd = 2 * (half.size(3) - 1), Wl = Wd / W;
  at::Tensor field = at::fft_irfft2(half, at::IntArrayRef{H, Wd}, {2, 3}, "ortho");
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({field.slice(3, r * Wl, (r + 1) * Wl).to(at::kFloat).contiguous()});
  return out;
}

PKB_REGISTER_PROBLEM("physicsnemo_distributed_irfft", reference, oracle);

}  // namespace problem_060
