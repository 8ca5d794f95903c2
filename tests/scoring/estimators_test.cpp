// pass@k and fast_p@k against hand-computed values.
#include "scoring/estimators.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace pkb::scoring;

namespace {

Sample timed(bool correct, double speedup) {
  Sample s;
  s.robust_pass = s.pkb_pass = correct;
  s.speedup = speedup;
  return s;
}

}  // namespace

TEST(PassAtK, FiveSamplesTwoCorrect) {
  // 1 - C(3,k)/C(5,k): C(3,1)/C(5,1) = 3/5, C(3,2)/C(5,2) = 3/10, C(3,3)/C(5,3) = 1/10, then C(3,k) = 0.
  const double expected[] = {0.4, 0.7, 0.9, 1.0, 1.0};
  for (int k = 1; k <= 5; ++k) EXPECT_NEAR(pass_at_k(5, 2, k), expected[k - 1], 1e-12) << "k=" << k;
}

TEST(PassAtK, NoneAndAllCorrect) {
  for (int k = 1; k <= 5; ++k) {
    EXPECT_EQ(pass_at_k(5, 0, k), 0.0);
    EXPECT_EQ(pass_at_k(5, 5, k), 1.0);
  }
}

TEST(PassAtK, LargeNIsStable) {
  EXPECT_NEAR(pass_at_k(1000, 1, 1), 0.001, 1e-12);
  EXPECT_NEAR(pass_at_k(1000, 1, 500), 0.5, 1e-12);
  EXPECT_NEAR(pass_at_k(1000, 999, 1), 0.999, 1e-12);
  EXPECT_EQ(pass_at_k(1000, 501, 500), 1.0);  // n - c < k: every draw holds a correct sample
}

TEST(PassAtK, RejectsImpossibleArguments) {
  EXPECT_THROW(pass_at_k(3, 1, 4), pkb::Error);  // k > n
  EXPECT_THROW(pass_at_k(3, 4, 1), pkb::Error);  // c > n
  EXPECT_THROW(pass_at_k(3, 1, 0), pkb::Error);
  EXPECT_THROW(pass_at_k(3, -1, 1), pkb::Error);
}

TEST(FastP, ThresholdIsStrict) {
  // Correct at 0.5x, 1.0x and 2.0x; an incorrect 3.0x never counts.
  std::vector<Sample> s = {timed(true, 0.5), timed(true, 1.0), timed(true, 2.0), timed(false, 3.0)};
  EXPECT_EQ(count_fast(s, 0.0), 3);
  EXPECT_EQ(count_fast(s, 0.5), 2);  // exactly p does not count
  EXPECT_EQ(count_fast(s, 1.0), 1);
  EXPECT_EQ(count_fast(s, 1.9), 1);
  EXPECT_EQ(count_fast(s, 2.0), 0);
  EXPECT_EQ(count_fast(s, 5.0), 0);
  EXPECT_NEAR(fast_p_at_k(s, 1.0, 1), 0.25, 1e-12);
  EXPECT_NEAR(fast_p_at_k(s, 0.5, 2), 1 - 1.0 / 6, 1e-12);  // 1 - C(2,2)/C(4,2)
  EXPECT_EQ(fast_p_at_k(s, 2.0, 4), 0.0);
}

TEST(FastP, MissingSpeedupIsNotFast) {
  Sample s;
  s.robust_pass = true;
  EXPECT_EQ(count_fast({s}, 0.0), 0);
}
