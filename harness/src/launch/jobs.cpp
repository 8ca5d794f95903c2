#include "launch/jobs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/dispatch_pin.h"
#include "core/error.h"
#include "launch/mpirun.h"
#include "protocol/instruments.h"
#include "spec/catalog.h"

namespace pkb {

std::vector<int> trial_range(int first, int last) {
  std::vector<int> t;
  for (int i = first; i <= last; ++i) t.push_back(i);
  return t;
}

std::string trial_list(int first, int last) {
  std::string s;
  for (int t : trial_range(first, last)) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

std::filesystem::path rank_program_path(RankProgram p) {
  return executable_dir() / (p == RankProgram::reference ? "pkb-rank" : "pkb-candidate");
}

std::future<void> prefetch_rank_job_libraries() {
  return std::async(std::launch::async, [] {
    for (RankProgram p : {RankProgram::candidate, RankProgram::reference}) {
      try {
        library_dirs_outside_system(rank_program_path(p));
      } catch (const std::exception&) {  // the launch calls it again and reports what went wrong
      }
    }
  });
}

ProcessResult run_rank_job(const RankJob& job) {
  const std::filesystem::path binary = rank_program_path(job.program);
  // In the sandbox the rank programs and pkb-runner lie in kSandboxBin: no host path on a command line, in
  // /proc/self/exe or in a message of theirs.
  std::vector<std::string> program = {(job.sandbox ? kSandboxBin / binary.filename() : binary).string()};
  program.insert(program.end(), job.args.begin(), job.args.end());
  // A sandboxed job always runs mpirun inside its sandbox (launch/mpirun.h says why srun cannot).
  bool srun = !job.sandbox && rank_launcher() == Launcher::srun;
  MpirunJob mpi = (srun ? srun_job : mpirun_job)({job.world, job.cuda, job.env}, program);
  ProcessOptions po;
  po.timeout_s = job.timeout_s;
  po.stdout_path = job.dir / (job.tag + ".stdout");
  po.stderr_path = job.dir / (job.tag + ".stderr");
  if (!job.sandbox) {
    po.env = mpi.env;
    return run_process(mpi.argv, po);
  }
  Sandbox box = *job.sandbox;
  box.read_only_at.push_back({binary, program.front()});
  for (const auto& d : library_dirs_outside_system(binary)) box.read_only.push_back(d);
  // The process a candidate pass runs the candidate in (worker/runner_main.cpp), found beside the rank program.
  if (std::filesystem::path runner = executable_dir() / "pkb-runner"; std::filesystem::exists(runner))
    box.read_only_at.push_back({runner, kSandboxBin / "pkb-runner"});
  for (const auto& [k, v] : mpi.env) box.env[k] = v;
  // Processes sharing a GPU inside the sandbox need its own MPS daemon (launch/sandbox.h); PKB_MPS_PLACE=host keeps
  // the host's, to measure the difference.
  const char* place = getenv("PKB_MPS_PLACE");
  box.own_mps = box.gpu && box.env.count("CUDA_MPS_PIPE_DIRECTORY") && !(place && std::string(place) == "host");
  if (const char* cvd = getenv("CUDA_VISIBLE_DEVICES"); cvd && !box.env.count("CUDA_VISIBLE_DEVICES"))
    box.env["CUDA_VISIBLE_DEVICES"] = cvd;
  apply_limits(po, job.limits);
  return run_sandboxed(box, mpi.argv, po);
}

namespace {

// A TCP port free on 127.0.0.1 now (the kernel picks it); another process may still take it before rank 0 binds
// it, which run_python_runner detects and retries.
int free_local_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw Error(std::string("socket: ") + strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  if (port < 0) throw Error(std::string("cannot find a free local port: ") + strerror(errno));
  return port;
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

double slowest_wall_s(const std::vector<ProcessResult>& ranks) {
  double wall = 0;
  for (const auto& pr : ranks) wall = std::max(wall, pr.wall_s);
  return wall;
}

// One result for the W ranks, from their records first: the rank that raised first, not the peers that then lost
// their connection to it or were killed.
PythonRunResult combine(const std::vector<ProcessResult>& ranks, const std::vector<nlohmann::json>& records) {
  PythonRunResult out;
  int skips = 0, failed = -1, raised = -1;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const nlohmann::json& rec = records[r];
    std::string status = rec.is_object() ? rec.value("status", "") : "";
    skips += status == "skip";
    if (status == "error" && (raised < 0 || rec.value("time", 0.0) < records[raised].value("time", 0.0)))
      raised = static_cast<int>(r);
    if (!ranks[r].ok() && failed < 0 && status != "skip") failed = static_cast<int>(r);
  }
  if (raised >= 0) {
    const nlohmann::json& rec = records[raised];
    std::string where = rec.value("where", "");
    out.detail =
        "rank " + std::to_string(raised) + ": " + rec.value("error", "?") + (where.empty() ? "" : " (" + where + ")");
    failed = raised;
  }
  const ProcessResult& lead = ranks[failed >= 0 ? failed : 0];
  static_cast<ProcessResult&>(out) = lead;
  out.wall_s = slowest_wall_s(ranks);
  if (failed < 0 && skips == static_cast<int>(ranks.size())) {
    out.outcome = PythonRunResult::Outcome::skip;
    out.detail = records[0].value("reason", "cannot run here");
  } else if (failed < 0 && skips == 0) {
    out.outcome = PythonRunResult::Outcome::ok;
  } else if (failed < 0) {
    out.detail = "the ranks disagree on whether reference.py can run here";
  } else if (out.detail.empty()) {
    std::string line = last_line(lead.stderr_tail);
    out.detail =
        "rank " + std::to_string(std::max(failed, 0)) + ": " + lead.summary() + (line.empty() ? "" : ": " + line);
  }
  if (out.outcome != PythonRunResult::Outcome::ok) out.stderr_tail = out.detail;      // what callers print
  if (out.outcome == PythonRunResult::Outcome::error && out.ok()) out.exit_code = 1;  // some rank did not finish
  return out;
}

bool port_taken(const PythonRunResult& r) {
  return r.detail.find("Address already in use") != std::string::npos ||
         r.detail.find("errno: 98") != std::string::npos;
}

}  // namespace

const std::string& python_with_torch() {
  static const std::string found = [] {
    std::vector<std::string> candidates = {"python3", "/usr/bin/python3"};
    if (const char* p = std::getenv("PKB_PYTHON"); p && *p) candidates = {p};
    // Looks for torch's files without importing it (~0.03 s, where the import costs ~1.6 s of CPU in every driver
    // that runs reference.py); a torch that is there but cannot be imported makes run_reference.py's ranks record a
    // skip that says why.
    for (const auto& py : candidates) {
      ProcessOptions po;
      po.timeout_s = 60;
      try {
        if (run_process({py, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"},
                        po)
                .ok())
          return py;
      } catch (const Error&) {  // no such program: the next candidate
      }
    }
    return std::string();
  }();
  return found;
}

std::vector<std::string> eager_gate_args(bool gated_gpu) {
  if (!gated_gpu || !protocol::eager_gate_requested()) return {};
  return {"--gate-lib", (executable_dir() / "libpkb_eager_gate.so").string()};
}

PythonRunResult run_python_runner(const PythonRunnerJob& job) {
  return run_python_batch(job, {{job.problem_dir, job.io_dir}}).front();
}

std::vector<PythonRunResult> run_python_batch(const PythonRunnerJob& job,
                                              const std::vector<PythonBatchEntry>& entries) {
  const std::string& python = python_with_torch();
  if (python.empty()) {
    PythonRunResult r;
    r.outcome = PythonRunResult::Outcome::skip;
    r.detail = r.stderr_tail = "no python3 here can import torch (set PKB_PYTHON)";
    return {r};
  }
  if (entries.empty()) throw Error("run_python_batch: no problems");
  std::vector<std::string> argv = {python, (repo_root() / "harness/python/run_reference.py").string()};
  for (const auto& e : entries)
    argv.insert(argv.end(), {"--problem-dir", e.problem_dir.string(), "--io", e.io_dir.string()});
  argv.insert(argv.end(),
              {"--trials", job.trials, "--device", enum_name(job.device), "--timeout", std::to_string(job.timeout_s)});
  argv.insert(argv.end(), job.extra_args.begin(), job.extra_args.end());
  const std::filesystem::path& log_dir = entries.front().io_dir;  // the ranks' stdout and stderr
  std::vector<std::map<std::string, std::string>> dispatch_env;   // the ranks inherit this process's allowed CPUs
  for (int r = 0; r < job.world; ++r)
    dispatch_env.push_back(dispatch_plan_env(dispatch_plan(r, job.world, allowed_cpus())));
  for (int attempt = 1;; ++attempt) {
    std::string port = std::to_string(free_local_port());
    std::vector<std::vector<std::string>> argvs;
    std::vector<ProcessOptions> opts;
    for (int r = 0; r < job.world; ++r) {
      for (const auto& e : entries) std::filesystem::remove(e.io_dir / ("py.rank" + std::to_string(r) + ".json"));
      ProcessOptions po;
      po.timeout_s = job.timeout_s * static_cast<double>(entries.size());
      po.stdout_path = log_dir / ("python.rank" + std::to_string(r) + ".stdout");
      po.stderr_path = log_dir / ("python.rank" + std::to_string(r) + ".stderr");
      po.env = {{"NCCL_NVLS_ENABLE", "0"},
                {"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
                {"OMP_NUM_THREADS", std::to_string(std::max(1, job.host_threads))},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", port},
                {"RANK", std::to_string(r)},
                {"LOCAL_RANK", std::to_string(r)},
                {"WORLD_SIZE", std::to_string(job.world)},
                {"LOCAL_WORLD_SIZE", std::to_string(job.world)}};
      // Where the rank's timing dispatches from: the rule pkb-rank follows, chosen here, applied by dispatch_pin.py.
      for (auto& [k, v] : dispatch_env[r]) po.env[k] = v;
      po.env.insert(job.env.begin(), job.env.end());
      argvs.push_back(argv);
      opts.push_back(po);
    }
    std::vector<ProcessResult> ranks = run_process_group(argvs, opts);
    std::vector<PythonRunResult> results;
    for (const auto& e : entries) {
      std::vector<nlohmann::json> records = read_records(e.io_dir, "py.rank", job.world);
      bool all_ok = std::all_of(records.begin(), records.end(),
                                [](const nlohmann::json& j) { return j.is_object() && j.value("status", "") == "ok"; });
      if (all_ok) {  // this problem finished on every rank, whatever happened to the launch later
        PythonRunResult ok;
        ok.outcome = PythonRunResult::Outcome::ok;
        ok.exited = true, ok.exit_code = 0;  // ok() must agree with the outcome (callers test either)
        ok.wall_s = slowest_wall_s(ranks);
        results.push_back(ok);
        continue;
      }
      results.push_back(combine(ranks, records));  // the problem that ended the launch: why
      // A skip of the whole launch (this Python cannot import torch) holds for every problem after it too.
      bool whole_launch = std::all_of(records.begin(), records.end(), [](const nlohmann::json& j) {
        return j.is_object() && j.value("scope", "") == "launch";
      });
      if (results.back().outcome == PythonRunResult::Outcome::skip && whole_launch)
        results.resize(entries.size(), results.back());
      break;
    }
    if (results.size() == 1 && results[0].outcome == PythonRunResult::Outcome::error && port_taken(results[0]) &&
        attempt < 3)
      continue;  // lost the race for the port
    return results;
  }
}

std::vector<nlohmann::json> read_records(const std::filesystem::path& dir, const std::string& prefix, int world) {
  std::vector<nlohmann::json> out;
  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir / (prefix + std::to_string(r) + ".json"));
    nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    out.push_back(j.is_discarded() ? nlohmann::json() : j);
  }
  return out;
}

std::vector<std::optional<protocol::RankRecord>> read_rank_records(const std::filesystem::path& dir, int world) {
  std::vector<std::optional<protocol::RankRecord>> out;
  for (int r = 0; r < world; ++r) {
    const std::filesystem::path path = dir / ("rank" + std::to_string(r) + ".json");
    std::ifstream in(path);
    std::string text = in ? std::string(std::istreambuf_iterator<char>(in), {}) : "";
    try {
      out.push_back(protocol::parse_rank_record(text));
    } catch (const protocol::ProtocolError& e) {
      throw protocol::ProtocolError(path.string() + ": " + e.what());
    }
  }
  return out;
}

protocol::RankRecord read_rank0_record(const std::filesystem::path& dir) {
  std::optional<protocol::RankRecord> rank0 = read_rank_records(dir, 1)[0];
  if (!rank0) throw protocol::ProtocolError((dir / "rank0.json").string() + ": no rank record");
  return *rank0;
}

std::optional<RankError> first_rank_error(const std::vector<std::optional<protocol::RankRecord>>& records) {
  for (size_t r = 0; r < records.size(); ++r) {
    const auto& rec = records[r];
    if (rec && rec->status != protocol::RankStatus::ok)
      return RankError{static_cast<int>(r), rec->status, rec->error.value_or("unknown error")};
  }
  return std::nullopt;
}

std::string stderr_tail(const ProcessResult& pr, size_t max_bytes) {
  const std::string& s = pr.stderr_tail;
  return s.size() > max_bytes ? s.substr(s.size() - max_bytes) : s;
}

}  // namespace pkb
