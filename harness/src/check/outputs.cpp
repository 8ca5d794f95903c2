#include "check/outputs.h"

#include "inputs/inputs.h"

namespace pkb {

std::vector<OutputCheck> check_outputs(const ProblemSpec& spec, const RunShape& run, Policy policy,
                                       const std::vector<std::vector<at::Tensor>>& got,
                                       const std::vector<std::vector<at::Tensor>>& expected, bool check_replication) {
  // Contiguous CPU copies where needed, kept alive while their views are read.
  std::vector<at::Tensor> held;
  auto views = [&held](const std::vector<std::vector<at::Tensor>>& ranks) {
    std::vector<std::vector<TensorView>> out;
    for (const auto& rank : ranks) {
      out.emplace_back();
      for (const at::Tensor& t : rank) {
        held.push_back(t.device().is_cpu() && t.is_contiguous() ? t : t.to(at::kCPU).contiguous());
        out.back().push_back(tensor_view(held.back()));
      }
    }
    return out;
  };
  return check_output_views(spec, run, policy, views(got), views(expected), check_replication);
}

std::vector<at::Tensor> outputs_in_order(const ProblemSpec& spec, const NamedTensors& file) {
  std::vector<at::Tensor> out;
  for (const auto& o : spec.outputs) out.push_back(file.get(o.name));
  return out;
}

}  // namespace pkb
