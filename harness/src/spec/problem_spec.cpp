#include "spec/problem_spec.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/files.h"

namespace pkb {
namespace {

using json = nlohmann::json;

constexpr std::pair<Category, const char*> kCategories[] = {
    {Category::collective, "collective"},
    {Category::tensor_parallel, "tensor_parallel"},
    {Category::sequence_parallel, "sequence_parallel"},
    {Category::context_parallel, "context_parallel"},
    {Category::pipeline, "pipeline"},
    {Category::data_parallel, "data_parallel"},
    {Category::expert_parallel, "expert_parallel"},
    {Category::fsdp_zero, "fsdp_zero"},
    {Category::vocab_parallel, "vocab_parallel"},
    {Category::graph, "graph"},
    {Category::geometric_spatial, "geometric_spatial"},
    {Category::other, "other"},
};

// Field-path-aware accessors: every error names the JSON path of the offending field.
class Fields {
 public:
  Fields(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) fail("", "must be an object");
  }

  [[noreturn]] void fail(const std::string& key, const std::string& why) const { throw Error(join(key) + ": " + why); }
  std::string join(const std::string& key) const {
    if (key.empty()) return path_.empty() ? "(top level)" : path_;
    return path_.empty() ? key : path_ + "." + key;
  }

  bool has(const std::string& key) const { return j_.contains(key); }
  const json& at(const std::string& key) const {
    if (!j_.contains(key)) fail(key, "missing required field");
    return j_.at(key);
  }
  void only(const std::set<std::string>& allowed) const {
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!allowed.count(it.key())) fail(it.key(), "unknown field (typo?)");
  }

  std::string str(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) fail(key, "must be a string");
    return v.get<std::string>();
  }
  std::string str_or(const std::string& key, const std::string& dflt) const { return has(key) ? str(key) : dflt; }
  int64_t integer(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_number_integer()) fail(key, "must be an integer");
    return v.get<int64_t>();
  }
  double number(const std::string& key, double dflt) const {
    if (!has(key)) return dflt;
    const json& v = at(key);
    if (!v.is_number()) fail(key, "must be a number");
    return v.get<double>();
  }
  bool boolean(const std::string& key, bool dflt) const {
    if (!has(key)) return dflt;
    const json& v = at(key);
    if (!v.is_boolean()) fail(key, "must be true or false");
    return v.get<bool>();
  }
  // An expression given as a string ("M*N") or an integer literal.
  Expr expr(const std::string& key) const { return parse_expr(at(key), join(key)); }
  Fields object(const std::string& key) const { return Fields(at(key), join(key)); }
  const json& array(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) fail(key, "must be an array");
    return v;
  }

  static Expr parse_expr(const json& v, const std::string& where) {
    try {
      if (v.is_number_integer()) return Expr::parse(std::to_string(v.get<int64_t>()));
      if (v.is_string()) return Expr::parse(v.get<std::string>());
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    throw Error(where + ": must be an expression (string) or an integer");
  }

 private:
  const json& j_;
  std::string path_;
};

std::string idx(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

// Every name an expression uses must be a parameter, W, E or (where allowed) r.
void check_names(const Expr& e, const std::set<std::string>& known, const std::string& where) {
  for (const auto& n : e.names())
    if (!known.count(n)) throw Error(where + ": expression \"" + e.text() + "\" uses unknown name '" + n + "'");
}

Distribution parse_distribution(const Fields& f, const std::set<std::string>& names) {
  Distribution d;
  std::string kind = f.str("dist");
  if (kind == "normal") {
    f.only({"dist", "mean", "std"});
    d.kind = Distribution::Kind::normal;
    d.mean = f.number("mean", 0);
    d.std = f.number("std", 1);
    if (!(d.std > 0)) f.fail("std", "must be > 0");
  } else if (kind == "uniform") {
    f.only({"dist", "low", "high"});
    d.kind = Distribution::Kind::uniform;
    d.low = f.number("low", 0);
    d.high = f.number("high", 1);
    if (!(d.high > d.low)) f.fail("high", "must be > low");
  } else if (kind == "randint") {
    f.only({"dist", "low", "high"});
    d.kind = Distribution::Kind::randint;
    d.int_low = f.has("low") ? f.expr("low") : Expr::parse("0");
    d.int_high = f.expr("high");
    check_names(d.int_low, names, f.join("low"));
    check_names(d.int_high, names, f.join("high"));
  } else if (kind == "bernoulli") {
    f.only({"dist", "p"});
    d.kind = Distribution::Kind::bernoulli;
    d.p = f.number("p", 0.5);
    if (!(d.p > 0 && d.p < 1)) f.fail("p", "must be in (0, 1)");
  } else if (kind == "randperm") {
    f.only({"dist"});
    d.kind = Distribution::Kind::randperm;
  } else {
    f.fail("dist", "unknown distribution '" + kind + "' (known: normal, uniform, randint, bernoulli, randperm)");
  }
  return d;
}

std::vector<Expr> parse_dims(const json& arr, const std::string& where, const std::set<std::string>& names) {
  if (!arr.is_array()) throw Error(where + ": must be an array of expressions");
  std::vector<Expr> dims;
  for (size_t i = 0; i < arr.size(); ++i) {
    dims.push_back(Fields::parse_expr(arr[i], idx(where, i)));
    check_names(dims.back(), names, idx(where, i));
  }
  return dims;
}

TensorSpec parse_tensor(const Fields& f, bool is_input, const std::set<std::string>& names_with_rank) {
  TensorSpec t;
  t.name = f.str("name");
  if (f.has("shape")) {
    t.shapes.push_back({std::nullopt, parse_dims(f.at("shape"), f.join("shape"), names_with_rank)});
  }
  if (f.has("shape_cases")) {
    const json& cases = f.array("shape_cases");
    for (size_t i = 0; i < cases.size(); ++i) {
      Fields c(cases[i], idx(f.join("shape_cases"), i));
      c.only({"when", "shape"});
      ShapeCase sc{c.expr("when"), parse_dims(c.at("shape"), c.join("shape"), names_with_rank)};
      check_names(*sc.when, names_with_rank, c.join("when"));
      // Cases are tried first; the plain "shape" is the fallback.
      t.shapes.insert(t.shapes.end() - (f.has("shape") ? 1 : 0), sc);
    }
  }
  if (t.shapes.empty()) f.fail("shape", "missing required field");
  std::string dt = f.str_or("dtype", "float");
  if (dt != "float") {
    t.dtype = dtype_from_name(dt);
    if (!t.dtype)
      f.fail("dtype", "unknown dtype '" + dt +
                          "' (known: float, bf16, fp16, fp32, fp64, int8, uint8, int16, int32, int64, bool)");
  }
  t.replicated = f.boolean("replicated", false);
  if (is_input) {
    f.only({"name", "shape", "shape_cases", "dtype", "init", "replicated", "replicated_in", "doc"});
    t.replicated_in = f.str_or("replicated_in", "");
    std::set<std::string> no_rank = names_with_rank;
    no_rank.erase("r");
    t.init = parse_distribution(f.object("init"), no_rank);
  } else {
    f.only({"name", "shape", "shape_cases", "dtype", "replicated", "doc"});
  }
  return t;
}

void parse_header(ProblemSpec& s, Fields& f) {
  s.id = static_cast<int>(f.integer("id"));
  if (s.id <= 0) f.fail("id", "must be a positive integer");
  s.slug = f.str("slug");
  s.title = f.str("title");
  s.source = f.str("source");
  s.description = f.str("description");
  std::string cat = f.str("category");
  auto c = category_from_name(cat);
  if (!c) f.fail("category", "unknown category '" + cat + "'");
  s.category = *c;
}

void parse_parameters(ProblemSpec& s, Fields& f) {
  const json& params = f.at("parameters");
  if (!params.is_object()) f.fail("parameters", "must be an object of name: integer");
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!it.value().is_number_integer()) f.fail("parameters." + it.key(), "must be an integer");
    if (it.key() == "W" || it.key() == "r" || it.key() == "E")
      f.fail("parameters." + it.key(), "W, r and E are reserved names");
    s.parameters[it.key()] = it.value().get<int64_t>();
  }
  // Small shapes for CI: overrides of existing parameters that keep every code path and hazard alive.
  if (!f.has("test_parameters")) return;
  const json& small = f.at("test_parameters");
  if (!small.is_object()) f.fail("test_parameters", "must be an object of name: integer");
  for (auto it = small.begin(); it != small.end(); ++it) {
    if (!s.parameters.count(it.key())) f.fail("test_parameters." + it.key(), "not a parameter of this problem");
    if (!it.value().is_number_integer()) f.fail("test_parameters." + it.key(), "must be an integer");
    s.test_parameters[it.key()] = it.value().get<int64_t>();
  }
}

void parse_world_and_groups(ProblemSpec& s, Fields& f, const std::set<std::string>& names,
                            const std::set<std::string>& names_with_rank) {
  Fields ws = f.object("world_size");
  ws.only({"min", "max", "constraints"});
  if (ws.has("min")) s.world_size.min = static_cast<int>(ws.integer("min"));
  if (ws.has("max")) s.world_size.max = static_cast<int>(ws.integer("max"));
  if (s.world_size.min < 1) ws.fail("min", "must be >= 1");
  if (s.world_size.max < s.world_size.min) ws.fail("max", "must be >= min");
  if (ws.has("constraints")) {
    const json& cs = ws.array("constraints");
    for (size_t i = 0; i < cs.size(); ++i) {
      std::string where = idx(ws.join("constraints"), i);
      s.world_size.constraints.push_back(Fields::parse_expr(cs[i], where));
      check_names(s.world_size.constraints.back(), names, where);
    }
  }
  if (!f.has("groups")) return;
  const json& gs = f.array("groups");
  for (size_t i = 0; i < gs.size(); ++i) {
    Fields g(gs[i], idx("groups", i));
    g.only({"name", "color", "key", "doc"});
    GroupSpec group{g.str("name"), g.expr("color"), g.has("key") ? g.expr("key") : Expr::parse("r")};
    check_names(group.color, names_with_rank, g.join("color"));
    check_names(group.key, names_with_rank, g.join("key"));
    s.groups.push_back(group);
  }
}

void parse_tensors(ProblemSpec& s, Fields& f, const std::set<std::string>& names,
                   const std::set<std::string>& names_with_rank) {
  const json& ins = f.array("inputs");
  std::set<std::string> seen;
  for (size_t i = 0; i < ins.size(); ++i) {
    Fields in(ins[i], idx("inputs", i));
    InputSpec spec;
    if (in.has("value")) {
      in.only({"name", "value", "doc"});
      spec.scalar = ScalarArg{in.str("name"), in.expr("value")};
      check_names(spec.scalar->value, names, in.join("value"));
    } else {
      spec.tensor = parse_tensor(in, true, names_with_rank);
      const std::string& group = spec.tensor->replicated_in;
      if (!group.empty()) {
        if (spec.tensor->replicated) in.fail("replicated_in", "excludes replicated (which means the whole world)");
        bool known = false;
        for (const auto& g : s.groups) known |= g.name == group;
        if (!known) in.fail("replicated_in", "no group named '" + group + "' in groups");
      }
    }
    if (!seen.insert(spec.name()).second) in.fail("name", "duplicate name '" + spec.name() + "'");
    s.inputs.push_back(spec);
  }
  const json& outs = f.array("outputs");
  if (outs.empty()) f.fail("outputs", "must list at least one output");
  for (size_t i = 0; i < outs.size(); ++i) {
    Fields out(outs[i], idx("outputs", i));
    s.outputs.push_back(parse_tensor(out, false, names_with_rank));
    if (!seen.insert(s.outputs.back().name).second) out.fail("name", "duplicate name '" + s.outputs.back().name + "'");
  }
}

void parse_checks_and_notes(ProblemSpec& s, Fields& f, const std::set<std::string>& names) {
  if (f.has("tolerance")) {
    Fields t = f.object("tolerance");
    t.only({"atol", "rtol", "gamma", "max_rel_l2"});
    s.tolerance.atol = t.number("atol", s.tolerance.atol);
    s.tolerance.rtol = t.number("rtol", s.tolerance.rtol);
    s.tolerance.gamma = t.number("gamma", s.tolerance.gamma);
    s.tolerance.max_rel_l2 = t.number("max_rel_l2", s.tolerance.max_rel_l2);
    for (const char* k : {"atol", "rtol", "gamma", "max_rel_l2"})
      if (t.number(k, 0) < 0) t.fail(k, "must be >= 0");
  }
  Fields roof = f.object("roofline");
  roof.only({"link_bytes", "hbm_bytes", "flops"});
  for (const char* k : {"link_bytes", "hbm_bytes", "flops"}) {
    s.roofline[k] = roof.expr(k);
    check_names(s.roofline[k], names, roof.join(k));
  }
  if (!f.has("deviations")) return;
  for (const auto& d : f.array("deviations")) {
    // Each entry is what differs from PKB and why: a sentence or more, never a placeholder.
    if (!d.is_string() || d.get<std::string>().size() < 20)
      f.fail("deviations", "must be an array of sentences (each what differs from PKB and why)");
    s.deviations.push_back(d.get<std::string>());
  }
}

void parse_into(ProblemSpec& s, const json& j) {
  Fields f(j, "");
  f.only({"id", "slug", "title", "category", "source", "description", "world_size", "parameters", "test_parameters",
          "groups", "inputs", "outputs", "tolerance", "roofline", "deviations", "notes"});
  parse_header(s, f);
  parse_parameters(s, f);
  std::set<std::string> names = {"W", "E"};
  for (const auto& [k, v] : s.parameters) names.insert(k);
  std::set<std::string> names_with_rank = names;
  names_with_rank.insert("r");
  parse_world_and_groups(s, f, names, names_with_rank);
  parse_tensors(s, f, names, names_with_rank);
  parse_checks_and_notes(s, f, names);
}

}  // namespace

std::optional<Category> category_from_name(const std::string& s) {
  for (const auto& [c, n] : kCategories)
    if (s == n) return c;
  return std::nullopt;
}
const char* category_name(Category c) {
  for (const auto& [cat, n] : kCategories)
    if (cat == c) return n;
  return "other";
}

size_t ProblemSpec::tensor_input_count() const {
  size_t n = 0;
  for (const auto& in : inputs) n += in.tensor.has_value();
  return n;
}

Variables RunShape::vars(int rank) const {
  Variables v(params.begin(), params.end());
  v["W"] = world;
  v["E"] = static_cast<int64_t>(dtype_size(float_dtype));
  if (rank >= 0) v["r"] = rank;
  return v;
}

ProblemSpec load_problem(const std::filesystem::path& dir) {
  std::filesystem::path file = dir / "problem.json";
  ProblemSpec s;
  s.dir = dir;
  json j;
  try {
    j = json::parse(read_text_file(file));
  } catch (const json::parse_error& e) {
    throw Error(file.string() + ": invalid JSON: " + e.what());
  }
  with_context(file.string(), [&] { parse_into(s, j); });
  std::string folder = dir.filename().string();
  char expected[16];
  std::snprintf(expected, sizeof expected, "%03d_", s.id);
  if (folder != std::string(expected) + s.slug)
    throw Error(file.string() + ": id/slug: folder name '" + folder + "' must be '" + expected + s.slug + "'");
  // Defaults must describe a runnable problem at the smallest allowed W.
  with_context(file.string(), [&] {
    for (int w = s.world_size.min; w <= std::min(s.world_size.max, kLargestWorldSearched); ++w) {
      if (!world_size_violation(s, w, s.parameters)) {
        resolve_run(s, w, DType::bf16);
        return;
      }
    }
    throw Error("world_size: no W in [" + std::to_string(s.world_size.min) + ", " +
                std::to_string(kLargestWorldSearched) + "] satisfies the constraints");
  });
  return s;
}

std::optional<std::string> world_size_violation(const ProblemSpec& spec, int world,
                                                const std::map<std::string, int64_t>& params) {
  if (world < spec.world_size.min)
    return "W=" + std::to_string(world) + " is below world_size.min=" + std::to_string(spec.world_size.min);
  if (world > spec.world_size.max)
    return "W=" + std::to_string(world) + " is above world_size.max=" + std::to_string(spec.world_size.max);
  RunShape rs{params, world, DType::bf16};
  for (const auto& c : spec.world_size.constraints)
    if (c.eval(rs.vars()) == 0)
      return "W=" + std::to_string(world) + " violates world_size constraint '" + c.text() + "'";
  return std::nullopt;
}

RunShape resolve_run(const ProblemSpec& spec, int world, DType float_dtype,
                     const std::map<std::string, int64_t>& overrides) {
  RunShape run{spec.parameters, world, float_dtype};
  for (const auto& [k, v] : overrides) {
    if (!run.params.count(k)) throw Error("problem " + spec.folder() + ": unknown parameter '" + k + "'");
    run.params[k] = v;
  }
  if (auto why = world_size_violation(spec, world, run.params)) throw Error("problem " + spec.folder() + ": " + *why);
  auto check_tensor = [&](const TensorSpec& t, const std::string& where) {
    for (int r = 0; r < world; ++r) {
      auto shape = with_context(where + ".shape", [&] { return tensor_shape(t, run, r); });
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] <= 0)
          throw Error(where + ".shape[" + std::to_string(d) + "]: evaluates to " + std::to_string(shape[d]) +
                      " on rank " + std::to_string(r) + " (must be > 0)");
    }
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].tensor) check_tensor(*spec.inputs[i].tensor, idx("inputs", i));
  for (size_t i = 0; i < spec.outputs.size(); ++i) check_tensor(spec.outputs[i], idx("outputs", i));
  return run;
}

std::vector<int64_t> tensor_shape(const TensorSpec& t, const RunShape& run, int rank) {
  Variables v = run.vars(rank);
  for (const auto& sc : t.shapes) {
    if (sc.when && sc.when->eval(v) == 0) continue;
    std::vector<int64_t> shape;
    for (const auto& d : sc.dims) shape.push_back(d.eval(v));
    return shape;
  }
  throw Error("tensor '" + t.name + "': no shape case matches rank " + std::to_string(rank));
}

std::map<std::string, int64_t> parse_param_overrides(const std::vector<std::string>& name_values) {
  std::map<std::string, int64_t> out;
  for (const auto& kv : name_values) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--param '" + kv + "': expected NAME=VALUE");
    size_t used = 0;
    try {
      out[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != kv.size() - eq - 1) throw Error("--param '" + kv + "': value is not an integer");
  }
  return out;
}

DType tensor_dtype(const TensorSpec& t, const RunShape& run) { return t.dtype.value_or(run.float_dtype); }

}  // namespace pkb
