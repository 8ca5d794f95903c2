#include "core/expr.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "core/error.h"

namespace pkb {

struct Expr::Node {
  enum class Kind { literal, name, unary, binary, call, conditional } kind;
  int64_t value = 0;
  std::string name;  // variable, operator or function name
  std::vector<std::shared_ptr<const Node>> args;
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Kind = Expr::Node::Kind;

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  NodePtr parse_all() {
    NodePtr n = parse_conditional();
    skip_space();
    if (pos_ != s_.size()) fail("unexpected '" + std::string(1, s_[pos_]) + "'");
    return n;
  }

 private:
  // Binary operators by precedence level, lowest first.
  static const std::vector<std::vector<std::string>>& levels() {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"||"}, {"&&"}, {"==", "!="}, {"<=", ">=", "<", ">"}, {"+", "-"}, {"*", "/", "%"}};
    return kLevels;
  }

  // cond ? a : b, lowest precedence and right-associative as in C: a ? b : c ? d : e is a ? b : (c ? d : e).
  NodePtr parse_conditional() {
    NodePtr cond = parse_binary(0);
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != '?') return cond;
    ++pos_;
    NodePtr then = parse_conditional();
    expect(':');
    NodePtr otherwise = parse_conditional();
    auto n = std::make_shared<Expr::Node>();
    n->kind = Kind::conditional;
    n->args = {cond, then, otherwise};
    return n;
  }

  NodePtr parse_binary(size_t level) {
    if (level == levels().size()) return parse_unary();
    NodePtr lhs = parse_binary(level + 1);
    for (;;) {
      skip_space();
      std::string op = match_operator(levels()[level]);
      if (op.empty()) return lhs;
      NodePtr rhs = parse_binary(level + 1);
      auto n = std::make_shared<Expr::Node>();
      n->kind = Kind::binary;
      n->name = op;
      n->args = {lhs, rhs};
      lhs = n;
    }
  }

  NodePtr parse_unary() {
    skip_space();
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '!' || s_[pos_] == '+')) {
      char op = s_[pos_++];
      NodePtr operand = parse_unary();
      if (op == '+') return operand;
      auto n = std::make_shared<Expr::Node>();
      n->kind = Kind::unary;
      n->name = std::string(1, op);
      n->args = {operand};
      return n;
    }
    return parse_atom();
  }

  NodePtr parse_atom() {
    skip_space();
    if (pos_ >= s_.size()) fail("unexpected end of expression");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      NodePtr inner = parse_conditional();
      expect(')');
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return parse_number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return parse_name_or_call();
    fail("unexpected '" + std::string(1, c) + "'");
  }

  NodePtr parse_number() {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      int digit = s_[pos_++] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) {
        pos_ = start;
        fail("integer literal overflows int64");
      }
      v = v * 10 + digit;
    }
    if (pos_ < s_.size() && (s_[pos_] == '.' || std::isalpha(static_cast<unsigned char>(s_[pos_]))))
      fail("only integer literals are allowed");
    auto n = std::make_shared<Expr::Node>();
    n->kind = Kind::literal;
    n->value = v;
    return n;
  }

  NodePtr parse_name_or_call() {
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    std::string name = s_.substr(start, pos_ - start);
    skip_space();
    auto n = std::make_shared<Expr::Node>();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      static const std::set<std::string> kFunctions = {"min", "max", "ceil_div", "log2"};
      if (!kFunctions.count(name)) {
        pos_ = start;
        fail("unknown function '" + name + "' (known: min, max, ceil_div, log2)");
      }
      ++pos_;
      n->kind = Kind::call;
      n->name = name;
      n->args.push_back(parse_conditional());
      skip_space();
      while (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        n->args.push_back(parse_conditional());
        skip_space();
      }
      expect(')');
      size_t want_min = (name == "log2") ? 1 : (name == "ceil_div" ? 2 : 1);
      size_t want_max = (name == "log2") ? 1 : (name == "ceil_div" ? 2 : 64);
      if (n->args.size() < want_min || n->args.size() > want_max) {
        pos_ = start;
        fail(name + "() takes " + (want_min == want_max ? std::to_string(want_min) : "1 or more") + " argument(s)");
      }
      return n;
    }
    n->kind = Kind::name;
    n->name = name;
    return n;
  }

  std::string match_operator(const std::vector<std::string>& ops) {
    for (const auto& op : ops) {
      if (s_.compare(pos_, op.size(), op) != 0) continue;
      // "<" must not steal "<=", "!" handled in unary; "=" alone is not an operator.
      if (op.size() == 1 && pos_ + 1 < s_.size() && (op == "<" || op == ">") && s_[pos_ + 1] == '=') continue;
      pos_ += op.size();
      return op;
    }
    return {};
  }

  void expect(char c) {
    skip_space();
    if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  [[noreturn]] void fail(const std::string& why) {
    throw Error("expression \"" + s_ + "\": " + why + " at column " + std::to_string(pos_ + 1));
  }

  const std::string& s_;
  size_t pos_ = 0;
};

int64_t checked(__int128 v, const char* op) {
  if (v > std::numeric_limits<int64_t>::max() || v < std::numeric_limits<int64_t>::min())
    throw Error(std::string("integer overflow in '") + op + "'");
  return static_cast<int64_t>(v);
}

int64_t eval_node(const Expr::Node& n, const Variables& vars) {
  switch (n.kind) {
    case Kind::literal:
      return n.value;
    case Kind::name: {
      auto it = vars.find(n.name);
      if (it == vars.end()) throw Error("unknown name '" + n.name + "'");
      return it->second;
    }
    case Kind::unary: {
      int64_t a = eval_node(*n.args[0], vars);
      return n.name == "-" ? checked(-static_cast<__int128>(a), "-") : static_cast<int64_t>(a == 0);
    }
    case Kind::call: {
      std::vector<int64_t> a;
      for (const auto& arg : n.args) a.push_back(eval_node(*arg, vars));
      if (n.name == "min") return *std::min_element(a.begin(), a.end());
      if (n.name == "max") return *std::max_element(a.begin(), a.end());
      if (n.name == "ceil_div") {
        if (a[1] <= 0) throw Error("ceil_div by a non-positive value");
        return (a[0] + a[1] - 1) / a[1];
      }
      if (a[0] <= 0) throw Error("log2 of a non-positive value");
      int64_t l = 0;
      while ((int64_t{1} << (l + 1)) <= a[0]) ++l;
      return l;
    }
    case Kind::conditional:  // only the branch taken is evaluated: "W > 1 ? N / (W - 1) : N" is safe at W = 1
      return eval_node(*n.args[eval_node(*n.args[0], vars) != 0 ? 1 : 2], vars);
    case Kind::binary:
      break;
  }
  const std::string& op = n.name;
  int64_t a = eval_node(*n.args[0], vars);
  // Short-circuit so "W > 1 && N % (W-1) == 0" is safe at W = 1.
  if (op == "&&" && a == 0) return 0;
  if (op == "||" && a != 0) return 1;
  int64_t b = eval_node(*n.args[1], vars);
  __int128 A = a, B = b;
  if (op == "+") return checked(A + B, "+");
  if (op == "-") return checked(A - B, "-");
  if (op == "*") return checked(A * B, "*");
  if (op == "/" || op == "%") {
    if (b == 0) throw Error("division by zero in '" + op + "'");
    return op == "/" ? checked(A / B, "/") : a % b;
  }
  if (op == "==") return a == b;
  if (op == "!=") return a != b;
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "&&" || op == "||") return b != 0;
  throw Error("internal: unknown operator " + op);
}

void collect_names(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Kind::name) out.insert(n.name);
  for (const auto& a : n.args) collect_names(*a, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(e.text_).parse_all();
  return e;
}

int64_t Expr::eval(const Variables& vars) const {
  try {
    return eval_node(*root_, vars);
  } catch (const Error& err) {
    throw Error("expression \"" + text_ + "\": " + err.what());
  }
}

std::vector<std::string> Expr::names() const {
  std::set<std::string> s;
  collect_names(*root_, s);
  return {s.begin(), s.end()};
}

int64_t eval_expr(const std::string& text, const Variables& vars) { return Expr::parse(text).eval(vars); }

}  // namespace pkb
