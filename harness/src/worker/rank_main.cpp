// pkb-rank: one rank of a pkb job (one process per GPU, or per CPU rank), launched by the driver via mpirun.
// Reference pass by default; candidate pass with --candidate LIB. On a harness error it writes its record and
// aborts the whole job, so peers blocked in a collective or a device barrier never hang.
#include <cuda_runtime.h>
#include <mpi.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/error.h"
#include "seal/seal.h"
#include "worker/timing_cli.h"
#include "worker/worker.h"

namespace pkb {

std::filesystem::path trial_dir(const std::string& out, int trial) {
  return std::filesystem::path(out) / ("trial" + std::to_string(trial));
}

std::filesystem::path rank_path(const std::string& out, int trial, const std::string& prefix, int rank) {
  return trial_dir(out, trial) / (prefix + std::to_string(rank) + ".safetensors");
}

namespace {
std::unique_ptr<SealWriter> g_seal;
}

SealWriter& seal() {
  if (!g_seal) g_seal = std::make_unique<SealWriter>("");
  return *g_seal;
}

void write_rank_record(const std::string& out_dir, int rank, const nlohmann::json& record) {
  std::string text = record.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (seal().enabled()) {
    seal().send("record", "record", text);  // the copy that is judged
    return;
  }
  std::filesystem::create_directories(out_dir);
  std::string path = out_dir + "/rank" + std::to_string(rank) + ".json";
  std::ofstream(path + ".tmp") << text << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

WorkerEnv make_worker_env(const WorkerOptions& o, int rank, int world) {
  WorkerEnv env;
  env.rank = rank;
  env.world = world;
  env.spec = load_problem(o.problem_dir);
  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32, got '" + o.dtype + "'");
  env.run = resolve_run(env.spec, world, *dtype, parse_param_overrides(o.params));
  const char* lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  env.local_rank = lr ? std::atoi(lr) : rank;
  // Host-side work (input generation) shares the node's cores with the other ranks on it.
  const char* local_size = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int ranks_here = std::max(1, local_size ? std::atoi(local_size) : world);
  at::set_num_threads(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks_here));
  if (o.device == "cuda") {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw Error("--device cuda: no CUDA device visible");
    // More ranks than GPUs: ranks share GPUs round-robin (under the driver's MPS daemon, where it runs).
    env.shared_gpu = ranks_here > count;
    env.device = env.local_rank % count;
    if (cudaSetDevice(env.device) != cudaSuccess) throw Error("cudaSetDevice failed");
    env.cuda = true;
  } else if (o.device != "cpu") {
    throw Error("--device must be cpu or cuda, got '" + o.device + "'");
  }
  return env;
}

}  // namespace pkb

int main(int argc, char** argv) {
  using namespace pkb;
  WorkerOptions o;
  CLI::App app{"pkb-rank: one rank of a pkb job (launched by pkb through mpirun)"};
  app.add_option("--problem-dir", o.problem_dir, "problems/NNN_slug")->required();
  app.add_option("--device", o.device, "cpu or cuda");
  app.add_option("--dtype", o.dtype, "float dtype: bf16 or fp32");
  app.add_option("--trials", o.trials, "trial indices")->delimiter(',');
  app.add_option("--seed", o.seed, "base seed");
  app.add_option("--param", o.params, "NAME=VALUE parameter override");
  app.add_option("--out", o.out_dir, "output directory")->required();
  app.add_flag("--save-inputs", o.save_inputs, "also write each rank's inputs");
  app.add_flag("--precise", o.precise, "reference only on fp32-upcast inputs");
  app.add_flag("--precise-too", o.precise_too, "also write the precise (fp32-upcast) reference outputs");
  app.add_flag("--time", o.time, "time after the checked trials");
  add_timing_flags(&app, o.timing);
  app.add_option("--post-trial", o.post_trial, "trial checked after timing (candidate pass)");
  app.add_option("--candidate", o.candidate, "candidate shared library: run the candidate pass");
  app.add_option("--heap-mib", o.heap_mib, "symmetric heap arena for the candidate's symm_alloc, MiB");
  app.add_option("--seal", o.seal_dir, "directory of the driver's FIFOs: send outputs and records there (sealed)");
  app.add_option("--rotation-copies", o.rotation_copies, "input copies for timing (candidate pass: the reference's)");
  app.add_option("--warmup-copies", o.warmup_copies, "of those, the warm-up rotation (candidate pass: the reference's)");
  app.add_option("--timed-checks", o.timed_checks, "reference pass: random draws naming the copies whose outputs are kept")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  // Opened before any candidate code is loaded; frames written here are out of the candidate's reach.
  if (!o.seal_dir.empty()) {
    try {
      g_seal = std::make_unique<SealWriter>(o.seal_dir + "/rank" + std::to_string(rank));
    } catch (const std::exception& e) {
      std::cerr << "pkb-rank " << rank << ": " << e.what() << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  nlohmann::json record = {{"schema", "pkb.rank_record/1"}, {"rank", rank}, {"world", world}, {"status", "ok"},
                           {"pass", o.candidate.empty() ? "reference" : "candidate"}};
  try {
    WorkerEnv env = make_worker_env(o, rank, world);
    if (o.candidate.empty())
      run_reference_pass(o, env, record);
    else
      run_candidate_pass(o, env, record);
  } catch (const std::exception& e) {
    if (record["status"] == "ok") record["status"] = "error";
    record["error"] = e.what();
    write_rank_record(o.out_dir, rank, record);
    std::cerr << "pkb-rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 3);  // peers may be blocked in a collective with us
    return 3;
  }
  write_rank_record(o.out_dir, rank, record);
  if (record["status"] == "runtime_error") {
    // Only this rank may have failed; the others could be waiting for it anywhere. End the job now.
    std::cerr << "pkb-rank " << rank << ": " << record.value("error", "") << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 4);
    return 4;
  }
  if (seal().enabled()) {
    try {
      seal().send("end", "end", "");
    } catch (const std::exception&) {
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
