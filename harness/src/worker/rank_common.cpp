// What pkb-rank and pkb-candidate share: one rank of a pkb job (one process per GPU, or per CPU rank), launched by
// the driver via mpirun. Reference pass by default (pkb-rank only); candidate pass with --candidate LIB. On a
// harness error it writes its record and aborts the whole job, so peers blocked in a collective or a device
// barrier never hang. With --batch FILE the reference pass runs for several problems in one launch (`pkb
// validate`: one MPI start-up and one libtorch load instead of one per problem); the driver launches again after
// the first problem that did not finish.
#include <cuda_runtime.h>
#include <mpi.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>

#include "core/cores.h"
#include "core/dispatch_pin.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "protocol/rank_plan.h"
#include "seal/seal.h"
#include "worker/worker.h"
#include "worker/worker_cli.h"

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

void write_rank_record(const std::string& out_dir, int rank, const protocol::RankRecord& record) {
  std::string text = nlohmann::json(record).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  if (seal().enabled()) {
    seal().send(FrameKind::record, "record", text);  // the copy that is judged
    return;
  }
  std::filesystem::create_directories(out_dir);
  write_file_atomically(out_dir + "/rank" + std::to_string(rank) + ".json", text + "\n");
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
  env.host_threads = std::max(1, usable_cores() / ranks_here);
  set_host_threads(env.host_threads);
  set_dispatch_slot(env.local_rank, ranks_here);
  if (o.device == DeviceKind::cuda) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw Error("--device cuda: no CUDA device visible");
    // More ranks than GPUs: ranks share GPUs round-robin (under the driver's MPS daemon, where it runs).
    env.shared_gpu = ranks_here > count;
    env.device = env.local_rank % count;
    if (cudaSetDevice(env.device) != cudaSuccess) throw Error("cudaSetDevice failed");
    env.cuda = true;
  }
  return env;
}

// One job per entry of a batch file: the shared options with the entry's problem, output directory and parameters.
std::vector<WorkerOptions> batch_jobs(const WorkerOptions& shared, const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read the file");
  std::vector<WorkerOptions> jobs;
  for (const protocol::RankBatchEntry& e : protocol::rank_batch_from_json(nlohmann::json::parse(in))) {
    WorkerOptions job = shared;
    job.problem_dir = e.problem_dir;
    job.out_dir = e.out_dir;
    job.params = e.params;
    jobs.push_back(job);
  }
  return jobs;
}

// The command line with the flags of `--plan FILE` (a JSON array of arguments) in place of that option: the candidate
// pass's schedule (trials, seed, copies, timing) travels in a file that the ranks read and delete before any
// candidate code starts, never on a command line that /proc shows to every process of the sandbox.
std::vector<std::string> arguments_with_plan(int argc, char** argv, std::string& plan_file) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--plan" && i + 1 < argc) {
      plan_file = argv[++i];
      std::ifstream in(plan_file);
      nlohmann::json plan = nlohmann::json::parse(in, nullptr, false);
      try {
        for (const auto& a : plan.get<protocol::RankPlan>().args) args.push_back(a);
      } catch (const protocol::ProtocolError& e) {
        throw Error("--plan " + plan_file + ": " + e.what());
      }
      continue;
    }
    args.push_back(argv[i]);
  }
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector from its back
  return args;
}

namespace {

// Parses the flags, those of a --plan file included; an exit code where parsing ended the program.
std::optional<int> parse_rank_flags(int argc, char** argv, const RankPasses& passes, WorkerOptions& o,
                                    std::string& plan_file) {
  const std::string& program = passes.program;
  CLI::App app{program + (passes.reference ? ": one rank of a pkb job (launched by pkb through mpirun)"
                                           : ": one rank of a candidate pass without libtorch (launched by pkb "
                                             "through mpirun)")};
  add_worker_flags(app, o);
  app.add_option("--plan", "a JSON array of these flags, read and deleted before the candidate starts");
  try {
    auto args = arguments_with_plan(argc, argv, plan_file);
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

// The jobs of this launch: one, or a batch file's (reference passes only); an exit code on a usage error.
std::optional<int> plan_jobs(const WorkerOptions& o, const RankPasses& passes, std::vector<WorkerOptions>& jobs) {
  const std::string& program = passes.program;
  if (!passes.reference && o.candidate.empty()) {
    std::cerr << program << ": runs candidate passes only (--candidate LIB); pkb-rank runs references\n";
    return 2;
  }
  if (o.batch_file.empty()) {
    if (o.problem_dir.empty() || o.out_dir.empty()) {
      std::cerr << program << ": --problem-dir and --out are required (or --batch FILE)\n";
      return 2;
    }
    jobs.push_back(o);
    return std::nullopt;
  }
  if (!o.candidate.empty()) {
    std::cerr << program << ": --batch runs reference passes only (a candidate runs alone)\n";
    return 2;
  }
  try {
    jobs = batch_jobs(o, o.batch_file);
  } catch (const std::exception& e) {
    std::cerr << program << ": --batch " << o.batch_file << ": " << e.what() << "\n";
    return 2;
  }
  return std::nullopt;
}

// MPI start-up, then the plan file deleted once every rank has read it, then the seal opened.
void join_job(int* argc, char*** argv, const WorkerOptions& o, const std::string& plan_file, const std::string& program,
              int& rank, int& world) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (!plan_file.empty()) {
    MPI_Barrier(MPI_COMM_WORLD);  // every rank has read it
    if (rank == 0) std::filesystem::remove(plan_file);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Opened before any candidate code is loaded; frames written here are out of the candidate's reach.
  if (!o.seal_dir.empty()) {
    try {
      g_seal = std::make_unique<SealWriter>(o.seal_dir + "/rank" + std::to_string(rank));
    } catch (const std::exception& e) {
      std::cerr << program << " " << rank << ": " << e.what() << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
}

// One job's pass, then its record; 0, or the code this rank aborted the whole job with.
int run_job(const WorkerOptions& job, int rank, int world, const RankPasses& passes) {
  const std::string& program = passes.program;
  protocol::RankRecord record;
  record.rank = rank;
  record.world = world;
  record.pass = job.candidate.empty() ? protocol::RankPass::reference : protocol::RankPass::candidate;
  auto started = std::chrono::steady_clock::now();
  try {
    WorkerEnv env = make_worker_env(job, rank, world);
    if (passes.configure) passes.configure(env);
    if (job.candidate.empty())
      passes.reference(job, env, record);
    else
      run_candidate_pass(job, env, record, passes.candidate_inputs);
    record.pass_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  } catch (const std::exception& e) {
    if (record.status == protocol::RankStatus::ok) record.status = protocol::RankStatus::error;
    record.error = e.what();
    write_rank_record(job.out_dir, rank, record);
    std::cerr << program << " " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 3);  // peers may be blocked in a collective with us
    return 3;
  }
  write_rank_record(job.out_dir, rank, record);
  if (record.status == protocol::RankStatus::runtime_error || record.status == protocol::RankStatus::crash) {
    // Only this rank may have failed; the others could be waiting for it anywhere. End the job now.
    std::cerr << program << " " << rank << ": " << record.error.value_or("") << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 4);
    return 4;
  }
  return 0;
}

}  // namespace

int rank_main(int argc, char** argv, const RankPasses& passes) {
  WorkerOptions o;
  std::string plan_file;
  if (auto code = parse_rank_flags(argc, argv, passes, o, plan_file)) return *code;
  // A candidate pass that judges code running beside it, in a runner process: no process of the sandbox may attach to
  // this one, read its memory or its /proc entries (environ, maps, fd, mem). (Where the candidate shares this process,
  // GPUs by default, nothing is gained and CUDA IPC between the ranks is left as it was.)
  if (!o.candidate.empty() && o.uses_runner()) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  std::vector<WorkerOptions> jobs;
  if (auto code = plan_jobs(o, passes, jobs)) return *code;

  int rank = 0, world = 1;
  join_job(&argc, &argv, o, plan_file, passes.program, rank, world);
  for (const WorkerOptions& job : jobs)
    if (int code = run_job(job, rank, world, passes)) return code;
  if (seal().enabled()) {
    try {
      seal().send(FrameKind::end, "end", "");
    } catch (const std::exception&) {
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}

}  // namespace pkb
