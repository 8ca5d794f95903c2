// pkb-rank: the reference pass (libtorch references, baseline timing, `pkb validate`'s batches), and the candidate
// pass of a problem whose inputs a libtorch prepare step finishes (inputs/inputs.h). Every other candidate pass
// runs in pkb-candidate, which does not load libtorch (worker/candidate_main.cpp).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "inputs/inputs.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  using namespace pkb;
  RankPasses passes;
  passes.program = "pkb-rank";
  passes.reference = run_reference_pass;
  passes.configure = [](const WorkerEnv& env) { at::set_num_threads(env.host_threads); };
  passes.candidate_inputs.make = [](const ProblemSpec& spec, const RunShape& run, int rank, int trial, uint64_t seed) {
    RankInputs in = make_inputs(spec, run, rank, trial, seed);
    std::vector<HostTensor> out;
    for (size_t i = 0; i < in.tensors.size(); ++i) {
      at::Tensor t = in.tensors[i].contiguous();
      HostTensor h(in.names[i], from_aten(t.scalar_type()), t.sizes().vec());
      std::memcpy(h.data.get(), t.data_ptr(), h.bytes);
      out.push_back(std::move(h));
    }
    return out;
  };
  // ATen's OpenMP pool starts with its first parallel region: here, before the judged calls' pin.
  passes.candidate_inputs.start_pools = [] {
    if (at::get_num_threads() > 1) (void)at::ones({int64_t{1} << 17}).sum();
  };
  return rank_main(argc, argv, passes);
}
