// Processes a test's run left behind, and pkb killed by SIGKILL at random moments (nothing it started may outlive it).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace pkb::test {

// A /proc file's text, "" where the process is gone (a read of an exited process's file fails with ESRCH: raw reads,
// since an ifstream turns that into an exception).
inline std::string proc_text(const std::filesystem::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  char buf[4096];
  for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(got));
  ::close(fd);
  return text;
}

// Processes whose command line contains `needle`. Processes come and go while /proc is walked: one that exits
// mid-read is simply not counted.
inline int processes_with(const std::string& needle) {
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == getpid()) continue;
    int fd = ::open((it->path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string cmd;
    char buf[4096];
    for (ssize_t got; (got = ::read(fd, buf, sizeof buf)) > 0;) cmd.append(buf, static_cast<size_t>(got));
    ::close(fd);
    if (cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

// Processes whose working directory lies under `dir` (those whose /proc entries this process may read).
inline int processes_in(const std::filesystem::path& dir) {
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || std::stoi(name) == getpid()) continue;
    std::error_code link_ec;
    std::filesystem::path cwd = std::filesystem::read_symlink(it->path() / "cwd", link_ec);
    if (!link_ec && cwd.string().rfind(dir.string(), 0) == 0) ++n;
  }
  return n;
}

// Processes descended from this one that still run (zombies of its own children reaped first). With this process a
// child subreaper, whatever a killed child leaves is re-parented here, so this counts everything it left.
inline int live_descendants() {
  while (waitpid(-1, nullptr, WNOHANG | __WALL) > 0) {
  }
  std::map<int, std::vector<int>> children;
  std::map<int, char> state;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = proc_text(it->path() / "stat");
    size_t paren = stat.rfind(')');  // "pid (comm) state ppid ...": the name may hold anything
    if (paren == std::string::npos || paren + 4 >= stat.size()) continue;
    state[std::stoi(name)] = stat[paren + 2];
    children[std::atoi(stat.c_str() + paren + 4)].push_back(std::stoi(name));
  }
  int alive = 0;
  for (std::vector<int> todo = {getpid()}; !todo.empty();) {
    int p = todo.back();
    todo.pop_back();
    for (int c : children[p]) alive += state[c] != 'Z', todo.push_back(c);
  }
  return alive;
}

// Starts `program args` (env added) as a child of its own, without a terminal or output.
inline pid_t start_detached(const std::string& program, const std::vector<std::string>& args,
                            const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  int null = ::open("/dev/null", O_RDWR);
  dup2(null, 0), dup2(null, 1), dup2(null, 2);
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  _exit(127);
}

// Runs `program args` `times` times, each killed by SIGKILL (pkb alone, not its group) after a random delay in
// [0, max_delay_s): returns, per kill, how many processes it left were still running 5 s later. This process becomes
// a child subreaper for it: everything the killed program started is re-parented here, sandboxed or not, whatever
// its command line or working directory (live_descendants). `fresh_start` runs before each start (removing what a
// resumed run would skip).
inline std::vector<int> leftovers_after_random_kills(const std::string& program, const std::vector<std::string>& args,
                                                     const std::map<std::string, std::string>& env, int times,
                                                     double max_delay_s, unsigned seed,
                                                     const std::function<void()>& fresh_start) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> delay(0, max_delay_s);
  std::vector<int> left;
  for (int i = 0; i < times; ++i) {
    fresh_start();
    pid_t pid = start_detached(program, args, env);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    int n = live_descendants();
    for (int tick = 0; tick < 50 && n > 0; ++tick) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      n = live_descendants();
    }
    left.push_back(n);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);  // the next test in this process finds its orphans where it expects them
  return left;
}

}  // namespace pkb::test
