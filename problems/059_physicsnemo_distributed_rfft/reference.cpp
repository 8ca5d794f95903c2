#include "reference/reference.h"

namespace problem_059 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Column block -> FFT along H -> all-to-all of row chunks -> FFT along Wd, first Wd/2 + 1 frequencies.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world;
  const at::Tensor& x = in[0];
  const int64_t B = x.size(0), H = x.size(1), Wl = x.size(2), Wd = Wl * W, Hl = H / W;
  at::Tensor columns = at::fft_fft(x, c10::nullopt, 1, "ortho");  // (B, H, Wl) complex64
  // Row chunk j goes to rank j: lay the chunks out rank-major, as real views.
  at::Tensor send = at::view_as_real(columns.view({B, W, Hl, Wl}).transpose(0, 1).contiguous()).contiguous();
  at::Tensor recv = at::empty_like(send);  // (W, B, Hl, Wl, 2): piece from rank s
  ctx.comm->all_to_all(send, recv);
  at::Tensor rows = at::view_as_complex(recv).permute({1, 2, 0, 3}).reshape({B, Hl, Wd});  // columns by source
  at::Tensor spectrum = at::fft_fft(rows, c10::nullopt, 2, "ortho").slice(2, 0, Wd / 2 + 1);
  return {at::view_as_real(spectrum.contiguous()).contiguous()};
}

// The global field assembled from every rank's columns, one fp64 rfft2, each rank's slab of rows.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  std::vector<at::Tensor> blocks;
  for (const auto& r : in) blocks.push_back(r[0].to(at::kDouble));
  at::Tensor field = at::cat(blocks, 2);
  at::Tensor spectrum = at::view_as_real(at::fft_rfft2(field, c10::nullopt, {1, 2}, "ortho"));
  const int64_t Hl = field.size(1) / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({spectrum.slice(1, r * Hl, (r + 1) * Hl).to(at::kFloat).contiguous()});
  return out;
}

PKB_REGISTER_PROBLEM("physicsnemo_distributed_rfft", reference, oracle);

}  // namespace problem_059
