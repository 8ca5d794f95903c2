// The two kinds of job the driver launches, shared by `pkb validate` and `pkb eval`: pkb-rank under mpirun and
// reference.py in W Python processes, each with a deadline, its output in the job directory, and the GPU safety
// settings (NVLink multicast off) in its environment. Plus reading what the ranks recorded.
#pragma once

#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "launch/process.h"
#include "launch/sandbox.h"
#include "protocol/rank_record.h"

namespace pkb {

// first, first+1, ..., last (WorkerOptions::trials), and the same as "first,...,last" for reference.py's --trials.
std::vector<int> trial_range(int first, int last);
std::string trial_list(int first, int last);

// The rank programs, built beside pkb: pkb-rank (references; candidates whose inputs need libtorch) and
// pkb-candidate (every other candidate, without libtorch).
enum class RankProgram { reference, candidate };
std::filesystem::path rank_program_path(RankProgram p);

struct RankJob {
  int world = 1;
  bool cuda = false;
  std::vector<std::string> args;  // the rank program's arguments (the program itself is added)
  std::filesystem::path dir;      // TAG.stdout / TAG.stderr go here
  std::string tag = "mpirun";
  double timeout_s = 120;
  std::map<std::string, std::string> env;  // extra variables for every rank, e.g. CUDA_VISIBLE_DEVICES
  const Sandbox* sandbox = nullptr;        // run mpirun and the ranks inside it (pkb-rank and its libraries are
                                           // bound in read-only); nullptr: directly
  SandboxLimits limits;                    // with a sandbox
  RankProgram program = RankProgram::reference;
};
ProcessResult run_rank_job(const RankJob& job);
// Resolves in the background what a sandboxed rank job binds of both rank programs' libraries (ldd of pkb-rank:
// ~0.3 s, since it maps libtorch's ~300 dependencies), so that the work before the first sandboxed launch hides
// it; the answer is kept for the process. The future's destructor waits for it; a failure is left for the launch itself
// to report.
std::future<void> prefetch_rank_job_libraries();

struct PythonRunnerJob {
  int world = 1;
  DeviceKind device = DeviceKind::cuda;
  std::filesystem::path problem_dir, io_dir;  // io_dir holds trialT/inputs.rankR.safetensors
  std::string trials = "0";
  std::vector<std::string> extra_args;  // e.g. --time --warmup N --iters N
  double timeout_s = 120;
  std::map<std::string, std::string> env;  // extra variables, e.g. CUDA_VISIBLE_DEVICES
  // torch's CPU threads in each rank (OMP_NUM_THREADS): 1 where the work is on a GPU or CPU ranks share the cores;
  // more where reference.py does a GPU's work on CPU (ranks sharing a GPU: gloo on CPU tensors).
  int host_threads = 1;
};

// reference.py's timing through the gate's flags (runtime/eager_gate.cu, libpkb_eager_gate.so beside pkb-rank):
// {"--gate-lib", PATH} where `gated_gpu` (the libtorch baseline is timed through the gate on a GPU) and
// PKB_EAGER_GATE=1 asks for it (protocol/instruments.h), else nothing.
std::vector<std::string> eager_gate_args(bool gated_gpu);

// One problem's result from the W ranks' launch: ok() exactly when the outcome is ok (the problem finished on every
// rank, even if a later problem of the batch then ended the launch); otherwise stderr_tail and detail say why.
struct PythonRunResult : ProcessResult {
  enum class Outcome { ok, skip, error } outcome = Outcome::error;
  std::string detail;  // skip: the reason; error: "rank R: Type: message (reference.py:L in f: code)"
};

// harness/python/run_reference.py in W processes that pkb starts itself (no torchrun: its flags and Python
// support differ across torch versions), rendezvous over env:// on a free local port, one process group killed
// as a whole on the deadline or soon after one rank fails. Outputs in io_dir/python.rankR.{stdout,stderr}.
PythonRunResult run_python_runner(const PythonRunnerJob& job);

// Several problems in one launch of the W processes (torch imported and the process group set up once; job's
// problem_dir and io_dir are ignored). Returns one result per problem in order, ending with the first whose outcome
// is not ok: the launch ends there (its peers may have been blocked), and the caller launches again for the rest.
// Logs go to the first entry's io_dir.
struct PythonBatchEntry {
  std::filesystem::path problem_dir, io_dir;
};
std::vector<PythonRunResult> run_python_batch(const PythonRunnerJob& job, const std::vector<PythonBatchEntry>& entries);

// The Python interpreter that can import torch: $PKB_PYTHON, else `python3` on PATH, else /usr/bin/python3
// (Debian's python3-torch when PATH's python3 is another one, e.g. pyenv's); "" when none can. Cached.
const std::string& python_with_torch();
// Whether some python3 here can import torch (python_with_torch is not empty).
inline bool python_torch_available() { return !python_with_torch().empty(); }

// dir/PREFIXR.json for every rank R (null where a rank wrote none or it does not parse).
std::vector<nlohmann::json> read_records(const std::filesystem::path& dir, const std::string& prefix, int world);
// dir/rankR.json, what pkb-rank records (protocol/rank_record.h): nullopt where a rank wrote none or it is not JSON;
// a file that is JSON but no rank record throws protocol::ProtocolError.
std::vector<std::optional<protocol::RankRecord>> read_rank_records(const std::filesystem::path& dir, int world);

// dir/rank0.json, the record of a pass of pkb's own (the reference pass); protocol::ProtocolError where there is none
// or it does not parse.
protocol::RankRecord read_rank0_record(const std::filesystem::path& dir);

struct RankError {
  int rank;
  protocol::RankStatus status;
  std::string message;
};
// The first rank record whose status is not ok.
std::optional<RankError> first_rank_error(const std::vector<std::optional<protocol::RankRecord>>& records);

// The end of a process's stderr: kMessageTailBytes for a one-line message, kRecordTailBytes for a record's
// failure detail (what a reader, or a model in its feedback, sees of a crash).
constexpr size_t kMessageTailBytes = 600, kRecordTailBytes = 2000;
std::string stderr_tail(const ProcessResult& pr, size_t max_bytes);

}  // namespace pkb
