// Problem 59: both parts of the complex result are checked. An R2C rfft2 of the whole field and the two FFTs in
// the other order (along Wd first) pass; the opposite sign convention (a conjugated result), a missing ortho
// factor and an output whose imaginary part is dropped (which PKB's real-part-only check passes) fail.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_059 {  // named, not anonymous: the references build as unity batches

enum class Variant { rfft2, width_first, conjugated, no_ortho, real_only };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Variant v) {
  const int W = static_cast<int>(in.size());
  std::vector<at::Tensor> blocks;
  for (const auto& r : in) blocks.push_back(r[0]);
  at::Tensor field = at::cat(blocks, 2);  // fp32
  const int64_t Wd = field.size(2), Hl = field.size(1) / W;
  at::Tensor s;
  if (v == Variant::width_first) {
    s = at::fft_fft(at::fft_rfft(field, c10::nullopt, 2, "ortho"), c10::nullopt, 1, "ortho");
  } else {
    s = at::fft_rfft2(field, c10::nullopt, {1, 2}, v == Variant::no_ortho ? "backward" : "ortho");
  }
  if (v == Variant::conjugated) s = s.conj().resolve_conj();
  at::Tensor real = at::view_as_real(s.contiguous()).clone();
  if (v == Variant::real_only) real.select(3, 1).zero_();
  EXPECT_EQ(real.size(2), Wd / 2 + 1);
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({real.slice(1, r * Hl, (r + 1) * Hl).contiguous()});
  return out;
}

bool passes(pkb::Policy p, const pkb::ProblemSpec& s, const std::vector<pkb::Tensors>& got,
            const std::vector<pkb::Tensors>& want) {
  for (size_t r = 0; r < got.size(); ++r)
    if (!pkb::compare(p, got[r][0], want[r][0], s.tolerance, at::kFloat).pass) return false;
  return true;
}

TEST(Problem059, HonestFftsPassWrongConventionsFail) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/059_physicsnemo_distributed_rfft");
  for (int W : {3, 4}) {
    auto run = pkb::resolve_run(s, W, pkb::DType::bf16, s.test_parameters);
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto want = pkb::expected_outputs(s, run, in);
    EXPECT_TRUE(passes(pkb::Policy::robust, s, candidate(in, Variant::rfft2), want)) << "W=" << W;
    EXPECT_TRUE(passes(pkb::Policy::robust, s, candidate(in, Variant::width_first), want)) << "W=" << W;
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Variant::conjugated), want)) << "W=" << W;
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Variant::no_ortho), want)) << "W=" << W;
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Variant::real_only), want)) << "W=" << W;
  }
}

}  // namespace check_059
