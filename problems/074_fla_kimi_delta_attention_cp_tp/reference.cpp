#include "reference/reference.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace problem_074 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// (1, L, ...) of every CP member, concatenated along the sequence in CP-rank order: (1, cp L, ...).
at::Tensor gather_sequence(Communicator& cp, const at::Tensor& x) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape.insert(shape.begin(), cp.size());
  at::Tensor all = at::empty(shape, x.options());
  cp.all_gather(x.contiguous(), all);
  return at::cat(all.unbind(0), 1);
}

// KDA in fp32 for all heads at once: q, k, v, g (T, H, D), beta (T, H), a_log (H,), dt_bias (H, D).
at::Tensor kda(at::Tensor q, at::Tensor k, at::Tensor v, const at::Tensor& g, const at::Tensor& beta,
               const at::Tensor& a_log, const at::Tensor& dt_bias) {
  auto unit = [](const at::Tensor& x) { return x / x.norm(2, {-1}, true).clamp_min(1e-12); };
  q = unit(q.to(at::kFloat)) / std::sqrt(static_cast<double>(q.size(-1)));
  k = unit(k.to(at::kFloat));
  v = v.to(at::kFloat);
  at::Tensor b = at::sigmoid(beta.to(at::kFloat));
  at::Tensor alpha =
      at::exp(-5 * at::sigmoid(a_log.to(at::kFloat).exp().unsqueeze(-1) * (g.to(at::kFloat) + dt_bias.to(at::kFloat))));
  at::Tensor state = at::zeros({q.size(1), q.size(2), v.size(2)}, q.options());
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < q.size(0); ++t) {
    state = state * alpha[t].unsqueeze(-1);
    at::Tensor u = (v[t] - at::bmm(k[t].unsqueeze(1), state).squeeze(1)) * b[t].unsqueeze(-1);
    state = state + k[t].unsqueeze(-1) * u.unsqueeze(1);
    out.push_back(at::bmm(q[t].unsqueeze(1), state).squeeze(1));
  }
  return at::stack(out);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  Communicator& cp = ctx.group("cp");
  Communicator& tp = ctx.group("tp");
  std::vector<at::Tensor> seq;
  for (int i = 0; i < 5; ++i) seq.push_back(gather_sequence(cp, in[i])[0]);
  const int64_t H = in[5].size(0);
  at::Tensor out = kda(seq[0], seq[1], seq[2], seq[3], seq[4], in[5], in[6].view({H, -1})).to(in[0].scalar_type());
  out = out.unsqueeze(0).contiguous();
  if (tp.size() > 1) tp.all_reduce(out);
  const int64_t L = in[0].size(1);
  return {out.slice(1, cp.rank() * L, (cp.rank() + 1) * L)};
}

// fp64, head by head and channel by channel: for each CP group (members in CP order) the sequence of each TP index,
// its KDA output rounded to the dtype, the TP partners' rounded outputs added and rounded, then each rank's slice.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const at::ScalarType dtype = in[0][0].scalar_type();
  const int64_t L = in[0][0].size(1), H = in[0][5].size(0), D = in[0][0].size(3);
  at::Tensor a_log = in[0][5].to(at::kDouble), dt_bias = in[0][6].to(at::kDouble).view({H, D});
  // KDA output (rounded to the dtype) of the sequence the CP group of `rank` assembles: (cp L, H, D).
  auto kda64 = [&](const std::vector<int>& members) {
    auto cat = [&](int i) {
      std::vector<at::Tensor> parts;
      for (int m : members) parts.push_back(in[m][i][0].to(at::kDouble));
      return at::cat(parts, 0);
    };
    at::Tensor q = cat(0), k = cat(1), v = cat(2), g = cat(3), beta = cat(4);
    const int64_t T = q.size(0);
    at::Tensor out = at::empty({T, H, D}, at::kDouble);
    for (int64_t h = 0; h < H; ++h) {
      at::Tensor S = at::zeros({D, D}, at::kDouble);
      const double rate = std::exp(a_log[h].item<double>());
      for (int64_t t = 0; t < T; ++t) {
        at::Tensor qt = q[t][h] / std::max(q[t][h].norm().item<double>(), 1e-12) / std::sqrt(static_cast<double>(D));
        at::Tensor kt = k[t][h] / std::max(k[t][h].norm().item<double>(), 1e-12);
        at::Tensor alpha = at::exp(-5.0 / (1.0 + at::exp(-rate * (g[t][h] + dt_bias[h]))));
        const double b = 1.0 / (1.0 + std::exp(-beta[t][h].item<double>()));
        S = alpha.unsqueeze(1) * S;
        at::Tensor u = (v[t][h] - at::matmul(kt, S)) * b;
        S = S + at::outer(kt, u);
        out.select(0, t).select(0, h).copy_(at::matmul(qt, S));
      }
    }
    return out.to(dtype);
  };
  std::map<int, at::Tensor> by_group;  // keyed by the CP group's first member: each group's sequence is run once
  auto output_of = [&](int rank) {
    const auto& members = ctx.group_of("cp", rank);
    auto it = by_group.find(members[0]);
    if (it == by_group.end()) it = by_group.emplace(members[0], kda64(members)).first;
    return it->second;
  };
  std::vector<Tensors> result(W);
  for (int r = 0; r < W; ++r) {
    const auto& partners = ctx.group_of("tp", r);
    at::Tensor sum;
    for (int p : partners) {
      at::Tensor o = output_of(p);
      sum = sum.defined() ? (sum + o) : o;  // one rounded add for a pair, as the dtype's all-reduce
    }
    const auto& cp = ctx.group_of("cp", r);
    const int64_t c = std::find(cp.begin(), cp.end(), r) - cp.begin();
    result[r] = {sum.slice(0, c * L, (c + 1) * L).unsqueeze(0)};
  }
  return result;
}

// a_log = linspace(-0.1, 0.1, H), dt_bias = linspace(-0.1, 0.1, H D), in the dtype (PKB's values).
Tensors prepare(const OracleContext&, int, Tensors raw) {
  raw[5] = at::linspace(-0.1, 0.1, raw[5].size(0), at::kFloat).to(raw[5].scalar_type());
  raw[6] = at::linspace(-0.1, 0.1, raw[6].size(0), at::kFloat).to(raw[6].scalar_type());
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fla_kimi_delta_attention_cp_tp", reference, oracle, prepare);

}  // namespace problem_074
