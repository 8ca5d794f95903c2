// What every problem's check test (problems/NNN_slug/check_test.cpp) starts from: the problem loaded, the run
// resolved, every rank's inputs drawn and the oracle's expected outputs, through the same functions `pkb eval`
// uses (check/expected.h, check/outputs.h), so a verdict here is the verdict eval would give. Every check test
// uses it (problems 74 and 75 through delta_rule_cp.h).
//
// It lives under tests/ rather than harness/src/check because only tests use it: the library keeps to what pkb
// runs, and only pkb_problem_tests gets this folder on its include path (tests/CMakeLists.txt). Header-only, so
// that target needs no extra library.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "check/compare.h"
#include "check/expected.h"
#include "check/outputs.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace pkb::check_test {

struct Case {
  ProblemSpec spec;
  RunShape run;
  std::vector<Tensors> inputs;    // [rank], problem.json's tensor inputs in order
  std::vector<Tensors> expected;  // [rank], the oracle's outputs in problem.json's order
};

struct CaseOptions {
  std::map<std::string, int64_t> params = {};  // overrides of problem.json's parameters (applied after `small`'s)
  bool small = false;                          // start from problem.json's test_parameters, as `pkb validate --small`
  DType dtype = DType::bf16;
  int trial = 0;
  uint64_t seed = 1;
  // Changes the drawn inputs before the oracle sees them (e.g. PKB's own fills, to show what its check misses).
  // Such inputs are not what eval draws; the test says why it wants them.
  std::function<void(std::vector<Tensors>&)> edit_inputs = {};
};

// folder: "NNN_slug" under problems/. Throws pkb::Error as load_problem and resolve_run do.
inline Case make_case(const std::string& folder, int world, const CaseOptions& opt = {}) {
  Case c;
  c.spec = load_problem(repo_root() / "problems" / folder);
  std::map<std::string, int64_t> params = opt.small ? c.spec.test_parameters : std::map<std::string, int64_t>{};
  for (const auto& [name, value] : opt.params) params[name] = value;
  c.run = resolve_run(c.spec, world, opt.dtype, params);
  c.inputs = all_rank_inputs(c.spec, c.run, opt.trial, opt.seed);
  if (opt.edit_inputs) opt.edit_inputs(c.inputs);
  c.expected = expected_outputs(c.spec, c.run, c.inputs);
  return c;
}

// Every rank's outputs (got[r] in problem.json's order) checked as eval checks them: dtypes, each output against
// the expected one under `policy`, replicated outputs against rank 0's.
inline std::vector<OutputCheck> checks(const Case& c, const std::vector<Tensors>& got, Policy policy = Policy::robust) {
  return check_outputs(c.spec, c.run, policy, got, c.expected, /*check_replication=*/true);
}

// Eval's verdict: whether every robust check passes. On a failure, `why` (if given) gets the first one's place
// and summary.
inline bool passes(const Case& c, const std::vector<Tensors>& got, std::string* why = nullptr) {
  for (const OutputCheck& check : checks(c, got))
    if (!check.result.pass) {
      if (why) *why = check.where() + ": " + describe(check.result);
      return false;
    }
  return true;
}

// One output of one rank against its expected tensor under the robust policy, at the output's dtype's eps. No
// dtype or replication check: for tests that build a single rank's tensor.
inline bool passes(const Case& c, int rank, size_t output, const at::Tensor& out) {
  at::ScalarType dtype = to_aten(tensor_dtype(c.spec.outputs.at(output), c.run));
  return compare(Policy::robust, out, c.expected.at(rank).at(output), c.spec.tolerance, dtype).pass;
}

// The same outputs on every rank (a kernel whose outputs are replicated, computed once).
inline std::vector<Tensors> on_every_rank(const Case& c, const Tensors& outputs) {
  return std::vector<Tensors>(c.run.world, outputs);
}

}  // namespace pkb::check_test
