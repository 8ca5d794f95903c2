// Scaffolding for the problems' check tests (problems/NNN_slug/check_test.cpp): one call of a problem as pkb eval
// sees it, with every rank's prepared inputs and the oracle's expected outputs, and the verdict a set of
// outputs would get. Used by problems 74 and 75 so far; the other check tests still define their own Case.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "check/expected.h"
#include "check/outputs.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace pkb::test {

struct ProblemCase {
  ProblemSpec spec;
  RunShape run;
  std::vector<Tensors> in, expected;  // [rank]: prepared inputs (CPU), the oracle's outputs

  // `folder` under problems/ (e.g. "075_fla_gated_deltanet_cp"); the inputs of `trial` from seed 1.
  ProblemCase(const std::string& folder, int world, DType dtype = DType::bf16,
              const std::map<std::string, int64_t>& params = {}, int trial = 0)
      : spec(load_problem(repo_root() / "problems" / folder)), run(resolve_run(spec, world, dtype, params)) {
    for (int r = 0; r < world; ++r) in.push_back(make_inputs(spec, run, r, trial, 1).tensors);
    expected = expected_outputs(spec, run, in);
  }

  // Whether every rank's outputs pass, replication included, as pkb eval checks them.
  bool passes(const std::vector<Tensors>& got, Policy policy = Policy::robust) const {
    for (const auto& c : check_outputs(spec, run, policy, got, expected, true))
      if (!c.result.pass) return false;
    return true;
  }
};

}  // namespace pkb::test
