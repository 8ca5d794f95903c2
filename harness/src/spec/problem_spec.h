// problem.json, parsed and validated. problems/README.md documents every field; this header is its C++ mirror.
// A spec is data only. Shapes, constraints, group layouts and roofline formulas are Expr over the problem's
// parameters, W (world size), r (rank, where per-rank) and E (bytes per element of the run's float dtype).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/expr.h"

namespace pkb {

enum class Category {
  collective,
  tensor_parallel,
  sequence_parallel,
  context_parallel,
  pipeline,
  data_parallel,
  expert_parallel,
  fsdp_zero,
  vocab_parallel,
  graph,
  geometric_spatial,
  other
};
std::optional<Category> category_from_name(const std::string& s);
const char* category_name(Category c);

// How an input is filled. Every distribution is random: constant fills hide layout and permutation bugs.
struct Distribution {
  enum class Kind { normal, uniform, randint, bernoulli, randperm } kind = Kind::normal;
  double mean = 0, std = 1;  // normal
  double low = 0, high = 1;  // uniform: [low, high)
  Expr int_low, int_high;    // randint: [low, high), expressions of the parameters
  double p = 0.5;            // bernoulli
};

// A shape that may depend on the rank: the first case whose `when` holds is used; `when` absent = always.
struct ShapeCase {
  std::optional<Expr> when;
  std::vector<Expr> dims;
};

struct TensorSpec {
  std::string name;
  std::vector<ShapeCase> shapes;
  // A fixed dtype, or nullopt for "float": the run's dtype (bf16 by default, fp32 with --dtype fp32).
  std::optional<DType> dtype;
  Distribution init;        // inputs only
  bool replicated = false;  // input: same values on every rank; output: must agree across ranks
  // Input only: same values on every member of this group (a `groups` name), different across groups; empty = no.
  std::string replicated_in;
};

// A non-tensor argument passed to reference.py's solution() in its place among the inputs.
struct ScalarArg {
  std::string name;
  Expr value;
};

// An input is a tensor or a scalar; the order is solution()'s argument order.
struct InputSpec {
  std::optional<TensorSpec> tensor;
  std::optional<ScalarArg> scalar;
  const std::string& name() const { return tensor ? tensor->name : scalar->name; }
};

// A named process group: ranks with equal color form one group, ordered by key.
struct GroupSpec {
  std::string name;
  Expr color, key;
};

struct Tolerance {
  double atol = 1e-2, rtol = 1e-2;  // robust; the pkb policy always uses the defaults (the paper's allclose)
  double gamma = 8;                 // robust: slack of gamma * eps(dtype) * rms(precise)
  double max_rel_l2 = 1e-2;         // robust: bound on ||out - precise|| / ||precise||
};

// world_size.max when problem.json sets none.
constexpr int kUnboundedWorld = 1 << 20;
// Where W is searched for one that satisfies the constraints (the smallest valid W, the test shapes' W).
constexpr int kLargestWorldSearched = 64;

struct WorldSize {
  int min = 1, max = kUnboundedWorld;
  std::vector<Expr> constraints;  // each must be nonzero for a valid W
};

struct ProblemSpec {
  std::filesystem::path dir;  // problems/NNN_slug
  int id = 0;
  std::string slug, title, source, description;
  Category category = Category::other;
  WorldSize world_size;
  std::map<std::string, int64_t> parameters;       // defaults
  std::map<std::string, int64_t> test_parameters;  // small shapes for CI (`pkb validate --small`)
  std::vector<GroupSpec> groups;
  std::vector<InputSpec> inputs;
  std::vector<TensorSpec> outputs;
  Tolerance tolerance;
  std::map<std::string, Expr> roofline;  // link_bytes, hbm_bytes, flops
  std::vector<std::string> deviations;

  std::string folder() const { return dir.filename().string(); }
  size_t tensor_input_count() const;
};

// Resolved settings for one run of a problem: parameters with overrides, W, and the float dtype.
struct RunShape {
  std::map<std::string, int64_t> params;
  int world = 1;
  DType float_dtype = DType::bf16;

  // Variables for expressions: parameters, W, E, and r when rank >= 0.
  Variables vars(int rank = -1) const;
};

// Loads and validates problems/NNN_slug/problem.json. Throws pkb::Error "<file>: <field>: <why>".
ProblemSpec load_problem(const std::filesystem::path& dir);

// Applies overrides (unknown names are errors), checks W against the constraints and every shape for every
// rank (> 0). Throws pkb::Error naming the problem and what failed; a violated constraint says which.
RunShape resolve_run(const ProblemSpec& spec, int world, DType float_dtype,
                     const std::map<std::string, int64_t>& overrides = {});

// Why W is not allowed for this problem, or nullopt if it is.
std::optional<std::string> world_size_violation(const ProblemSpec& spec, int world,
                                                const std::map<std::string, int64_t>& params);

// "NAME=VALUE" strings (the --param options) as overrides. Throws pkb::Error naming the bad one.
std::map<std::string, int64_t> parse_param_overrides(const std::vector<std::string>& name_values);

// Shape and dtype of a tensor on a rank.
std::vector<int64_t> tensor_shape(const TensorSpec& t, const RunShape& run, int rank);
DType tensor_dtype(const TensorSpec& t, const RunShape& run);

}  // namespace pkb
