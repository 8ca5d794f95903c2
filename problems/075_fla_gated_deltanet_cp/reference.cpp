#include "reference/reference.h"

#include <cmath>

namespace problem_075 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// (1, L, H, ...) -> (1, W L, H/W, ...): this rank's heads over the whole sequence (source rank = sequence block).
at::Tensor seq_to_heads(Communicator& comm, const at::Tensor& x) {
  const int W = comm.size();
  std::vector<int64_t> split = x.sizes().vec();  // (1, L, H, ...)
  split[2] /= W;
  split.insert(split.begin() + 2, W);                             // (1, L, W, H/W, ...)
  at::Tensor send = x.reshape(split).movedim(2, 0).contiguous();  // (W, 1, L, H/W, ...)
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  return at::cat(recv.unbind(0), 1);
}

// (1, W L, H/W, DV) -> (1, L, H, DV): every head of this rank's own positions.
at::Tensor heads_to_seq(Communicator& comm, const at::Tensor& x) {
  const int W = comm.size();
  at::Tensor send = at::stack(x.chunk(W, 1)).contiguous();  // (W, 1, L, H/W, DV)
  at::Tensor recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  return at::cat(recv.unbind(0), 2);
}

// The gated delta rule in fp32 for all of this rank's heads at once: q, k (T, Hl, DK), v (T, Hl, DV).
at::Tensor gated_delta_rule(at::Tensor q, at::Tensor k, at::Tensor v, const at::Tensor& gate, const at::Tensor& beta,
                            const at::Tensor& a_log, const at::Tensor& dt_bias) {
  auto unit = [](const at::Tensor& x) { return x / x.norm(2, {-1}, true).clamp_min(1e-6); };
  q = unit(q.to(at::kFloat)) / std::sqrt(static_cast<double>(q.size(-1)));
  k = unit(k.to(at::kFloat));
  v = v.to(at::kFloat);
  at::Tensor b = beta.to(at::kFloat);
  at::Tensor decay = at::exp(-a_log.to(at::kFloat).exp() * at::softplus(gate.to(at::kFloat) + dt_bias.to(at::kFloat)));
  at::Tensor state = at::zeros({q.size(1), q.size(2), v.size(2)}, q.options());
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < q.size(0); ++t) {
    state = state * decay[t].view({-1, 1, 1});
    at::Tensor u = (v[t] - at::bmm(k[t].unsqueeze(1), state).squeeze(1)) * b[t].unsqueeze(-1);
    state = state + k[t].unsqueeze(-1) * u.unsqueeze(1);
    out.push_back(at::bmm(q[t].unsqueeze(1), state).squeeze(1));
  }
  return at::stack(out);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  Communicator& comm = *ctx.comm;
  at::Tensor q = seq_to_heads(comm, in[0])[0], k = seq_to_heads(comm, in[1])[0], v = seq_to_heads(comm, in[2])[0];
  at::Tensor gate = seq_to_heads(comm, in[3])[0], beta = seq_to_heads(comm, in[4])[0];
  at::Tensor out = gated_delta_rule(q, k, v, gate, beta, in[5], in[6]).to(in[2].scalar_type());
  return {heads_to_seq(comm, out.unsqueeze(0))};
}

// fp64, head by head over the global sequence (the ranks' positions concatenated), each head's gate parameters
// taken from the rank that owns it; then every rank's positions for all heads.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  auto global = [&](int i) {
    std::vector<at::Tensor> parts;
    for (const auto& r : in) parts.push_back(r[i][0].to(at::kDouble));
    return at::cat(parts, 0);  // (W L, H, ...)
  };
  at::Tensor q = global(0), k = global(1), v = global(2), gate = global(3), beta = global(4);
  const int64_t T = q.size(0), H = q.size(1), DK = q.size(2), Hl = H / W;
  at::Tensor out = at::empty({T, H, v.size(2)}, at::kDouble);
  for (int64_t h = 0; h < H; ++h) {
    const double a_log = in[h / Hl][5][h % Hl].item<double>(), dt_bias = in[h / Hl][6][h % Hl].item<double>();
    at::Tensor S = at::zeros({DK, v.size(2)}, at::kDouble);
    for (int64_t t = 0; t < T; ++t) {
      at::Tensor qt = q[t][h], kt = k[t][h];
      qt = qt / std::max(qt.norm().item<double>(), 1e-6) / std::sqrt(static_cast<double>(DK));
      kt = kt / std::max(kt.norm().item<double>(), 1e-6);
      const double x = gate[t][h].item<double>() + dt_bias;
      const double softplus = x > 20 ? x : std::log1p(std::exp(x));
      S = S * std::exp(-std::exp(a_log) * softplus);
      at::Tensor u = (v[t][h] - at::matmul(kt, S)) * beta[t][h].item<double>();
      S = S + at::outer(kt, u);
      out[t][h] = at::matmul(qt, S);
    }
  }
  const int64_t L = in[0][0].size(1);
  std::vector<Tensors> result;
  for (int r = 0; r < W; ++r)
    result.push_back({out.slice(0, r * L, (r + 1) * L).unsqueeze(0).to(in[0][2].scalar_type())});
  return result;
}

// beta = sigmoid of the draw in the dtype; a_log, dt_bias = this rank's slice of linspace(0, 0.2, H) and
// linspace(-0.1, 0.1, H).
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const at::ScalarType dtype = raw[0].scalar_type();
  raw[4] = at::sigmoid(raw[4]);
  const int64_t Hl = raw[5].size(0), H = Hl * ctx.world;
  raw[5] = at::linspace(0.0, 0.2, H, at::kFloat).slice(0, rank * Hl, (rank + 1) * Hl).to(dtype);
  raw[6] = at::linspace(-0.1, 0.1, H, at::kFloat).slice(0, rank * Hl, (rank + 1) * Hl).to(dtype);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fla_gated_deltanet_cp", reference, oracle, prepare);

}  // namespace problem_075
