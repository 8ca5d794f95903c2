#include "launch/jobs.h"

#include <fstream>

#include "launch/mpirun.h"
#include "spec/catalog.h"

namespace pkb {

std::string trial_list(int first, int last) {
  std::string s;
  for (int t = first; t <= last; ++t) s += (t > first ? "," : "") + std::to_string(t);
  return s;
}

ProcessResult run_rank_job(const RankJob& job) {
  std::vector<std::string> program = {(executable_dir() / "pkb-rank").string()};
  program.insert(program.end(), job.args.begin(), job.args.end());
  MpirunJob mpi = mpirun_job({job.world, job.cuda, job.env}, program);
  ProcessOptions po;
  po.timeout_s = job.timeout_s;
  po.stdout_path = job.dir / (job.tag + ".stdout");
  po.stderr_path = job.dir / (job.tag + ".stderr");
  if (!job.sandbox) {
    po.env = mpi.env;
    return run_process(mpi.argv, po);
  }
  Sandbox box = *job.sandbox;
  box.read_only.push_back(program.front());
  for (const auto& d : library_dirs_outside_system(program.front())) box.read_only.push_back(d);
  for (const auto& [k, v] : mpi.env) box.env[k] = v;
  if (const char* cvd = getenv("CUDA_VISIBLE_DEVICES"); cvd && !box.env.count("CUDA_VISIBLE_DEVICES"))
    box.env["CUDA_VISIBLE_DEVICES"] = cvd;
  po.clear_env = true;
  apply_limits(po, job.limits);
  return run_process(sandbox_command(box, mpi.argv), po);
}

ProcessResult run_python_runner(const PythonRunnerJob& job) {
  std::vector<std::string> argv = {"python3", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                                   std::to_string(job.world), (repo_root() / "harness/python/run_reference.py").string(),
                                   "--problem-dir", job.problem_dir.string(), "--io", job.io_dir.string(),
                                   "--trials", job.trials, "--device", job.device};
  argv.insert(argv.end(), job.extra_args.begin(), job.extra_args.end());
  ProcessOptions po;
  po.timeout_s = job.timeout_s;
  po.stdout_path = job.io_dir / "torchrun.stdout";
  po.stderr_path = job.io_dir / "torchrun.stderr";
  po.env = {{"NCCL_NVLS_ENABLE", "0"}, {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"}, {"OMP_NUM_THREADS", "1"}};
  po.env.insert(job.env.begin(), job.env.end());
  return run_process(argv, po);
}

std::vector<nlohmann::json> read_rank_records(const std::filesystem::path& dir, int world) {
  std::vector<nlohmann::json> out;
  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir / ("rank" + std::to_string(r) + ".json"));
    nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    out.push_back(j.is_discarded() ? nlohmann::json() : j);
  }
  return out;
}

std::optional<RankError> first_rank_error(const std::vector<nlohmann::json>& records) {
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& rec = records[r];
    if (!rec.is_object()) continue;
    std::string status = rec.value("status", "ok");
    if (status != "ok") return RankError{static_cast<int>(r), status, rec.value("error", "unknown error")};
  }
  return std::nullopt;
}

std::string stderr_tail(const ProcessResult& pr, size_t max_bytes) {
  const std::string& s = pr.stderr_tail;
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

}  // namespace pkb
