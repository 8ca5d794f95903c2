// The torch-free generator's conversions (inputs/draw.h) against libtorch's: pkb-candidate hands candidates bytes
// converted by this code, the reference pass tensors whose bytes it made, so they must be the bytes ATen makes.
#include "inputs/draw.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <random>

#include "inputs/inputs.h"

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

}  // namespace
