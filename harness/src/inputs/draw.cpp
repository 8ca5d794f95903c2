#include "inputs/draw.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

// Uniform in (0, 1): 53 random bits, never exactly 0 (safe for log in Box-Muller).
double uniform01(uint64_t seed, uint64_t i) {
  return (static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 11) + 0.5) * 0x1p-53;
}

uint32_t float_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

// Stores float values as the input's dtype inside the generating loop (one pass over the memory, on pkb's own
// threads); dtypes other than the three float widths are drawn as fp32 and converted by the caller.
template <class Body>
HostTensor fill_floats(const std::string& name, const std::vector<int64_t>& shape, DType dtype, int64_t grain,
                       int64_t units, Body body) {
  if (dtype != DType::bf16 && dtype != DType::f16) dtype = DType::f32;
  HostTensor t(name, dtype, shape);
  void* data = t.data.get();
  parallel_ranges(units, grain, [&](int64_t b, int64_t e) {
    switch (dtype) {
      case DType::bf16:
        body(b, e, [p = static_cast<uint16_t*>(data)](int64_t i, float v) { p[i] = float_to_bf16_bits(v); });
        break;
      case DType::f16:
        body(b, e, [p = static_cast<uint16_t*>(data)](int64_t i, float v) { p[i] = float_to_f16_bits(v); });
        break;
      default:
        body(b, e, [p = static_cast<float*>(data)](int64_t i, float v) { p[i] = v; });
    }
  });
  return t;
}

HostTensor fill(const std::string& name, const Distribution& d, const std::vector<int64_t>& shape, uint64_t seed,
                const Variables& vars, DType dtype) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  switch (d.kind) {
    case Distribution::Kind::uniform:
      return fill_floats(name, shape, dtype, 1 << 14, n, [&](int64_t b, int64_t e, auto store) {
        for (int64_t i = b; i < e; ++i) store(i, static_cast<float>(d.low + (d.high - d.low) * uniform01(seed, 2 * i)));
      });
    case Distribution::Kind::normal:
      // Box-Muller, both values of each pair: elements 2j and 2j+1 share (u1, u2) of pair j. Generating inputs
      // is on the path of every timed evaluation (one fresh copy per call), so half the logarithms count.
      return fill_floats(name, shape, dtype, 1 << 13, (n + 1) / 2, [&](int64_t b, int64_t e, auto store) {
        for (int64_t j = b; j < e; ++j) {
          double u1 = uniform01(seed, 2 * j), u2 = uniform01(seed, 2 * j + 1);
          double r = d.std * std::sqrt(-2 * std::log(u1)), angle = 2 * M_PI * u2;
          store(2 * j, static_cast<float>(d.mean + r * std::cos(angle)));
          if (2 * j + 1 < n) store(2 * j + 1, static_cast<float>(d.mean + r * std::sin(angle)));
        }
      });
    case Distribution::Kind::bernoulli:
      return fill_floats(name, shape, dtype, 1 << 14, n, [&](int64_t b, int64_t e, auto store) {
        for (int64_t i = b; i < e; ++i) store(i, uniform01(seed, i) < d.p ? 1.f : 0.f);
      });
    case Distribution::Kind::randint: {
      int64_t lo = d.int_low.eval(vars), hi = d.int_high.eval(vars);
      if (hi <= lo)
        throw Error("randint: high (" + std::to_string(hi) + ") must exceed low (" + std::to_string(lo) + ")");
      HostTensor t(name, DType::i64, shape);
      int64_t* p = t.as<int64_t>();
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
      HostTensor t(name, DType::i64, shape);
      int64_t* p = t.as<int64_t>();
      std::iota(p, p + n, int64_t{0});
      for (int64_t i = n - 1; i > 0; --i) {
        auto j =
            static_cast<int64_t>((static_cast<unsigned __int128>(splitmix64(seed ^ splitmix64(i))) * (i + 1)) >> 64);
        std::swap(p[i], p[j]);
      }
      return t;
    }
  }
  throw Error("unknown distribution");
}

template <class From, class To>
To convert_one(From v) {
  if constexpr (std::is_same_v<To, bool>) return v != From{0};
  // A negative float to an unsigned type is undefined in C++; through int64 it wraps as ATen's cast does.
  else if constexpr (std::is_floating_point_v<From> && std::is_unsigned_v<To>)
    return static_cast<To>(static_cast<int64_t>(v));
  else
    return static_cast<To>(v);
}

template <class From>
void convert_elements(const From* src, HostTensor& out) {
  const int64_t n = out.numel();
  auto each = [&](auto* dst, auto cast) {
    parallel_ranges(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) dst[i] = cast(src[i]);
    });
  };
  switch (out.dtype) {
    case DType::bf16:
      return each(out.as<uint16_t>(), [](From v) { return float_to_bf16_bits(static_cast<float>(v)); });
    case DType::f16:
      return each(out.as<uint16_t>(), [](From v) { return float_to_f16_bits(static_cast<float>(v)); });
    case DType::f32:
      return each(out.as<float>(), convert_one<From, float>);
    case DType::f64:
      return each(out.as<double>(), convert_one<From, double>);
    case DType::i8:
      return each(out.as<int8_t>(), convert_one<From, int8_t>);
    case DType::u8:
      return each(out.as<uint8_t>(), convert_one<From, uint8_t>);
    case DType::i16:
      return each(out.as<int16_t>(), convert_one<From, int16_t>);
    case DType::i32:
      return each(out.as<int32_t>(), convert_one<From, int32_t>);
    case DType::i64:
      return each(out.as<int64_t>(), convert_one<From, int64_t>);
    case DType::boolean:
      return each(out.as<bool>(), convert_one<From, bool>);
  }
}

}  // namespace

uint16_t float_to_bf16_bits(float v) {
  if (std::isnan(v)) return 0x7FC0;
  uint32_t u = float_bits(v);
  // Adding 0x7FFF plus the kept part's lowest bit rounds the dropped 16 bits to nearest, ties to even.
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

uint16_t float_to_f16_bits(float v) {
  const uint32_t u = float_bits(v);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, in units of 2^-24 (the scaling is exact; nearbyint rounds ties to even, and
    // a value that rounds up to 1024 units is the smallest normal's encoding).
    return sign | static_cast<uint16_t>(std::nearbyint(std::fabs(v) * 0x1p24f));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15, mantissa = magnitude & 0x7FFFFFu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t dropped = mantissa & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;  // a carry moves into the exponent
  return sign | static_cast<uint16_t>(half);
}

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

std::vector<HostTensor> draw_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial,
                                    uint64_t base_seed) {
  std::vector<HostTensor> out;
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
    DType dtype = tensor_dtype(t, run);
    HostTensor values = with_context(
        "input '" + t.name + "'", [&] { return fill(t.name, t.init, tensor_shape(t, run, rank), seed, vars, dtype); });
    out.push_back(values.dtype == dtype ? std::move(values) : convert_host_tensor(values, dtype));
  }
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
