#include "check/expected.h"

#include "core/error.h"
#include "inputs/inputs.h"

namespace pkb {

std::vector<Tensors> all_rank_inputs(const ProblemSpec& spec, const RunShape& run, int trial, uint64_t seed) {
  std::vector<Tensors> inputs;
  for (int r = 0; r < run.world; ++r) inputs.push_back(make_inputs(spec, run, r, trial, seed).tensors);
  return inputs;
}

std::vector<Tensors> expected_outputs(const ProblemSpec& spec, const RunShape& run,
                                      const std::vector<Tensors>& inputs) {
  const ReferenceImpl* impl = find_reference(spec.slug);
  if (!impl) throw Error(spec.folder() + ": no reference.cpp registered for '" + spec.slug + "'");
  std::vector<Tensors> expected = impl->oracle(oracle_context(spec, run), inputs);
  if (static_cast<int>(expected.size()) != run.world)
    throw Error(spec.folder() + ": oracle returned outputs for " + std::to_string(expected.size()) +
                " ranks, W = " + std::to_string(run.world));
  for (int r = 0; r < run.world; ++r) {
    if (expected[r].size() != spec.outputs.size())
      throw Error(spec.folder() + ": oracle returned " + std::to_string(expected[r].size()) + " outputs for rank " +
                  std::to_string(r) + ", problem.json lists " + std::to_string(spec.outputs.size()));
    for (size_t i = 0; i < spec.outputs.size(); ++i) {
      auto want = tensor_shape(spec.outputs[i], run, r);
      if (expected[r][i].sizes().vec() != want)
        throw Error(spec.folder() + ": oracle output '" + spec.outputs[i].name + "' of rank " + std::to_string(r) +
                    " has shape " + c10::str(expected[r][i].sizes()) + ", problem.json says " +
                    c10::str(at::IntArrayRef(want)));
    }
  }
  return expected;
}

}  // namespace pkb
