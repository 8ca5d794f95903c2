#include "core/expr.h"

#include <gtest/gtest.h>

#include "core/error.h"

using pkb::Error;
using pkb::eval_expr;
using pkb::Expr;

TEST(Expr, ArithmeticFollowsCPrecedence) {
  EXPECT_EQ(eval_expr("1 + 2 * 3", {}), 7);
  EXPECT_EQ(eval_expr("(1 + 2) * 3", {}), 9);
  EXPECT_EQ(eval_expr("10 - 4 - 3", {}), 3);
  EXPECT_EQ(eval_expr("7 / 2", {}), 3);
  EXPECT_EQ(eval_expr("-7 / 2", {}), -3);  // truncates toward zero, like C
  EXPECT_EQ(eval_expr("17 % 5", {}), 2);
  EXPECT_EQ(eval_expr("-(2 + 3)", {}), -5);
}

TEST(Expr, NamesAndFunctions) {
  pkb::Variables v = {{"M", 1024}, {"N", 512}, {"W", 8}, {"E", 2}};
  EXPECT_EQ(eval_expr("2 * (W - 1) * M * N * E / W", v), 2 * 7 * 1024 * 512 * 2 / 8);
  EXPECT_EQ(eval_expr("min(M, N, W)", v), 8);
  EXPECT_EQ(eval_expr("max(M, N)", v), 1024);
  EXPECT_EQ(eval_expr("ceil_div(M, 3)", v), 342);
  EXPECT_EQ(eval_expr("log2(W)", v), 3);
}

TEST(Expr, ComparisonsAndLogic) {
  pkb::Variables v = {{"W", 4}, {"r", 0}};
  EXPECT_EQ(eval_expr("r == 0", v), 1);
  EXPECT_EQ(eval_expr("W % 2 == 0 && W >= 4", v), 1);
  EXPECT_EQ(eval_expr("W < 4 || W > 4", v), 0);
  EXPECT_EQ(eval_expr("W <= 4", v), 1);
  EXPECT_EQ(eval_expr("!(W != 4)", v), 1);
  // Short-circuit: no division by zero when the left side decides.
  EXPECT_EQ(eval_expr("W == 1 || 8 % (W - 1) == 2", {{"W", 1}}), 1);
}

TEST(Expr, ConditionalsPickOneBranchAndNestToTheRight) {
  pkb::Variables v = {{"W", 4}, {"r", 3}};
  EXPECT_EQ(eval_expr("W >= 4 ? r % 2 : r", v), 1);
  EXPECT_EQ(eval_expr("W >= 8 ? r % 2 : r", v), 3);
  EXPECT_EQ(eval_expr("W == 1 ? 10 : W == 2 ? 20 : 30", v), 30) << "a ? b : (c ? d : e)";
  EXPECT_EQ(eval_expr("1 + (W > 2 ? 1 : 0) * 5", v), 6);
  EXPECT_EQ(eval_expr("max(W > 2 ? W : 2, 3)", v), 4);
  EXPECT_EQ(eval_expr("W > 1 ? 8 / (W - 1) : 8", {{"W", 1}}), 8) << "the branch not taken is not evaluated";
  EXPECT_EQ(pkb::Expr::parse("W > 1 ? N : M").names(), (std::vector<std::string>{"M", "N", "W"}));
  EXPECT_THROW(pkb::Expr::parse("W ? 1"), pkb::Error);
  EXPECT_THROW(pkb::Expr::parse("W ? : 1"), pkb::Error);
}

TEST(Expr, NamesAreReported) {
  auto names = Expr::parse("min(M, K) * W + 1").names();
  EXPECT_EQ(names, (std::vector<std::string>{"K", "M", "W"}));
}

TEST(Expr, ParseErrorsSayWhereAndWhy) {
  auto message = [](const std::string& text) {
    try {
      Expr::parse(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("M * ").find("unexpected end"), std::string::npos);
  EXPECT_NE(message("(M + 1").find("expected ')'"), std::string::npos);
  EXPECT_NE(message("M $ 2").find("unexpected '$'"), std::string::npos);
  EXPECT_NE(message("1.5 * M").find("only integer literals"), std::string::npos);
  EXPECT_NE(message("sqrt(M)").find("unknown function 'sqrt'"), std::string::npos);
  EXPECT_NE(message("ceil_div(M)").find("takes 2"), std::string::npos);
  EXPECT_NE(message("99999999999999999999").find("overflows"), std::string::npos);
}

TEST(Expr, EvaluationErrors) {
  EXPECT_THROW(eval_expr("M / (W - 1)", {{"M", 4}, {"W", 1}}), Error);
  EXPECT_THROW(eval_expr("M % 0", {{"M", 4}}), Error);
  EXPECT_THROW(eval_expr("K + 1", {{"M", 4}}), Error);
  EXPECT_THROW(eval_expr("M * M * M", {{"M", int64_t{1} << 30}}), Error);  // overflow is an error, not UB
  try {
    eval_expr("K + 1", {{"M", 4}});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'K'"), std::string::npos);
  }
}
