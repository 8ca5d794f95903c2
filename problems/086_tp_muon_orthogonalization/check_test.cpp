// Problem 86: an fp32 kernel with another reduction order (the Gram matrix of the gathered X) passes the relative
// tolerance; a local Gram matrix, a local norm and a sixth step fail. Also reports where a bf16 Newton-Schulz lands.
#include <gtest/gtest.h>

#include <cstdio>

#include "check_case.h"

namespace check_086 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::checks;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "086_tp_muon_orthogonalization";

// Whether every check passes; *worst_rel_l2 gets the largest relative L2 error among them (printed below).
bool passes_rel_l2(const Case& c, const std::vector<pkb::Tensors>& got, double* worst_rel_l2) {
  bool ok = true;
  for (const auto& check : checks(c, got)) {
    ok &= check.result.pass;
    *worst_rel_l2 = std::max(*worst_rel_l2, check.result.rel_l2);
  }
  return ok;
}

constexpr double kCoefficients[6][3] = {{4.0848, -6.8946, 2.9270}, {3.9505, -6.3029, 2.6377},
                                        {3.7418, -5.5913, 2.3037}, {2.8769, -3.1427, 1.2046},
                                        {2.8366, -3.0525, 1.2012}, {2.8366, -3.0525, 1.2012}};

enum class Kernel { gathered_fp32, local_gram, local_norm, six_steps, bf16 };

std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  const int W = c.run.world;
  std::vector<at::Tensor> x;
  at::ScalarType t = kernel == Kernel::bf16 ? at::kBFloat16 : at::kFloat;
  for (const auto& r : c.inputs) x.push_back(r[0].to(at::kFloat));
  double global_norm = 0;
  for (const auto& b : x) global_norm += (b * b).sum().item<double>();
  for (auto& b : x)
    b = (b / std::sqrt(kernel == Kernel::local_norm ? (b * b).sum().item<double>() : global_norm)).to(t);
  const int steps = kernel == Kernel::six_steps ? 6 : 5;
  for (int s = 0; s < steps; ++s) {
    const auto& k = kCoefficients[s];
    if (kernel == Kernel::local_gram) {
      for (auto& b : x) {
        at::Tensor g = at::mm(b, b.t());
        b = k[0] * b + at::mm(k[1] * g + k[2] * at::mm(g, g), b);
      }
      continue;
    }
    at::Tensor all = at::cat(x, 1);
    at::Tensor g = at::mm(all, all.t());  // one product over the gathered matrix
    at::Tensor u = k[1] * g + k[2] * at::mm(g, g);
    for (auto& b : x) b = k[0] * b + at::mm(u, b);
  }
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({x[r].to(at::kBFloat16)});
  return out;
}

TEST(Problem086, Fp32PassesWrongKernelsFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world, {.params = {{"R", 36}, {"G", 36}}});  // CI's shapes
    EXPECT_TRUE(passes(c, run_kernel(c, Kernel::gathered_fp32))) << "W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::local_gram))) << "local Gram matrix, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::local_norm))) << "local norm, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::six_steps))) << "six steps, W=" << world;
  }
  Case full = make_case(kProblem, 2);
  double fp32_err = 0, bf16_err = 0;
  EXPECT_TRUE(passes_rel_l2(full, run_kernel(full, Kernel::gathered_fp32), &fp32_err)) << "default shapes";
  EXPECT_FALSE(passes(full, run_kernel(full, Kernel::local_gram))) << "local Gram matrix, default shapes";
  bool bf16_passes = passes_rel_l2(full, run_kernel(full, Kernel::bf16), &bf16_err);
  std::printf("default shapes, W=2: fp32 rel_l2 %.4f; bf16 Newton-Schulz rel_l2 %.4f (%s)\n", fp32_err, bf16_err,
              bf16_passes ? "passes" : "fails");
}

}  // namespace check_086
