// pkb-rank: the rank worker, one process per GPU (or per CPU rank), launched by the driver through mpirun.
// Reference mode: for each trial it builds this rank's inputs from the spec and the trial seed, runs the
// problem's libtorch reference and writes the outputs (safetensors) plus a JSON record. It never sees expected
// outputs and never loads candidate code. On any error it writes the record and aborts the whole job, so peers
// blocked in a collective do not hang.
#include <cuda_runtime.h>
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "comm/communicator.h"
#include "core/error.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "reference/reference.h"
#include "spec/problem_spec.h"

namespace pkb {
namespace {

using json = nlohmann::json;

struct WorkerOptions {
  std::string problem_dir;
  std::string device = "cpu";
  std::string dtype = "bf16";
  std::vector<int> trials = {0};
  uint64_t seed = 0;
  std::vector<std::string> params;  // K=V
  std::string out_dir;
  bool save_inputs = false;
  bool precise = false;  // run on fp32-upcast inputs (the precise reference of the robust policy)
};

std::map<std::string, int64_t> parse_params(const std::vector<std::string>& kvs) {
  std::map<std::string, int64_t> out;
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error("--param '" + kv + "': expected NAME=VALUE");
    out[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
  }
  return out;
}

std::string trial_dir(const std::string& out, int trial) { return out + "/trial" + std::to_string(trial); }

void check_outputs(const ProblemSpec& spec, const RunShape& run, int rank, const Tensors& outs) {
  if (outs.size() != spec.outputs.size())
    throw Error("reference returned " + std::to_string(outs.size()) + " outputs, problem.json lists " +
                std::to_string(spec.outputs.size()));
  for (size_t i = 0; i < outs.size(); ++i) {
    auto want = tensor_shape(spec.outputs[i], run, rank);
    if (outs[i].sizes().vec() != want)
      throw Error("reference output '" + spec.outputs[i].name + "' has shape " + c10::str(outs[i].sizes()) +
                  ", problem.json says " + c10::str(at::IntArrayRef(want)));
  }
}

json run_worker(const WorkerOptions& o, int rank, int world, json& record) {
  ProblemSpec spec = load_problem(o.problem_dir);
  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32, got '" + o.dtype + "'");
  RunShape run = resolve_run(spec, world, *dtype, parse_params(o.params));
  const ReferenceImpl* impl = find_reference(spec.slug);
  if (!impl) throw Error("no libtorch reference registered for '" + spec.slug + "' (is reference.cpp built?)");

  RankContext ctx;
  ctx.rank = rank;
  ctx.world = world;
  ctx.params = run.params;
  ctx.scalars = scalar_values(spec, run);
  ctx.float_dtype = o.precise ? at::kFloat : to_aten(run.float_dtype);

  std::unique_ptr<Communicator> world_comm;
  if (o.device == "cuda") {
#ifndef PKB_TORCH_HAS_CUDA
    throw Error("--device cuda: this build's libtorch has no CUDA support (CPU-only libtorch)");
#endif
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw Error("--device cuda: no CUDA device visible");
    const char* lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int local = lr ? std::atoi(lr) : rank;
    if (local >= count)
      throw Error("local rank " + std::to_string(local) + " has no GPU (" + std::to_string(count) + " visible)");
    cudaSetDevice(local);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, local);
    record["gpu"] = prop.name;
    ctx.device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local));
    world_comm = make_nccl_world();
  } else if (o.device == "cpu") {
    world_comm = make_mpi_world();
  } else {
    throw Error("--device must be cpu or cuda, got '" + o.device + "'");
  }
  record["device"] = ctx.device.str();
  ctx.comm = world_comm.get();
  std::vector<std::unique_ptr<Communicator>> group_comms;
  for (const auto& g : spec.groups) {
    auto [color, key] = group_color_key(g, run, rank);
    group_comms.push_back(world_comm->split(color, key));
    ctx.groups[g.name] = group_comms.back().get();
  }

  json trials = json::array();
  for (int trial : o.trials) {
    std::filesystem::create_directories(trial_dir(o.out_dir, trial));
    RankInputs in = make_inputs(spec, run, rank, trial, o.seed);
    if (o.save_inputs) {
      NamedTensors saved{in.names, in.tensors, {}};
      for (const auto& [k, v] : ctx.scalars) saved.metadata["scalar." + k] = std::to_string(v);
      write_safetensors(trial_dir(o.out_dir, trial) + "/inputs.rank" + std::to_string(rank) + ".safetensors", saved);
    }
    Tensors device_inputs;
    for (auto& t : in.tensors) {
      at::Tensor d = t.to(ctx.device);
      if (o.precise && at::isFloatingType(d.scalar_type())) d = d.to(at::kFloat);
      device_inputs.push_back(d);
    }
    world_comm->barrier();
    auto t0 = std::chrono::steady_clock::now();
    Tensors outs = impl->reference(ctx, device_inputs);
    world_comm->synchronize();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_outputs(spec, run, rank, outs);
    NamedTensors saved;
    for (size_t i = 0; i < outs.size(); ++i) {
      saved.names.push_back(spec.outputs[i].name);
      saved.tensors.push_back(outs[i].to(at::kCPU).contiguous());
    }
    write_safetensors(trial_dir(o.out_dir, trial) + "/rank" + std::to_string(rank) + ".safetensors", saved);
    trials.push_back({{"trial", trial}, {"seconds", seconds}});
  }
  return trials;
}

void write_record(const std::string& out_dir, int rank, const json& record) {
  std::filesystem::create_directories(out_dir);
  std::string path = out_dir + "/rank" + std::to_string(rank) + ".json";
  std::ofstream(path + ".tmp") << record.dump(2) << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

}  // namespace
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
  app.add_flag("--precise", o.precise, "run on fp32-upcast inputs");
  CLI11_PARSE(app, argc, argv);

  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  nlohmann::json record = {{"schema", "pkb.rank_record/1"}, {"rank", rank}, {"world", world}, {"status", "ok"}};
  try {
    record["trials"] = run_worker(o, rank, world, record);
  } catch (const std::exception& e) {
    record["status"] = "error";
    record["error"] = e.what();
    write_record(o.out_dir, rank, record);
    std::cerr << "pkb-rank " << rank << ": " << e.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 3);  // peers may be blocked in a collective with us
    return 3;
  }
  write_record(o.out_dir, rank, record);
  MPI_Finalize();
  return 0;
}
