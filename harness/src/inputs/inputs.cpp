#include "inputs/inputs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/parallel.h"
#include "inputs/splitmix.h"
#include "reference/reference.h"

namespace pkb {
namespace {

uint64_t mix(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (uint64_t p : parts) h = splitmix64(h ^ p);
  return h;
}

// Uniform in (0, 1): 53 random bits, never exactly 0 (safe for log in Box-Muller).
double uniform01(uint64_t seed, uint64_t i) {
  return (static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 11) + 0.5) * 0x1p-53;
}

// Stores float values as the input's dtype inside the generating loop: converting afterwards with ATen's `to` ran
// one more pass in ATen's OpenMP pool, whose threads then spin while pkb's own threads generate the next copy
// (on the H200 node: 8 of them per rank against 8 generating threads). The conversions round like ATen's.
template <class Body>
at::Tensor fill_floats(const std::vector<int64_t>& shape, at::ScalarType dtype, int64_t grain, int64_t units,
                       Body body) {
  if (dtype != at::kBFloat16 && dtype != at::kHalf) dtype = at::kFloat;  // other dtypes: converted by the caller
  at::Tensor t = at::empty(shape, dtype);
  void* data = t.data_ptr();
  parallel_ranges(units, grain, [&](int64_t b, int64_t e) {
    switch (dtype) {
      case at::kBFloat16:
        body(b, e, [p = static_cast<c10::BFloat16*>(data)](int64_t i, float v) { p[i] = c10::BFloat16(v); });
        break;
      case at::kHalf:
        body(b, e, [p = static_cast<c10::Half*>(data)](int64_t i, float v) { p[i] = c10::Half(v); });
        break;
      default:
        body(b, e, [p = static_cast<float*>(data)](int64_t i, float v) { p[i] = v; });
    }
  });
  return t;
}

at::Tensor fill(const Distribution& d, const std::vector<int64_t>& shape, uint64_t seed, const Variables& vars,
                at::ScalarType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  switch (d.kind) {
    case Distribution::Kind::uniform:
      return fill_floats(shape, dtype, 1 << 14, n, [&](int64_t b, int64_t e, auto store) {
        for (int64_t i = b; i < e; ++i) store(i, static_cast<float>(d.low + (d.high - d.low) * uniform01(seed, 2 * i)));
      });
    case Distribution::Kind::normal:
      // Box-Muller, both values of each pair: elements 2j and 2j+1 share (u1, u2) of pair j. Generating inputs
      // is on the path of every timed evaluation (one fresh copy per call), so half the logarithms count.
      return fill_floats(shape, dtype, 1 << 13, (n + 1) / 2, [&](int64_t b, int64_t e, auto store) {
        for (int64_t j = b; j < e; ++j) {
          double u1 = uniform01(seed, 2 * j), u2 = uniform01(seed, 2 * j + 1);
          double r = d.std * std::sqrt(-2 * std::log(u1)), angle = 2 * M_PI * u2;
          store(2 * j, static_cast<float>(d.mean + r * std::cos(angle)));
          if (2 * j + 1 < n) store(2 * j + 1, static_cast<float>(d.mean + r * std::sin(angle)));
        }
      });
    case Distribution::Kind::bernoulli:
      return fill_floats(shape, dtype, 1 << 14, n, [&](int64_t b, int64_t e, auto store) {
        for (int64_t i = b; i < e; ++i) store(i, uniform01(seed, i) < d.p ? 1.f : 0.f);
      });
    case Distribution::Kind::randint: {
      int64_t lo = d.int_low.eval(vars), hi = d.int_high.eval(vars);
      if (hi <= lo)
        throw Error("randint: high (" + std::to_string(hi) + ") must exceed low (" + std::to_string(lo) + ")");
      at::Tensor t = at::empty(shape, at::kLong);
      int64_t* p = t.data_ptr<int64_t>();
      uint64_t span = static_cast<uint64_t>(hi - lo);
      parallel_ranges(n, 1 << 14, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          p[i] = lo +
                 static_cast<int64_t>((static_cast<unsigned __int128>(splitmix64(seed ^ splitmix64(i))) * span) >> 64);
      });
      return t;
    }
    case Distribution::Kind::randperm: {
      // A permutation of 0..n-1 (Fisher-Yates), laid out in the tensor's shape.
      at::Tensor t = at::empty(shape, at::kLong);
      int64_t* p = t.data_ptr<int64_t>();
      std::iota(p, p + n, int64_t{0});
      for (int64_t i = n - 1; i > 0; --i) {
        auto j =
            static_cast<int64_t>((static_cast<unsigned __int128>(splitmix64(seed ^ splitmix64(i))) * (i + 1)) >> 64);
        std::swap(p[i], p[j]);
      }
      return t;
    }
  }
  return {};
}

}  // namespace

at::ScalarType to_aten(DType d) {
  switch (d) {
    case DType::bf16:
      return at::kBFloat16;
    case DType::f16:
      return at::kHalf;
    case DType::f32:
      return at::kFloat;
    case DType::f64:
      return at::kDouble;
    case DType::i8:
      return at::kChar;
    case DType::u8:
      return at::kByte;
    case DType::i16:
      return at::kShort;
    case DType::i32:
      return at::kInt;
    case DType::i64:
      return at::kLong;
    case DType::boolean:
      return at::kBool;
  }
  return at::kFloat;
}

DType from_aten(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return DType::bf16;
    case at::kHalf:
      return DType::f16;
    case at::kFloat:
      return DType::f32;
    case at::kDouble:
      return DType::f64;
    case at::kChar:
      return DType::i8;
    case at::kByte:
      return DType::u8;
    case at::kShort:
      return DType::i16;
    case at::kInt:
      return DType::i32;
    case at::kLong:
      return DType::i64;
    case at::kBool:
      return DType::boolean;
    default:
      throw Error(std::string("unsupported tensor dtype ") + c10::toString(t));
  }
}

RankInputs make_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial, uint64_t base_seed) {
  RankInputs out;
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
    uint64_t seed = mix({base_seed, static_cast<uint64_t>(spec.id), static_cast<uint64_t>(trial), i, rank_part});
    at::ScalarType dtype = to_aten(tensor_dtype(t, run));
    at::Tensor values = with_context("input '" + t.name + "'",
                                     [&] { return fill(t.init, tensor_shape(t, run, rank), seed, vars, dtype); });
    out.tensors.push_back(values.scalar_type() == dtype ? values : values.to(dtype));
    out.names.push_back(t.name);
  }
  const ReferenceImpl* impl = find_reference(spec.slug);
  if (impl && impl->prepare) {
    OracleContext ctx = oracle_context(spec, run);
    Tensors prepared = impl->prepare(ctx, rank, out.tensors);
    if (prepared.size() != out.tensors.size()) throw Error(spec.folder() + ": prepare changed the number of inputs");
    for (size_t i = 0; i < prepared.size(); ++i)
      if (prepared[i].sizes() != out.tensors[i].sizes() || prepared[i].scalar_type() != out.tensors[i].scalar_type())
        throw Error(spec.folder() + ": prepare changed the shape or dtype of input '" + out.names[i] + "'");
    out.tensors = std::move(prepared);
  }
  return out;
}

OracleContext oracle_context(const ProblemSpec& spec, const RunShape& run) {
  OracleContext ctx;
  ctx.world = run.world;
  ctx.params = run.params;
  ctx.scalars = scalar_values(spec, run);
  ctx.float_dtype = to_aten(run.float_dtype);
  ctx.groups = group_layout(spec, run);
  return ctx;
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
