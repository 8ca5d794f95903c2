// Integer expression evaluator for shapes, constraints and roofline formulas in problem.json.
// Grammar (C precedence): cond ? a : b ; || && ; == != < <= > >= ; + - ; * / % ; unary - ! ; atoms are
// integer literals, names (problem parameters, W, r, E) and min(a,b,...)/max(a,b,...)/ceil_div(a,b)/log2(a).
// Division and modulo truncate toward zero like C; division by zero is an error, never UB.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace pkb {

using Variables = std::map<std::string, int64_t>;

// A parsed expression, cheap to copy and to evaluate many times.
class Expr {
 public:
  // Throws pkb::Error("...at column N...") if the text does not parse.
  static Expr parse(const std::string& text);

  // Throws pkb::Error naming the unknown variable or the failing operation.
  int64_t eval(const Variables& vars) const;

  // Names the expression refers to (so a loader can reject unknown names up front).
  std::vector<std::string> names() const;

  const std::string& text() const { return text_; }

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

// Parse-and-evaluate in one step.
int64_t eval_expr(const std::string& text, const Variables& vars);

}  // namespace pkb
