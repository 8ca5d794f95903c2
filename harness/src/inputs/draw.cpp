#include "inputs/draw.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/element_draw.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/splitmix.h"

namespace pkb {
namespace {

uint64_t mix(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (uint64_t p : parts) h = splitmix64(h ^ p);
  return h;
}

// How input `t` of this run draws its elements: all but randperm element by element (core/element_draw.h).
std::optional<ElementDraw> element_draw_of(const Distribution& d, uint64_t seed, const Variables& vars, DType dtype) {
  ElementDraw e;
  e.seed = seed;
  e.dtype = dtype;
  switch (d.kind) {
    case Distribution::Kind::uniform:
      e.kind = ElementDraw::Kind::uniform, e.a = d.low, e.b = d.high;
      return e;
    case Distribution::Kind::normal:
      e.kind = ElementDraw::Kind::normal, e.a = d.mean, e.b = d.std;
      return e;
    case Distribution::Kind::bernoulli:
      e.kind = ElementDraw::Kind::bernoulli, e.a = d.p;
      return e;
    case Distribution::Kind::randint: {
      int64_t lo = d.int_low.eval(vars), hi = d.int_high.eval(vars);
      if (hi <= lo)
        throw Error("randint: high (" + std::to_string(hi) + ") must exceed low (" + std::to_string(lo) + ")");
      e.kind = ElementDraw::Kind::randint, e.int_low = lo, e.span = static_cast<uint64_t>(hi - lo);
      return e;
    }
    case Distribution::Kind::randperm:
      return std::nullopt;
  }
  throw Error("unknown distribution");
}

// A permutation of 0..n-1 (Fisher-Yates), laid out in the tensor's shape.
HostTensor draw_randperm(const InputDraw& in) {
  HostTensor t(in.name, DType::i64, in.shape);
  int64_t* p = t.as<int64_t>();
  const int64_t n = t.numel();
  std::iota(p, p + n, int64_t{0});
  for (int64_t i = n - 1; i > 0; --i) {
    auto j =
        static_cast<int64_t>((static_cast<unsigned __int128>(splitmix64(in.seed ^ splitmix64(i))) * (i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return in.dtype == DType::i64 ? std::move(t) : convert_host_tensor(t, in.dtype);
}

template <class From>
void convert_elements(const From* src, HostTensor& out) {
  parallel_ranges(out.numel(), 1 << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) element_draw::store_element(out.data.get(), out.dtype, i, src[i]);
  });
}

}  // namespace

uint16_t float_to_bf16_bits(float v) { return element_draw::bf16_bits(v); }
uint16_t float_to_f16_bits(float v) { return element_draw::f16_bits(v); }

HostTensor convert_host_tensor(const HostTensor& from, DType to) {
  HostTensor out(from.name, to, from.shape);
  if (from.dtype == DType::f32)
    convert_elements(from.as<float>(), out);
  else if (from.dtype == DType::i64)
    convert_elements(from.as<int64_t>(), out);
  else
    throw Error(std::string("convert_host_tensor: converts from fp32 or int64, not ") + dtype_name(from.dtype));
  return out;
}

std::vector<InputDraw> input_draws(const ProblemSpec& spec, const RunShape& run, int rank, int trial,
                                   uint64_t base_seed) {
  std::vector<InputDraw> out;
  Variables vars = run.vars(rank);
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (!spec.inputs[i].tensor) continue;
    const TensorSpec& t = *spec.inputs[i].tensor;
    // Replicated inputs draw without the rank, so every rank holds identical bytes.
    uint64_t rank_part = t.replicated ? ~uint64_t{0} : static_cast<uint64_t>(rank);
    // Replicated within a group: the group's color takes the rank's place (offset so it never equals a rank's).
    for (const auto& g : spec.groups)
      if (g.name == t.replicated_in)
        rank_part = (uint64_t{1} << 40) + static_cast<uint64_t>(group_color_key(g, run, rank).first);
    InputDraw in;
    in.name = t.name;
    in.dtype = tensor_dtype(t, run);
    in.shape = tensor_shape(t, run, rank);
    in.seed = mix({base_seed, static_cast<uint64_t>(spec.id), static_cast<uint64_t>(trial), i, rank_part});
    in.element =
        with_context("input '" + t.name + "'", [&] { return element_draw_of(t.init, in.seed, vars, in.dtype); });
    out.push_back(std::move(in));
  }
  return out;
}

HostTensor draw_input(const InputDraw& in) {
  if (!in.element) return draw_randperm(in);
  HostTensor t(in.name, in.dtype, in.shape);
  draw_elements(*in.element, t.data.get(), t.numel());
  return t;
}

std::vector<HostTensor> draw_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial,
                                    uint64_t base_seed) {
  std::vector<HostTensor> out;
  for (const InputDraw& in : input_draws(spec, run, rank, trial, base_seed)) out.push_back(draw_input(in));
  return out;
}

std::map<std::string, int64_t> scalar_values(const ProblemSpec& spec, const RunShape& run) {
  std::map<std::string, int64_t> out;
  for (const auto& in : spec.inputs)
    if (in.scalar) out[in.scalar->name] = in.scalar->value.eval(run.vars());
  return out;
}

std::pair<int, int> group_color_key(const GroupSpec& g, const RunShape& run, int rank) {
  Variables v = run.vars(rank);
  return {static_cast<int>(g.color.eval(v)), static_cast<int>(g.key.eval(v))};
}

std::map<std::string, std::vector<std::vector<int>>> group_layout(const ProblemSpec& spec, const RunShape& run) {
  std::map<std::string, std::vector<std::vector<int>>> out;
  for (const auto& g : spec.groups) {
    std::map<int, std::vector<std::pair<int, int>>> by_color;  // color -> (key, rank)
    for (int r = 0; r < run.world; ++r) {
      auto [color, key] = group_color_key(g, run, r);
      by_color[color].push_back({key, r});
    }
    for (auto& [color, members] : by_color) {
      std::sort(members.begin(), members.end());
      std::vector<int> ranks;
      for (auto& [key, r] : members) ranks.push_back(r);
      out[g.name].push_back(ranks);
    }
  }
  return out;
}

}  // namespace pkb
