#include "eval/oracle.h"

#include "check/expected.h"
#include "io/safetensors.h"
#include "launch/jobs.h"
#include "worker/worker.h"

namespace pkb {

namespace fs = std::filesystem;

void write_oracle_outputs(const OracleJob& job) {
  const ProblemSpec spec = load_problem(job.problem_dir);
  const RunShape& run = job.run;
  const protocol::RankRecord record = read_rank0_record(job.work);
  std::vector<std::pair<std::string, int>> calls;  // label, trial whose inputs it gets
  for (int t = 0; t <= job.trials; ++t) calls.push_back({"trial" + std::to_string(t), t});
  for (int k : record.timed_checks.value_or(std::vector<int>{}))
    calls.push_back({"copy" + std::to_string(k), kTimedTrialBase + k});
  for (const auto& [label, trial] : calls) {
    std::vector<Tensors> expected = expected_outputs(spec, run, all_rank_inputs(spec, run, trial, job.seed));
    for (int r = 0; r < run.world; ++r) {
      NamedTensors saved;
      for (size_t i = 0; i < spec.outputs.size(); ++i) {
        saved.names.push_back(spec.outputs[i].name);
        saved.tensors.push_back(expected[r][i].contiguous());
      }
      fs::create_directories(job.work / label);
      write_safetensors(job.work / label / ("oracle.rank" + std::to_string(r) + ".safetensors"), saved);
    }
  }
}

}  // namespace pkb
