#include "reference/reference.h"

namespace problem_072 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// (1, C, 2 LC) zig-zag shard -> (C/W, L): this rank's channels over the global sequence in natural order.
at::Tensor seq_to_channels(Communicator& comm, const at::Tensor& x) {
  const int W = comm.size();
  const int64_t lc = x.size(2) / 2;
  at::Tensor send = x[0].reshape({W, -1, 2 * lc}).contiguous();  // channel blocks
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  std::vector<at::Tensor> order(2 * W);
  for (int s = 0; s < W; ++s) {  // source s holds global chunks s and 2W-1-s
    order[s] = recv[s].slice(1, 0, lc);
    order[2 * W - 1 - s] = recv[s].slice(1, lc, 2 * lc);
  }
  return at::cat(order, 1);
}

// (C/W, L) natural order -> (C, 2 LC): every channel at this rank's zig-zag chunks.
at::Tensor channels_to_seq(Communicator& comm, const at::Tensor& y) {
  const int W = comm.size();
  std::vector<at::Tensor> chunks = y.chunk(2 * W, 1), pieces;
  for (int d = 0; d < W; ++d) pieces.push_back(at::cat({chunks[d], chunks[2 * W - 1 - d]}, 1));
  at::Tensor send = at::stack(pieces).contiguous(), recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  return at::cat(recv.unbind(0), 0);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  Communicator& comm = *ctx.comm;
  at::Tensor x1 = seq_to_channels(comm, in[0]), x2 = seq_to_channels(comm, in[1]), v = seq_to_channels(comm, in[2]);
  const int64_t cl = x1.size(0), L = x1.size(1), n = 2 * L;
  at::Tensor h = in[3].slice(0, ctx.rank * cl, (ctx.rank + 1) * cl),
             bias = in[4].slice(0, ctx.rank * cl, (ctx.rank + 1) * cl);
  at::Tensor z = x2 * v;
  at::Tensor spectrum = at::fft_rfft(z.to(at::kFloat), n) * at::fft_rfft(h.to(at::kFloat), n);
  at::Tensor y = at::fft_irfft(spectrum, n).slice(1, 0, L) + z.to(at::kFloat) * bias.to(at::kFloat).unsqueeze(1);
  at::Tensor out = x1 * y.to(x1.scalar_type());
  return {channels_to_seq(comm, out).t().unsqueeze(0).contiguous()};
}

// fp64 direct convolution of the global sequence, every channel: y[t] = sum_j g[j] zp[(t - j) mod n] with g the
// filter cut or zero-padded to n and zp = z zero-padded to n, as a cross-correlation over the wrapped tail followed
// by z. z and y are rounded to the dtype where the semantics round them; each rank's zig-zag positions are taken.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const at::ScalarType dtype = in[0][0].scalar_type();
  const int64_t lc = in[0][0].size(2) / 2, C = in[0][0].size(1);
  auto global = [&](int i) {
    std::vector<at::Tensor> chunks(2 * W);
    for (int r = 0; r < W; ++r) {
      chunks[r] = in[r][i][0].slice(1, 0, lc);
      chunks[2 * W - 1 - r] = in[r][i][0].slice(1, lc, 2 * lc);
    }
    return at::cat(chunks, 1).to(at::kDouble);  // (C, L)
  };
  at::Tensor x1 = global(0), z = (global(1) * global(2)).to(dtype).to(at::kDouble);
  const int64_t L = z.size(1), n = 2 * L, J = std::min<int64_t>(in[0][3].size(1), n);
  at::Tensor g = in[0][3].to(at::kDouble).slice(1, 0, J);  // taps 0..J-1 of the filter cut to n
  at::Tensor zp = at::cat({z, at::zeros({C, n - L}, at::kDouble)}, 1);
  at::Tensor ext = at::cat({zp.slice(1, n - J + 1, n), z}, 1);  // zp[(t - j) mod n] for j = J-1 .. 0
  at::Tensor y = at::conv1d(ext.unsqueeze(0), g.flip(1).unsqueeze(1), at::Tensor(), at::IntArrayRef{1},
                            at::IntArrayRef{0}, at::IntArrayRef{1}, C)[0];
  y = (y + z * in[0][4].to(at::kDouble).unsqueeze(1)).to(dtype).to(at::kDouble);
  at::Tensor out = (x1 * y).to(dtype);  // (C, L)
  std::vector<Tensors> result;
  for (int r = 0; r < W; ++r)
    result.push_back(
        {at::cat({out.slice(1, r * lc, (r + 1) * lc), out.slice(1, (2 * W - 1 - r) * lc, (2 * W - r) * lc)}, 1)
             .t()
             .unsqueeze(0)
             .contiguous()});
  return result;
}

// h[c, t] = bf16_round(c HL + t) / (HL (c + 1)) and bias[c] = bf16_round(c) / C, in the dtype.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  const int64_t C = raw[3].size(0), HL = raw[3].size(1);
  at::Tensor c = at::arange(C, at::kDouble).unsqueeze(1), t = at::arange(HL, at::kDouble).unsqueeze(0);
  at::Tensor stair = (c * HL + t).to(at::kBFloat16).to(at::kDouble);
  raw[3] = (stair / (HL * (c + 1))).to(raw[3].scalar_type());
  raw[4] = (at::arange(C, at::kDouble).to(at::kBFloat16).to(at::kDouble) / C).to(raw[4].scalar_type());
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("hyena_forward_cp", reference, oracle, prepare);

}  // namespace problem_072
