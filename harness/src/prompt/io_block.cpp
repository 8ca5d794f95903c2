// The "inputs and outputs" section: everything pkb_run receives, made concrete for one W and parameter set,
// so the model never has to evaluate problem.json's expressions itself. Shapes that differ by rank are listed
// per rank range (consecutive ranks with equal shapes share a line).
#include <sstream>

#include "inputs/draw.h"
#include "prompt/format.h"
#include "prompt/prompt.h"

namespace pkb::prompt {
namespace {

std::string ranks_text(int first, int last) {
  return first == last ? "rank " + std::to_string(first)
                       : "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

double tensor_bytes(const std::vector<int64_t>& shape, DType dt) {
  double n = static_cast<double>(dtype_size(dt));
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n;
}

std::string distribution_text(const TensorSpec& t, const RunShape& run) {
  const Distribution& d = t.init;
  std::string s;
  switch (d.kind) {
    case Distribution::Kind::normal:
      s = "normal(mean " + num(d.mean) + ", std " + num(d.std) + ")";
      break;
    case Distribution::Kind::uniform:
      s = "uniform in [" + num(d.low) + ", " + num(d.high) + ")";
      break;
    case Distribution::Kind::randint:
      s = "random integers in [" + std::to_string(d.int_low.eval(run.vars())) + ", " +
          std::to_string(d.int_high.eval(run.vars())) + ")";
      break;
    case Distribution::Kind::bernoulli:
      s = "0 or 1, P(1) = " + num(d.p);
      break;
    case Distribution::Kind::randperm:
      s = "a random permutation of 0 .. numel-1";
      break;
  }
  return s + (t.replicated ? ", the same values on every rank" : ", drawn independently on each rank");
}

// " shape (M, N) on every rank (2 MiB)" or, when shapes depend on the rank, one indented line per rank range.
std::string shapes_text(const TensorSpec& t, const RunShape& run) {
  DType dt = tensor_dtype(t, run);
  std::vector<std::pair<int, std::vector<int64_t>>> runs;  // first rank of a range, its shape
  for (int r = 0; r < run.world; ++r) {
    auto shape = tensor_shape(t, run, r);
    if (runs.empty() || runs.back().second != shape) runs.push_back({r, shape});
  }
  auto one = [&](const std::vector<int64_t>& s) {
    return "shape " + shape_text(s) + " (" + binary_size(tensor_bytes(s, dt)) + ")";
  };
  if (runs.size() == 1) return ", " + one(runs[0].second) + " on every rank";
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i) {
    int last = i + 1 < runs.size() ? runs[i + 1].first - 1 : run.world - 1;
    out += "\n    " + ranks_text(runs[i].first, last) + ": " + one(runs[i].second);
  }
  return out;
}

std::string tensor_line(const std::string& slot, const TensorSpec& t, const RunShape& run) {
  return slot + " `" + t.name + "`: " + dtype_name(tensor_dtype(t, run)) + shapes_text(t, run);
}

std::string header_lines(const ProblemSpec& spec, const RunShape& run) {
  std::ostringstream s;
  s << "World size W = " << run.world << ": ranks 0-" << run.world - 1 << ", one process and one GPU each.\n";
  if (!run.params.empty()) {
    std::string list;
    for (const auto& [k, v] : run.params) list += (list.empty() ? "" : ", ") + k + " = " + std::to_string(v);
    s << "Parameters: " << list << " (also available through ctx->param(ctx, \"NAME\")).\n";
  }
  for (const auto& [name, members] : group_layout(spec, run)) {
    s << "Process group `" << name << "` (ctx->groups; world ranks in group-rank order):";
    for (const auto& m : members) {
      s << " {";
      for (size_t i = 0; i < m.size(); ++i) s << (i ? ", " : "") << m[i];
      s << "}";
    }
    s << "\n";
  }
  return s.str();
}

}  // namespace

std::string render_io(const ProblemSpec& spec, const RunShape& run) {
  std::ostringstream s;
  s << header_lines(spec, run);
  s << "\npkb_run receives these inputs in in[] (row-major, contiguous, read-only):\n";
  int slot = 0;
  std::vector<std::string> scalars;
  auto scalar_vals = scalar_values(spec, run);
  for (const auto& in : spec.inputs) {
    if (in.scalar) {
      scalars.push_back(in.scalar->name + " = " + std::to_string(scalar_vals.at(in.scalar->name)));
      continue;
    }
    s << "- " << tensor_line("in[" + std::to_string(slot++) + "]", *in.tensor, run) << "\n";
    s << "    values: " << distribution_text(*in.tensor, run) << "\n";
  }
  if (slot == 0) s << "- (none)\n";
  for (const auto& sc : scalars)
    s << "- solution() argument " << sc << ": a constant of this run, not in in[]; use this value\n";
  s << "\npkb_run must fill these outputs in out[] (row-major, contiguous, every element, on every call):\n";
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const TensorSpec& t = spec.outputs[i];
    s << "- " << tensor_line("out[" + std::to_string(i) + "]", t, run) << "\n";
    if (t.replicated) s << "    must hold the same values on every rank\n";
  }
  return s.str();
}

}  // namespace pkb::prompt
