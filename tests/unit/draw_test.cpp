// The torch-free generator's conversions (inputs/draw.h) against libtorch's: pkb-candidate hands candidates bytes
// converted by this code, the reference pass tensors whose bytes it made, so they must be the bytes ATen makes.
#include "inputs/draw.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <random>

#include "core/sha256.h"
#include "inputs/inputs.h"
#include "spec/problem_spec.h"
#include "test_util.h"

namespace {

// Every exponent, both signs, mantissas with ties and near-ties for both targets, subnormals, infinities and NaN.
std::vector<float> awkward_floats() {
  std::vector<float> v = {0.f,      -0.f,     1.f,     -1.f,    65504.f,  65519.99f, 65520.f,   65536.f, 1e-8f,
                          5.96e-8f, 2.98e-8f, 6.1e-5f, 3.4e38f, -3.4e38f, INFINITY,  -INFINITY, NAN,     1.401e-45f};
  std::mt19937 rng(7);
  for (uint32_t exponent = 0; exponent < 256; ++exponent)
    for (uint32_t low : {0x0000u, 0x8000u, 0x7FFFu, 0x8001u, 0x18000u, 0x1000u, 0x0FFFu, 0x1001u, 0x3000u, 0x2000u}) {
      for (uint32_t sign : {0u, 1u}) {
        uint32_t bits = (sign << 31) | (exponent << 23) | ((rng() & 0x7F0000u) | low) % (1u << 23);
        float f;
        std::memcpy(&f, &bits, 4);
        v.push_back(f);
      }
    }
  for (int i = 0; i < 20000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    v.push_back(f);
  }
  return v;
}

TEST(Draw, HalfWidthRoundingMatchesC10) {
  for (float f : awkward_floats()) {
    uint16_t bf = c10::BFloat16(f).x, half = c10::Half(f).x;
    if (std::isnan(f)) {  // any NaN encoding is a NaN; ours are quiet
      EXPECT_EQ(pkb::float_to_bf16_bits(f) & 0x7FC0, 0x7FC0);
      EXPECT_EQ(pkb::float_to_f16_bits(f) & 0x7E00, 0x7E00);
      continue;
    }
    EXPECT_EQ(pkb::float_to_bf16_bits(f), bf) << std::hexfloat << f;
    EXPECT_EQ(pkb::float_to_f16_bits(f), half) << std::hexfloat << f;
  }
}

// fp32 and int64 (what the distributions draw) to every dtype, as Tensor::to converts, on values each target holds.
TEST(Draw, ConversionsMatchTensorTo) {
  std::mt19937_64 rng(3);
  const int64_t n = 4096;
  pkb::HostTensor floats("f", pkb::DType::f32, {n}), ints("i", pkb::DType::i64, {n});
  std::normal_distribution<float> normal(0.f, 40.f);
  for (int64_t i = 0; i < n; ++i) {
    floats.as<float>()[i] = i % 7 == 0 ? 0.f : std::clamp(normal(rng), -127.f, 127.f);
    ints.as<int64_t>()[i] = i % 5 == 0 ? 0 : static_cast<int64_t>(rng() % 255) - 127;
  }
  for (const pkb::HostTensor* from : {&floats, &ints}) {
    at::Tensor source = at::from_blob(from->data.get(), {n}, at::TensorOptions().dtype(pkb::to_aten(from->dtype)));
    for (pkb::DType to : {pkb::DType::bf16, pkb::DType::f16, pkb::DType::f32, pkb::DType::f64, pkb::DType::i8,
                          pkb::DType::i16, pkb::DType::i32, pkb::DType::i64, pkb::DType::boolean}) {
      pkb::HostTensor ours = pkb::convert_host_tensor(*from, to);
      at::Tensor theirs = source.to(pkb::to_aten(to)).contiguous();
      ASSERT_EQ(ours.bytes, static_cast<size_t>(theirs.numel() * theirs.element_size()));
      EXPECT_TRUE(ours.same_bytes(theirs.data_ptr())) << pkb::dtype_name(from->dtype) << " -> " << pkb::dtype_name(to);
    }
  }
  // Non-negative values to uint8, and fractions to integers (truncation toward zero).
  pkb::HostTensor fractions("q", pkb::DType::f32, {4});
  float values[] = {2.75f, -2.75f, 0.5f, 200.25f};
  std::memcpy(fractions.data.get(), values, sizeof values);
  EXPECT_EQ(pkb::convert_host_tensor(fractions, pkb::DType::i32).as<int32_t>()[1], -2);
  EXPECT_EQ(pkb::convert_host_tensor(fractions, pkb::DType::u8).as<uint8_t>()[3], 200);
}

TEST(Draw, ConvertsFromTheDrawnDtypesOnly) {
  pkb::HostTensor halves("h", pkb::DType::bf16, {2});
  EXPECT_THROW(pkb::convert_host_tensor(halves, pkb::DType::f32), pkb::Error);
}

// Every distribution into every dtype it is drawn as, replicated and per rank, odd lengths (a normal pair cut in half).
pkb::ProblemSpec every_draw(pkb::test::TempDir& tmp) {
  pkb::test::write_file(tmp.path() / "009_draws/problem.json", R"({
    "id": 9, "slug": "draws", "title": "t", "category": "other", "source": "s", "description": "d",
    "world_size": {"min": 1}, "parameters": {"M": 37, "N": 5},
    "inputs": [
      {"name": "n", "shape": ["M", "N"], "init": {"dist": "normal", "mean": 3, "std": 2}},
      {"name": "n64", "shape": ["M"], "dtype": "fp64", "init": {"dist": "normal"}},
      {"name": "nf", "shape": ["M"], "dtype": "fp32", "replicated": true, "init": {"dist": "normal", "std": 0.5}},
      {"name": "u", "shape": ["M", "N"], "init": {"dist": "uniform", "low": -1, "high": 1}},
      {"name": "u16", "shape": ["M"], "dtype": "fp16", "init": {"dist": "uniform", "low": 0, "high": 4}},
      {"name": "ui", "shape": ["M"], "dtype": "int32", "init": {"dist": "uniform", "low": -9, "high": 9}},
      {"name": "b", "shape": ["M"], "dtype": "bool", "init": {"dist": "bernoulli", "p": 0.3}},
      {"name": "bf", "shape": ["M"], "dtype": "fp32", "init": {"dist": "bernoulli", "p": 0.7}},
      {"name": "ri", "shape": ["M", "N"], "dtype": "int64", "init": {"dist": "randint", "low": -3, "high": "N + 7"}},
      {"name": "r8", "shape": ["M"], "dtype": "uint8", "init": {"dist": "randint", "low": 0, "high": 200}},
      {"name": "rb", "shape": ["M"], "dtype": "bf16", "init": {"dist": "randint", "low": 0, "high": 300}},
      {"name": "p", "shape": ["M"], "dtype": "int32", "init": {"dist": "randperm"}}
    ],
    "outputs": [{"name": "y", "shape": ["M"]}],
    "roofline": {"link_bytes": 0, "hbm_bytes": 0, "flops": 0}
  })");
  return pkb::load_problem(tmp.path() / "009_draws");
}

std::string draw_digest(const pkb::ProblemSpec& spec, pkb::DType run_dtype) {
  auto run = pkb::resolve_run(spec, 2, run_dtype);
  std::string all;
  for (int rank : {0, 1})
    for (int trial : {0, 1 << 20})
      for (const pkb::HostTensor& t : pkb::draw_inputs(spec, run, rank, trial, 5))
        all += t.name + std::string(reinterpret_cast<const char*>(t.data.get()), t.bytes);
  return pkb::sha256_hex(all);
}

// The generator's bits are a contract: cached references, saved inputs and the inputs a GPU monitor draws in place
// (runtime/cuda_runtime.cu) must all be these bytes. A change here is a new generator, never a refactoring.
TEST(Draw, TheGeneratorsBitsDoNotChange) {
  pkb::test::TempDir tmp;
  auto spec = every_draw(tmp);
  EXPECT_EQ(draw_digest(spec, pkb::DType::bf16), "fd434214ad456d9c1f90e656f127190747de95973f23e0593af20481101ef126");
  EXPECT_EQ(draw_digest(spec, pkb::DType::f32), "47e9386f485468ac2e45c616b054be0f1002cdfe0b03eb1a32f17bf18e8bb8bb");
}

// The normal draw's log, sin and cos are pkb's own (the GPU's and glibc's differ in the last bit): within one ulp of
// glibc's, and the floats they give are the floats Box-Muller on glibc gives (the generator's bits before they were
// pkb's own), for every pair tried.
TEST(Draw, OwnLogAndSincosAgreeWithGlibc) {
  using namespace pkb::element_draw;
  auto ulps = [](double ours, double theirs) {
    return ours == theirs ? 0.0 : std::fabs(ours - theirs) / std::fabs(std::nextafter(theirs, 0.0) - theirs);
  };
  int64_t differ = 0;
  for (uint64_t j = 0; j < 200000; ++j) {
    const double u1 = uniform01(11, 2 * j), u2 = uniform01(11, 2 * j + 1), angle = 2 * M_PI * u2;
    ASSERT_LE(ulps(log_exact(u1), std::log(u1)), 1.0) << std::hexfloat << u1;
    double s, c;
    sincos_exact(angle, s, c);
    ASSERT_LE(ulps(s, std::sin(angle)), 1.0) << std::hexfloat << angle;
    ASSERT_LE(ulps(c, std::cos(angle)), 1.0) << std::hexfloat << angle;
    pkb::ElementDraw d;
    d.kind = pkb::ElementDraw::Kind::normal, d.seed = 11, d.a = j % 2 ? 3.0 : 0.0, d.b = j % 3 ? 2.0 : 0.5;
    float even, odd;
    normal_pair(d, j, even, odd);
    const double r = d.b * std::sqrt(-2 * std::log(u1));
    differ += even != static_cast<float>(d.a + r * std::cos(angle));
    differ += odd != static_cast<float>(d.a + r * std::sin(angle));
  }
  EXPECT_EQ(differ, 0);
  // The edges: the smallest and largest uniform draws, and angles at the quadrants' boundaries.
  for (double u : {0x1p-54, 1 - 0x1p-54, 0.5, 0x1.6a09e667f3bcdp-1}) EXPECT_LE(ulps(log_exact(u), std::log(u)), 1.0);
  for (double a : {0.0, M_PI / 4, M_PI / 2, M_PI, 3 * M_PI / 2, 2 * M_PI - 1e-12}) {
    double s, c;
    sincos_exact(a, s, c);
    EXPECT_NEAR(s, std::sin(a), 1e-15);
    EXPECT_NEAR(c, std::cos(a), 1e-15);
  }
}

}  // namespace
