// Element i of a drawn input as a pure function of (the draw, i): pkb's counter-based generator, for the host
// (inputs/draw.cpp, every input pkb makes) and for the GPU (a monitor drawing a timing copy straight into its slot,
// runtime/cuda_runtime.cu), one definition for both. Integer operations and correctly rounded + - * / and sqrt only,
// each rounded on its own (never fused: a fused multiply-add rounds once where the host rounds twice), so the device
// gives the host's bits for every distribution. The normal's log, sin and cos are therefore pkb's own (log_exact,
// sincos_exact): the platforms' differ in the last bit. The subtractions are written plainly: nothing fuses them.
// Guarded by ctest: the device kernel's PTX has no fused operation (tests/unit/draw_kernel_ptx.py), the host loop is
// compiled with -ffp-contract=off (CMakeLists.txt), and a digest pins the bits (tests/unit/draw_test.cpp).
#pragma once

#include <math.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/splitmix.h"

namespace pkb {

struct ElementDraw {
  enum class Kind : uint8_t { uniform, normal, bernoulli, randint };
  Kind kind = Kind::uniform;
  DType dtype = DType::f32;  // what is stored: floats convert as the host's conversion does
  uint64_t seed = 0;
  double a = 0, b = 1;  // uniform: [a, b); normal: mean a, standard deviation b; bernoulli: p = a
  int64_t int_low = 0;  // randint: [int_low, int_low + span)
  uint64_t span = 1;
};

// Stores elements [0, n) of `d` into dst (host memory, d.dtype's layout), on pkb's host threads when n is large.
void draw_elements(const ElementDraw& d, void* dst, int64_t n);

namespace element_draw {

PKB_HD inline double add_rn(double x, double y) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(x, y);
#else
  return x + y;
#endif
}
PKB_HD inline double mul_rn(double x, double y) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(x, y);
#else
  return x * y;
#endif
}

// Uniform in (0, 1): 53 random bits, never exactly 0 (safe for log in Box-Muller).
PKB_HD inline double uniform01(uint64_t seed, uint64_t i) {
  return mul_rn(add_rn(static_cast<double>(splitmix64(seed ^ splitmix64(i)) >> 11), 0.5), 0x1p-53);
}

PKB_HD inline double div_rn(double x, double y) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(x, y);
#else
  return x / y;
#endif
}
PKB_HD inline double sqrt_rn(double x) {
#ifdef __CUDA_ARCH__
  return __dsqrt_rn(x);
#else
  return sqrt(x);
#endif
}
PKB_HD inline uint64_t double_bits(double v) {
#ifdef __CUDA_ARCH__
  return static_cast<uint64_t>(__double_as_longlong(v));
#else
  return __builtin_bit_cast(uint64_t, v);
#endif
}
PKB_HD inline double bits_double(uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double(static_cast<long long>(u));
#else
  return __builtin_bit_cast(double, u);
#endif
}

// Horner's rule over c[0] + c[1] z + ... + c[n-1] z^(n-1), each step rounded on its own.
template <int n>
PKB_HD inline double polynomial(const double (&c)[n], double z) {
  double p = c[n - 1];
  for (int i = n - 2; i >= 0; --i) p = add_rn(c[i], mul_rn(z, p));
  return p;
}

// The natural logarithm of a positive normal double, within about one ulp, from + - * / alone (not the platform's
// log, whose last bit differs between glibc and CUDA): x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
// log m = 2 atanh(s), s = (m - 1) / (m + 1), as its series in s^2 (|s| <= 0.172: eleven terms reach 2^-56), and
// e log 2 in two parts whose first times e is exact. The constants are the correctly rounded values of the
// series' coefficients 2 / (2k + 3) and of the splits of log 2.
PKB_HD inline double log_exact(double x) {
  constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0, kLn2Hi = 0x1.62e42fefa0000p-1, kLn2Lo = 0x1.cf79abc9e3b3ap-40;
  constexpr double kSeries[] = {0x1.5555555555555p-1, 0x1.999999999999ap-2, 0x1.2492492492492p-2, 0x1.c71c71c71c71cp-3,
                                0x1.745d1745d1746p-3, 0x1.3b13b13b13b14p-3, 0x1.1111111111111p-3, 0x1.e1e1e1e1e1e1ep-4,
                                0x1.af286bca1af28p-4, 0x1.8618618618618p-4, 0x1.642c8590b2164p-4};
  const uint64_t bits = double_bits(x);
  int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  double m = bits_double((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);  // [1, 2)
  if (m > kSqrt2) m = mul_rn(m, 0.5), ++e;
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = div_rn(f, add_rn(2.0, f)), z = mul_rn(s, s);
  const double log_m = add_rn(mul_rn(2.0, s), mul_rn(mul_rn(s, z), polynomial(kSeries, z)));
  const double de = static_cast<double>(e);
  return add_rn(mul_rn(de, kLn2Hi), add_rn(mul_rn(de, kLn2Lo), log_m));
}

// sin and cos of a in [0, 2 pi], within a few ulp, from + - * alone: a = k pi/2 + r with |r| <= pi/4 (pi/2 in
// three parts, the first two 33 bits long, so that k times each is exact), then the Taylor series of sin r and
// cos r to r^21 and r^20, and the quadrant k mod 4. Coefficients: the correctly rounded 1/n!.
PKB_HD inline void sincos_exact(double a, double& sin_a, double& cos_a) {
  constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1, kPio2First = 0x1.921fb54400000p+0,
                   kPio2Second = 0x1.0b4611a600000p-34, kPio2Third = 0x1.3198a2e037073p-69;
  constexpr double kSin[] = {-0x1.5555555555555p-3,  0x1.1111111111111p-7,   -0x1.a01a01a01a01ap-13,
                             0x1.71de3a556c734p-19,  -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33,
                             -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,  -0x1.2f49b46814157p-57,
                             0x1.71b8ef6dcf572p-66};
  constexpr double kCos[] = {-0x1.0000000000000p-1,  0x1.5555555555555p-5,   -0x1.6c16c16c16c17p-10,
                             0x1.a01a01a01a01ap-16,  -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29,
                             -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45,  -0x1.6827863b97d97p-53,
                             0x1.e542ba4020225p-62};
  const double k = floor(add_rn(mul_rn(a, kTwoOverPi), 0.5));
  const double r = ((a - mul_rn(k, kPio2First)) - mul_rn(k, kPio2Second)) - mul_rn(k, kPio2Third);
  const double z = mul_rn(r, r);
  const double s = add_rn(r, mul_rn(mul_rn(r, z), polynomial(kSin, z)));
  const double c = add_rn(1.0, mul_rn(z, polynomial(kCos, z)));
  switch (static_cast<int>(k) & 3) {
    case 0:
      sin_a = s, cos_a = c;
      return;
    case 1:
      sin_a = c, cos_a = -s;
      return;
    case 2:
      sin_a = -s, cos_a = -c;
      return;
    default:
      sin_a = -c, cos_a = s;
  }
}

// Box-Muller, both values of pair j: elements 2j and 2j+1 share (u1, u2).
PKB_HD inline void normal_pair(const ElementDraw& d, uint64_t j, float& even, float& odd) {
  constexpr double kTwoPi = 0x1.921fb54442d18p+2;  // 2 pi, correctly rounded (2 * M_PI)
  const double u1 = uniform01(d.seed, 2 * j), u2 = uniform01(d.seed, 2 * j + 1);
  const double r = mul_rn(d.b, sqrt_rn(mul_rn(-2.0, log_exact(u1)))), angle = mul_rn(kTwoPi, u2);
  double sin_angle, cos_angle;
  sincos_exact(angle, sin_angle, cos_angle);
  even = static_cast<float>(add_rn(d.a, mul_rn(r, cos_angle)));
  odd = static_cast<float>(add_rn(d.a, mul_rn(r, sin_angle)));
}

// A float distribution's element i (uniform, normal, bernoulli).
PKB_HD inline float float_element(const ElementDraw& d, int64_t i) {
  const auto u = static_cast<uint64_t>(i);
  switch (d.kind) {
    case ElementDraw::Kind::normal: {
      float even, odd;
      normal_pair(d, u / 2, even, odd);
      return u % 2 ? odd : even;
    }
    case ElementDraw::Kind::bernoulli:
      return uniform01(d.seed, u) < d.a ? 1.f : 0.f;
    default:
      return static_cast<float>(add_rn(d.a, mul_rn(d.b - d.a, uniform01(d.seed, 2 * u))));
  }
}

// randint's element i: the 64-bit draw scaled into [0, span) by its high half.
PKB_HD inline int64_t int_element(const ElementDraw& d, int64_t i) {
  const uint64_t x = splitmix64(d.seed ^ splitmix64(static_cast<uint64_t>(i)));
#ifdef __CUDA_ARCH__
  const uint64_t scaled = __umul64hi(x, d.span);
#else
  const auto scaled = static_cast<uint64_t>((static_cast<unsigned __int128>(x) * d.span) >> 64);
#endif
  return d.int_low + static_cast<int64_t>(scaled);
}

PKB_HD inline uint32_t float_bits(float v) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(v);
#else
  return __builtin_bit_cast(uint32_t, v);
#endif
}

// float to bfloat16 / IEEE half bits, rounding to nearest even (NaN stays a quiet NaN), as c10::BFloat16 and
// c10::Half convert.
PKB_HD inline uint16_t bf16_bits(float v) {
  if (v != v) return 0x7FC0;
  const uint32_t u = float_bits(v);
  // Adding 0x7FFF plus the kept part's lowest bit rounds the dropped 16 bits to nearest, ties to even.
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

PKB_HD inline uint16_t f16_bits(float v) {
  const uint32_t u = float_bits(v);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half, in units of 2^-24 (the scaling is exact; nearbyint rounds ties to even, and
    // a value that rounds up to 1024 units is the smallest normal's encoding).
    return sign | static_cast<uint16_t>(nearbyintf(fabsf(v) * 0x1p24f));
  }
  const uint32_t exponent = (magnitude >> 23) - 127 + 15, mantissa = magnitude & 0x7FFFFFu;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  const uint32_t dropped = mantissa & 0x1FFFu;
  if (dropped > 0x1000u || (dropped == 0x1000u && (half & 1u))) ++half;  // a carry moves into the exponent
  return sign | static_cast<uint16_t>(half);
}

// One value of the drawn type (float or int64) into element i of dst as `dtype`, converting as a C++ cast does
// (float to integer truncates; anything to bool is "!= 0"; a negative float to an unsigned type wraps through int64),
// as ATen's Tensor::to does for these pairs.
template <class From>
PKB_HD inline void store_element(void* dst, DType dtype, int64_t i, From v) {
  switch (dtype) {
    case DType::bf16:
      static_cast<uint16_t*>(dst)[i] = bf16_bits(static_cast<float>(v));
      return;
    case DType::f16:
      static_cast<uint16_t*>(dst)[i] = f16_bits(static_cast<float>(v));
      return;
    case DType::f32:
      static_cast<float*>(dst)[i] = static_cast<float>(v);
      return;
    case DType::f64:
      static_cast<double*>(dst)[i] = static_cast<double>(v);
      return;
    case DType::i8:
      static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(v);
      return;
    case DType::u8:
      static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      return;
    case DType::i16:
      static_cast<int16_t*>(dst)[i] = static_cast<int16_t>(v);
      return;
    case DType::i32:
      static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(v);
      return;
    case DType::i64:
      static_cast<int64_t*>(dst)[i] = static_cast<int64_t>(v);
      return;
    case DType::boolean:
      static_cast<bool*>(dst)[i] = v != From{0};
      return;
  }
}

// Element i of `d`, stored.
PKB_HD inline void draw_element(const ElementDraw& d, void* dst, int64_t i) {
  if (d.kind == ElementDraw::Kind::randint)
    store_element(dst, d.dtype, i, int_element(d, i));
  else
    store_element(dst, d.dtype, i, float_element(d, i));
}

}  // namespace element_draw
}  // namespace pkb
