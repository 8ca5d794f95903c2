#include "launch/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/cores.h"
#include "core/files.h"
#include "io/safetensors_encode.h"
#include "launch/jobs.h"
#include "test_util.h"

namespace {

std::string read_or_empty(const std::filesystem::path& p) {  // "" when missing (or a /proc entry that is gone)
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return in ? text.str() : "";
}

}  // namespace

TEST(Process, ExitCodeAndOutputTails) {
  pkb::test::TempDir tmp;
  pkb::ProcessOptions o;
  o.stdout_path = tmp.path() / "out";
  o.stderr_path = tmp.path() / "err";
  o.env = {{"PKB_TEST_VAR", "hello"}};
  auto r = pkb::run_process({"sh", "-c", "echo $PKB_TEST_VAR; echo oops >&2; exit 3"}, o);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.stdout_tail, "hello\n");
  EXPECT_EQ(r.stderr_tail, "oops\n");
  EXPECT_EQ(r.summary(), "exit 3");
}

// Descriptors handed to the child by number (bwrap's --file reads them), also where each source holds the other's
// target number: swapped, neither overwrites the other.
TEST(Process, PassedDescriptorsReachTheChildByNumber) {
  pkb::test::TempDir tmp;
  auto file_at = [&](const std::string& name, int fd) {
    pkb::test::write_file(tmp.path() / name, name);
    int opened = ::open((tmp.path() / name).c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(dup3(opened, fd, O_CLOEXEC), fd);
    ::close(opened);
  };
  file_at("first", 8);
  file_at("second", 9);
  pkb::ProcessOptions o;
  o.stdout_path = tmp.path() / "out";
  o.pass_fds = {{8, 9}, {9, 8}};
  auto r = pkb::run_process({"sh", "-c", "cat <&9; echo; cat <&8"}, o);
  ::close(8), ::close(9);
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_EQ(r.stdout_tail, "first\nsecond");
}

TEST(Process, DeadlineKillsTheWholeProcessGroup) {
  pkb::test::TempDir tmp;
  pkb::ProcessOptions o;
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.5;
  // The child ignores SIGTERM and leaves a grandchild that would outlive it; both must die.
  auto marker = tmp.path() / "grandchild_alive";
  std::string script = "trap '' TERM; (sleep 3; touch " + marker.string() + ") & sleep 30";
  auto r = pkb::run_process({"sh", "-c", script}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_s, 3.0);
  EXPECT_NE(r.summary().find("timed out"), std::string::npos);
  sleep(4);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a grandchild survived the deadline";
}

// A process in a session of its own (as bwrap's namespace init is) escapes every process-group kill; one the child
// reports on ProcessOptions::info_fd dies with the group all the same.
// A process that left the command's group and session (as bwrap's namespace init does) dies with the command,
// reported on the info fd or not: the keeper (launch/process.cpp) inherits and kills what the command leaves.
TEST(Process, AProcessInAnotherSessionDiesWithTheGroupReportedOrNot) {
  for (bool reported : {true, false}) {
    pkb::test::TempDir tmp;
    pkb::ProcessOptions o;
    o.timeout_s = 0.5;
    o.kill_grace_s = 0.2;
    o.info_fd = reported ? 3 : -1;
    auto pid_file = tmp.path() / "pid";
    // Not a group leader, so setsid(1) calls setsid() and execs sleep under the same pid.
    std::string script = "setsid sleep 300.5 & echo $! > " + pid_file.string() +
                         (reported ? "; printf '{\n \"child-pid\": %s\n}\n' $! >&3" : "") + "; sleep 30";
    auto r = pkb::run_process({"sh", "-c", script}, o);
    EXPECT_TRUE(r.timed_out);
    pid_t escaped = std::stoi(pkb::read_text_file(pid_file));
    auto running = [&] {  // a zombie (killed, not yet reaped by its new parent) is not running
      int fd = ::open(("/proc/" + std::to_string(escaped) + "/stat").c_str(), O_RDONLY);
      if (fd < 0) return false;
      char buf[512];
      ssize_t got = ::read(fd, buf, sizeof buf - 1);  // fails with ESRCH once it is gone
      ::close(fd);
      return got > 0 && std::string(buf, static_cast<size_t>(got)).find(") Z ") == std::string::npos;
    };
    bool alive = running();
    for (int i = 0; i < 20 && alive; ++i) usleep(50000), alive = running();
    EXPECT_FALSE(alive) << (reported ? "the reported" : "the unreported") << " process outlived its group";
    if (alive) kill(escaped, SIGKILL);
  }
}

// A command that daemonizes (as nvidia-cuda-mps-control -d does) leaves its server running: run_process's keeper
// would kill it, and with the MPS daemon gone every GPU client silently ran in a context of its own.
TEST(Process, ADaemonStartedSoOutlivesItsCommand) {
  pkb::test::TempDir tmp;
  auto pid_file = tmp.path() / "pid";
  pkb::ProcessOptions o;
  o.timeout_s = 10;
  o.env = {{"PKB_TEST_DAEMON_MARK", "1"}};
  auto r = pkb::start_daemon_process({"sh", "-c", "sleep 300.9 & echo $! > " + pid_file.string()}, o);
  ASSERT_TRUE(r.ok()) << r.summary();
  pid_t daemon = std::stoi(pkb::read_text_file(pid_file));
  usleep(200000);
  std::string stat = read_or_empty("/proc/" + std::to_string(daemon) + "/stat");
  EXPECT_FALSE(stat.empty() || stat.find(") Z ") != std::string::npos) << "the daemon died with its command";
  EXPECT_NE(read_or_empty("/proc/" + std::to_string(daemon) + "/environ").find("PKB_TEST_DAEMON_MARK=1"),
            std::string::npos)
      << "the daemon lacks the environment it was given";
  kill(daemon, SIGKILL);
  pkb::ProcessOptions short_deadline;
  short_deadline.timeout_s = 0.3;
  auto hung = pkb::start_daemon_process({"sleep", "30"}, short_deadline);
  EXPECT_TRUE(hung.timed_out) << "a command that never returns is killed at its deadline";
}

// Forks a worker that, under kill_children_on_termination, runs `script` (given the file it must write the pid of
// the process it starts into) with an info fd, terminates the worker `delay_us` after that pid appears, and expects
// the handler to re-raise and the process to be gone (a zombie, killed but not yet reaped by its new parent, is gone).
namespace {
void expect_termination_kills(const std::function<std::string(const std::string& pid_file)>& script,
                              useconds_t delay_us, const char* what) {
  pkb::test::TempDir tmp;
  auto pid_file = tmp.path() / "pid";
  pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    pkb::kill_children_on_termination();
    pkb::ProcessOptions o;
    o.timeout_s = 60;
    o.info_fd = 3;
    pkb::run_process({"sh", "-c", script(pid_file.string())}, o);
    _exit(0);
  }
  for (int i = 0; i < 400 && read_or_empty(pid_file).empty(); ++i) usleep(10000);
  std::string text = read_or_empty(pid_file);
  ASSERT_FALSE(text.empty()) << "the child never started";
  pid_t started = std::stoi(text);
  usleep(delay_us);
  kill(worker, SIGTERM);
  int status = 0;
  waitpid(worker, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "the handler re-raises the signal";
  auto running = [&] {
    std::string stat = read_or_empty("/proc/" + std::to_string(started) + "/stat");
    return !stat.empty() && stat.find(") Z ") == std::string::npos;
  };
  bool alive = running();
  for (int i = 0; i < 20 && alive; ++i) usleep(50000), alive = running();
  EXPECT_FALSE(alive) << what;
  if (alive) kill(started, SIGKILL);
}
}  // namespace

// pkb killed while a child is still starting (bwrap builds its namespaces before it reports, tens of ms; a Slurm
// requeue can come then): the handler must kill the child's group, or what the child forked outlives pkb. The
// child here forks, then never reports, so the signal always lands in the wait (which it cuts to 2 s).
TEST(Process, ATerminationWhileTheChildIsStartingKillsItsGroup) {
  expect_termination_kills(
      [](const std::string& pid_file) { return "sleep 300.7 & echo $! > " + pid_file + "; sleep 30"; }, 0,
      "what the starting child forked outlived the terminated parent");
}

// What bwrap does when it starts a sandbox: it clones the namespace init, which leads a session of its own (out of
// reach of group kills) and gets its death signal only later, and reports it on the info fd. A termination in
// between must wait for the report and kill the init, not kill bwrap alone and leave the init running. Modelled by
// a child that starts an escaping process, reports it 0.6 s later, and is terminated 0.3 s in.
TEST(Process, ATerminationBeforeTheReportWaitsForItAndKillsTheReportedProcess) {
  expect_termination_kills(
      [](const std::string& pid_file) {
        return "setsid sleep 300.9 & echo $! > " + pid_file +
               "; sleep 0.6; printf '{\n \"child-pid\": %s\n}\n' $! >&3; sleep 30";
      },
      300000, "the process reported after the termination outlived the terminated parent");
}

TEST(Process, SignalIsReported) {
  pkb::ProcessOptions o;
  auto r = pkb::run_process({"sh", "-c", "kill -SEGV $$"}, o);
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.summary().find("signal 11"), std::string::npos);
}

// A program that cannot be started is the caller's error, never a result of the program's own (a missing bwrap once
// became a cached compile_error), and leaves no child behind.
TEST(Process, AMissingProgramThrowsAndSaysWhich) {
  pkb::ProcessOptions o;
  try {
    pkb::run_process({"/nonexistent/program"}, o);
    ADD_FAILURE() << "no exception for a program that does not exist";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot execute /nonexistent/program: No such file"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1) << "a child was left to reap";
  // A program that starts and then fails is still a result.
  EXPECT_EQ(pkb::run_process({"sh", "-c", "exit 127"}, o).exit_code, 127);
}

// The W ranks of a Python job: one rank failing must not leave its peers (blocked in a collective) running until
// the deadline, and the deadline still kills every member.
TEST(ProcessGroup, OneFailureEndsThePeersSoon) {
  pkb::test::TempDir tmp;
  pkb::ProcessOptions o;
  o.timeout_s = 60;
  o.stderr_path = tmp.path() / "err0";
  pkb::ProcessOptions peer = o;
  peer.stderr_path = tmp.path() / "err1";
  auto rs = pkb::run_process_group({{"sh", "-c", "echo boom >&2; exit 4"}, {"sh", "-c", "sleep 60"}}, {o, peer}, 0.5);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].exit_code, 4);
  EXPECT_EQ(rs[0].stderr_tail, "boom\n");
  EXPECT_EQ(rs[1].signal, SIGKILL);
  EXPECT_LT(rs[1].wall_s, 10.0);
  EXPECT_FALSE(rs[1].timed_out);
}

TEST(ProcessGroup, AllSucceedOrTheDeadlineKillsAll) {
  pkb::ProcessOptions o;
  auto ok = pkb::run_process_group({{"true"}, {"sh", "-c", "sleep 0.2"}}, {o, o});
  EXPECT_TRUE(ok[0].ok() && ok[1].ok());
  o.timeout_s = 0.5;
  o.kill_grace_s = 0.2;
  auto slow = pkb::run_process_group({{"sleep", "30"}, {"sleep", "30"}}, {o, o});
  for (const auto& r : slow) {
    EXPECT_TRUE(r.timed_out);
    EXPECT_LT(r.wall_s, 5.0);
  }
}

// Thread pools are sized by the cores a cgroup quota allows, not by the CPUs a container shows.
TEST(Cores, QuotaOfCpuMaxRoundsUpAndMaxIsUnlimited) {
  EXPECT_EQ(pkb::cores_from_cpu_max("1600000 100000\n"), 16);
  EXPECT_EQ(pkb::cores_from_cpu_max("150000 100000"), 2);  // 1.5 cores: two threads may run
  EXPECT_EQ(pkb::cores_from_cpu_max("50000 100000"), 1);
  EXPECT_FALSE(pkb::cores_from_cpu_max("max 100000").has_value());
  EXPECT_FALSE(pkb::cores_from_cpu_max("").has_value());
  EXPECT_FALSE(pkb::cores_from_cpu_max("garbage here").has_value());
  int cores = pkb::usable_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

namespace {

// A problem reference.py can run on one CPU rank: a scalar input n, one output filled with n.
pkb::PythonRunnerJob tiny_python_job(const std::filesystem::path& root, const std::string& body) {
  pkb::test::write_file(root / "problem/problem.json",
                        R"({"inputs": [{"name": "n", "value": 3}], "outputs": [{"name": "out"}]})");
  pkb::test::write_file(root / "problem/reference.py", "import torch\n\ndef solution(n):\n" + body);
  // The scalar travels as metadata, as the reference pass saves it (the bytes io/safetensors.h's writer gives).
  std::filesystem::create_directories(root / "io/trial0");
  pkb::write_file_atomically(root / "io/trial0/inputs.rank0.safetensors",
                             pkb::encode_safetensors({}, {{"scalar.n", "3"}}));
  pkb::PythonRunnerJob job;
  job.device = pkb::DeviceKind::cpu;
  job.problem_dir = root / "problem";
  job.io_dir = root / "io";
  job.timeout_s = 120;
  return job;
}

}  // namespace

// A launch whose every rank finished is ok() as well as outcome ok: evaluate tested ok() while the batch code set
// only the outcome, so every W = 1 evaluation on a GPU node failed its PyTorch-eager baseline with "exit -1".
TEST(PythonRunner, FinishedRanksAreOkByEitherTest) {
  ASSERT_FALSE(pkb::python_with_torch().empty()) << "no python3 with torch (scripts/setup.sh installs it)";
  pkb::test::TempDir tmp;
  pkb::PythonRunResult r =
      pkb::run_python_runner(tiny_python_job(tmp.path(), "    return torch.full((2,), float(n))\n"));
  EXPECT_EQ(r.outcome, pkb::PythonRunResult::Outcome::ok) << r.detail;
  EXPECT_TRUE(r.ok()) << r.summary();
  EXPECT_TRUE(std::filesystem::exists(tmp.path() / "io/trial0/py.rank0.safetensors"));

  pkb::test::TempDir bad;
  pkb::PythonRunResult e = pkb::run_python_runner(tiny_python_job(bad.path(), "    raise ValueError('no such n')\n"));
  EXPECT_EQ(e.outcome, pkb::PythonRunResult::Outcome::error);
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.detail.find("no such n"), std::string::npos) << e.detail;
}

// torch in each rank takes the job's host threads (OMP_NUM_THREADS): one by default; more where reference.py does a
// GPU's work on CPU (validate's shared-GPU fallback), else a large fp32 problem ran past its deadline on one thread.
TEST(PythonRunner, RanksUseTheJobsHostThreads) {
  ASSERT_FALSE(pkb::python_with_torch().empty()) << "no python3 with torch (scripts/setup.sh installs it)";
  for (int threads : {1, 3}) {
    pkb::test::TempDir tmp;
    pkb::PythonRunnerJob job = tiny_python_job(tmp.path(), "    return torch.full((2,), float(n))\n");
    job.host_threads = threads;
    pkb::PythonRunResult r = pkb::run_python_runner(job);
    ASSERT_TRUE(r.ok()) << r.summary();
    auto record = nlohmann::json::parse(pkb::read_text_file(tmp.path() / "io/py.rank0.json"));
    EXPECT_EQ(record.value("host_threads", 0), threads) << record.dump();
  }
}
