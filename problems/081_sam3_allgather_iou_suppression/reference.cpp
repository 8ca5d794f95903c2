#include "reference/reference.h"

#include <algorithm>

namespace problem_081 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kIouThreshold = 0.7;  // PKB's value (a defaulted keyword in reference.py); reverse = False

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Variable-count all-gather along dim 0: every rank pads to the largest count, gathers, and keeps each rank's rows.
at::Tensor gather_objects(Communicator& comm, const at::Tensor& local, const std::vector<int64_t>& counts) {
  int64_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<int64_t> shape = local.sizes().vec();
  shape[0] = most;
  at::Tensor padded = at::zeros(shape, local.options());
  padded.slice(0, 0, local.size(0)).copy_(local);
  shape.insert(shape.begin(), static_cast<int64_t>(counts.size()));
  at::Tensor all = at::empty(shape, local.options());
  comm.all_gather(padded, all);
  std::vector<at::Tensor> parts;
  for (size_t q = 0; q < counts.size(); ++q) parts.push_back(all[q].slice(0, 0, counts[q]));
  return at::cat(parts);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  std::vector<int64_t> counts = host_vector(in[2]);
  at::Tensor masks = gather_objects(*ctx.comm, in[0].to(at::kFloat), counts);
  at::Tensor scores = gather_objects(*ctx.comm, in[1].to(at::kFloat), counts);
  const at::Tensor& last = in[3];

  at::Tensor binary = masks.flatten(1).gt(0).to(at::kFloat);
  at::Tensor inter = at::mm(binary, binary.t());  // exact counts
  at::Tensor area = binary.sum(1);
  at::Tensor iou = inter / (area.unsqueeze(1) + area.unsqueeze(0) - inter).clamp_min(1);
  const int64_t n = masks.size(0);
  at::Tensor pair = iou.ge(kIouThreshold) & ~at::eye(n, iou.options().dtype(at::kBool));
  // Row a, column b: a was occluded more recently than b, and b was occluded at all.
  at::Tensor newer = last.unsqueeze(1).gt(last.unsqueeze(0)) & last.unsqueeze(0).gt(-1);
  at::Tensor suppress = (pair & newer).any(1);
  masks = masks.masked_fill(suppress.view({n, 1, 1}), -10.0);
  return {masks, scores, suppress};
}

// One object pair at a time, from the definition: counts of positive pixels, IoU in double.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> masks, scores;
  for (const auto& r : in) {
    masks.push_back(r[0].to(at::kDouble));
    scores.push_back(r[1].to(at::kDouble));
  }
  at::Tensor all = at::cat(masks), positive = all.gt(0);
  auto last = in[0][3].accessor<int64_t, 1>();
  const int64_t n = all.size(0);
  std::vector<bool> suppress(n, false);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      double both = (positive[i] & positive[j]).sum().item<double>();
      double either = positive[i].sum().item<double>() + positive[j].sum().item<double>() - both;
      if (both / std::max(1.0, either) < kIouThreshold) continue;
      if (last[i] > last[j] && last[j] > -1) suppress[i] = true;
      if (last[j] > last[i] && last[i] > -1) suppress[j] = true;
    }
  at::Tensor flags = at::zeros({n}, at::kBool);
  for (int64_t i = 0; i < n; ++i)
    if (suppress[i]) {
      flags[i] = true;
      all[i].fill_(-10.0);
    }
  Tensors out = {all.to(at::kFloat), at::cat(scores).to(at::kFloat), flags};
  return std::vector<Tensors>(ctx.world, out);
}

// Masks 0.5 z + 4 [(y + x + p) mod 5 == 0] - 1 (each op rounded to the dtype), p = (i + r) mod 2; scores
// linspace(-5, 5, n_r); counts 1 + d % 3; last_occluded ((j + 1) mod 5) - 1.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const auto dtype = raw[0].scalar_type();
  const int64_t objects = raw[0].size(0), h = raw[0].size(1), w = raw[0].size(2);
  at::Tensor diagonal = at::arange(h, at::kLong).unsqueeze(1) + at::arange(w, at::kLong).unsqueeze(0);
  std::vector<at::Tensor> patterns;
  for (int64_t i = 0; i < objects; ++i) patterns.push_back((diagonal + (i + rank) % 2).remainder(5).eq(0).to(dtype));
  raw[0] = (raw[0] * 0.5 + at::stack(patterns) * 4) - 1;
  raw[1] = at::linspace(-5, 5, objects, at::TensorOptions().dtype(at::kFloat)).to(dtype);
  raw[2] = at::arange(ctx.world, at::kLong).remainder(3) + 1;
  raw[3] = (at::arange(raw[3].size(0), at::kLong) + 1).remainder(5) - 1;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("sam3_allgather_iou_suppression", reference, oracle, prepare);

}  // namespace problem_081
