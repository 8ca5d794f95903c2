#include "check/output_views.h"

#include "core/error.h"

namespace pkb {

std::string OutputCheck::where() const {
  return "rank " + std::to_string(rank) + " output '" + output + "'" + (replication ? " vs rank 0 (replicated)" : "");
}

std::vector<OutputCheck> check_output_views(const ProblemSpec& spec, const RunShape& run, Policy policy,
                                            const std::vector<std::vector<TensorView>>& got,
                                            const std::vector<std::vector<TensorView>>& expected,
                                            bool check_replication) {
  std::vector<OutputCheck> checks;
  for (size_t r = 0; r < got.size(); ++r) {
    if (got[r].size() != spec.outputs.size() || expected.at(r).size() != spec.outputs.size())
      throw Error("rank " + std::to_string(r) + ": " + std::to_string(got[r].size()) + " outputs and " +
                  std::to_string(expected.at(r).size()) + " expected, the problem has " +
                  std::to_string(spec.outputs.size()));
    for (size_t i = 0; i < spec.outputs.size(); ++i) {
      const TensorSpec& out = spec.outputs[i];
      const DType want = tensor_dtype(out, run);
      OutputCheck c{static_cast<int>(r), out.name, false, {}};
      if (got[r][i].dtype != want) {
        c.result.error = std::string("dtype ") + dtype_aten_name(got[r][i].dtype) + " != " + dtype_aten_name(want);
        checks.push_back(c);
        continue;
      }
      // pkb is the paper's allclose whatever the problem's tolerance says (which tightens or loosens robust only),
      // so that its pass@k is comparable with ParallelKernelBench's.
      c.result = compare_views(policy, got[r][i], expected[r][i],
                               policy == Policy::paper_allclose ? Tolerance{} : spec.tolerance, want);
      checks.push_back(c);
      if (check_replication && out.replicated && r > 0) {
        OutputCheck rep{static_cast<int>(r), out.name, true,
                        compare_views(Policy::robust, got[r][i], got[0][i], spec.tolerance, want)};
        checks.push_back(rep);
      }
    }
  }
  return checks;
}

std::vector<TensorView> output_views_in_order(const ProblemSpec& spec, const HostTensors& file) {
  std::vector<TensorView> out;
  for (const auto& o : spec.outputs) {
    const HostTensor& t = file.get(o.name);
    out.push_back({t.dtype, t.shape, t.data.get()});
  }
  return out;
}

}  // namespace pkb
