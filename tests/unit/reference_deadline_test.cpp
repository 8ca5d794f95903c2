// The reference pass's deadline (eval/evaluate.h reference_deadline_s): its own, which the candidate's --timeout
// never shortens.
#include <gtest/gtest.h>

#include "eval/evaluate.h"

namespace {

pkb::EvalOptions with(double timeout_s, double reference_timeout_s = 0) {
  pkb::EvalOptions o;
  o.timeout_s = timeout_s;
  o.reference_timeout_s = reference_timeout_s;
  return o;
}

TEST(ReferenceDeadline, TheCandidatesTimeoutNeverShortensIt) {
  EXPECT_EQ(pkb::reference_deadline_s(with(15)), pkb::kReferenceTimeoutS);  // the busy-GPU case: was 15 s
  EXPECT_EQ(pkb::reference_deadline_s(with(1)), pkb::kReferenceTimeoutS);
  EXPECT_GE(pkb::kReferenceTimeoutS, 600);
}

TEST(ReferenceDeadline, ALongerCandidateTimeoutLengthensIt) { EXPECT_EQ(pkb::reference_deadline_s(with(3000)), 3000); }

TEST(ReferenceDeadline, ReferenceTimeoutSetsItWhateverTheCandidatesIs) {
  EXPECT_EQ(pkb::reference_deadline_s(with(1, 45)), 45);
  EXPECT_EQ(pkb::reference_deadline_s(with(3000, 45)), 45);
}

}  // namespace
