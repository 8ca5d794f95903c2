// Problem 63: the weight and covariance updates (~1e-3 / W and ~1e-5 / W per entry) are below PKB's atol, so its
// check passes a kernel that skips them. Our fp64 tolerance passes honest fp64 kernels (blocks in another order,
// H^T K from the already formed K) and fails skipped updates, a local denominator, lambda counted once per rank
// instead of once per block, and an all-reduced (mean) error; PKB's policy passes the skipped updates.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_063 {  // named, not anonymous: the references build as unity batches

constexpr double kLambda = 0.98;

enum class Mistake { none, no_updates, local_denominator, lambda_once, mean_error };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Mistake m) {
  const int W = static_cast<int>(in.size());
  const int64_t NB = in[0][0].size(0);
  std::vector<at::Tensor> K(W), t(W);
  double total = 0, mean_error = 0;
  for (int r = 0; r < W; ++r) {
    K[r] = at::bmm(in[r][3], in[r][0]);  // (NB, BS, 1)
    double lambdas = m == Mistake::lambda_once ? kLambda : NB * kLambda;
    t[r] = (in[r][0] * K[r]).sum() + lambdas;  // H^T K, all blocks at once
    total += t[r].item<double>();
    mean_error += in[r][1].item<double>() / W;
  }
  std::vector<at::Tensor> weights;
  std::vector<pkb::Tensors> out(W);
  for (int r = 0; r < W; ++r) {
    double A = 1 / (m == Mistake::local_denominator ? t[r].item<double>() : total);
    double e = m == Mistake::mean_error ? mean_error : in[r][1].item<double>();
    if (m == Mistake::no_updates) A = 0;
    weights.push_back(in[r][2] + (A * e) * K[r]);
    at::Tensor P = (in[r][3] - A * at::bmm(K[r], K[r].transpose(1, 2))) / kLambda;
    out[r] = {at::Tensor(), P, at::scalar_tensor(0.9987 * kLambda + 1 - 0.9987, at::kDouble)};
  }
  // Blocks gathered in reverse rank order, then put in place: the same values in another order of work.
  std::vector<at::Tensor> gathered(W);
  for (int r = W - 1; r >= 0; --r) gathered[r] = weights[r];
  at::Tensor all = at::cat(gathered);
  for (auto& o : out) o[0] = all;
  return out;
}

bool passes(pkb::Policy policy, const pkb::ProblemSpec& s, const std::vector<pkb::Tensors>& got,
            const std::vector<pkb::Tensors>& want, std::string* why = nullptr) {
  for (size_t r = 0; r < got.size(); ++r)
    for (int i = 0; i < 3; ++i) {
      auto c = pkb::compare(policy, got[r][i], want[r][i], s.tolerance, at::kDouble);
      if (!c.pass) {
        if (why) *why = "rank " + std::to_string(r) + " " + s.outputs[i].name + ": " + pkb::describe(c);
        return false;
      }
    }
  return true;
}

TEST(Problem063, Fp64KernelsPassMistakesFail) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/063_deepmd_kalman_filter_optimizer");
  for (int W : {2, 3}) {
    auto run = pkb::resolve_run(s, W, pkb::DType::bf16, {{"NB", 8}, {"BS", 256}});
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto want = pkb::expected_outputs(s, run, in);
    std::string why;
    EXPECT_TRUE(passes(pkb::Policy::robust, s, candidate(in, Mistake::none), want, &why)) << why;
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Mistake::no_updates), want)) << "no updates";
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Mistake::local_denominator), want)) << "local T";
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Mistake::lambda_once), want)) << "lambda once";
    EXPECT_FALSE(passes(pkb::Policy::robust, s, candidate(in, Mistake::mean_error), want)) << "mean error";
    pkb::ProblemSpec pkb_tol = s;
    pkb_tol.tolerance = pkb::Tolerance{};  // atol = rtol = 1e-2
    EXPECT_TRUE(passes(pkb::Policy::paper_allclose, pkb_tol, candidate(in, Mistake::no_updates), want))
        << "PKB's check";
  }
}

}  // namespace check_063
