// The verdict against candidates that try to forge it (tests/fixtures/adversarial): each evaluation must end in
// the right status, and nothing outside the sandbox may change: no file written, no connection made, no secret
// in the record, no process left running, the reference cache intact.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "../unit/leftovers.h"
#include "../unit/test_util.h"
#include "core/dispatch_pin.h"
#include "core/files.h"
#include "core/sha256.h"
#include "launch/process.h"
#include "spec/catalog.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kFixtures = pkb::repo_root() / "tests/fixtures/adversarial";
const fs::path kFixtureHeader = pkb::repo_root() / "tests/fixtures/cpu/fixture.h";  // shared with the CPU fixtures
// The reference cache of every test whose candidate does not attack caches: one reference pass for them all (the
// cache is built to be shared by concurrent evaluations; ~2 s of CPU per pass saved). The tests of cache attacks and
// damage, and those that kill pkb mid-evaluation, keep caches of their own.
const fs::path kSharedCache = PKB_TEST_CACHE;

// A candidate in its own folder (with fixture.h beside it), with the test's macros prepended.
fs::path stage(const fs::path& dir, const std::string& fixture, const std::string& macros = "",
               const std::string& file_name = "") {
  fs::create_directories(dir);
  fs::copy_file(kFixtureHeader, dir / "fixture.h", fs::copy_options::overwrite_existing);
  fs::path dst = dir / (file_name.empty() ? fixture + ".cpp" : file_name);
  pkb::test::write_file(dst, macros + pkb::read_text_file(kFixtures / (fixture + ".cpp")));
  return dst;
}

struct Eval {
  int exit_code;
  json record;
  std::string out, err;
};

Eval eval(const fs::path& src, const fs::path& out, const fs::path& cache, double timeout_s = 60,
          std::map<std::string, std::string> env = {}, const std::string& world = "2",
          const std::vector<std::string>& extra = {}) {
  // A paper warm-up budget no run reaches: its 500 calls always run, so fixtures that count calls from the
  // command line (skip_when_unchecked) know where the timed calls start, the strongest position to attack from.
  // The repetitions are as few as still time both methods twice: the attacks are on the checks, not the speed.
  auto r = pkb::test::run_cli(PKB_BINARY,
                              pkb::test::joined({{
                                                     "eval",
                                                     src.string(),
                                                     "--problem",
                                                     "1",
                                                     "-w",
                                                     world,
                                                     "--device",
                                                     "cpu",
                                                     "--param",
                                                     "M=64",
                                                     "--param",
                                                     "N=48",
                                                     "--trials",
                                                     "2",
                                                     "--warmup",
                                                     "1",
                                                     "--iters",
                                                     "5",
                                                     "--paper-warmup-budget",
                                                     "600",
                                                 },
                                                 pkb::test::kTwoRepetitions,
                                                 {"--timeout", std::to_string(timeout_s), "--out", out.string(),
                                                  "--cache", cache.string(), "--json"},
                                                 extra}),
                              env, 300);
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "pkb eval printed no JSON record:\n" << r.out << r.err;
  // Every record appended to results.jsonl is valid JSON, whatever bytes the candidate produced.
  std::ifstream lines(out / "results.jsonl");
  for (std::string line; std::getline(lines, line);)
    EXPECT_FALSE(json::parse(line, nullptr, false).is_discarded()) << line;
  return {r.exit_code, j.is_discarded() ? json() : j, r.out, r.err};
}

// sha256 of every file under dir (relative path -> digest).
std::map<std::string, std::string> digests(const fs::path& dir) {
  std::map<std::string, std::string> d;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) d[fs::relative(e.path(), dir).string()] = pkb::sha256_hex(pkb::read_text_file(e.path()));
  return d;
}

using pkb::test::processes_in;
using pkb::test::processes_with;

// Every process now: its parent and its start time (fields 4 and 22 of /proc/PID/stat), so that one found again is
// known to be the same process and not a new one given its number.
struct Proc {
  int parent;
  std::string started;
};
std::map<int, Proc> process_table() {
  std::map<int, Proc> table;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = pkb::test::proc_text(it->path() / "stat");
    size_t paren = stat.rfind(')');  // the command's name may hold spaces and parentheses
    if (paren == std::string::npos || paren + 2 > stat.size()) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)), {});
    if (f.size() >= 20) table[std::stoi(name)] = {std::stoi(f[1]), f[19]};  // f[0] is the state
  }
  return table;
}

// The processes descended from `root` now (pid -> start time). Inside a sandbox they have no host path in their
// command lines or working directories to be found by.
std::map<int, std::string> descendants(int root) {
  std::map<int, Proc> table = process_table();
  std::map<int, std::vector<int>> children;
  for (const auto& [pid, p] : table) children[p.parent].push_back(pid);
  std::map<int, std::string> out;
  for (std::vector<int> todo = {root}; !todo.empty();) {
    int p = todo.back();
    todo.pop_back();
    for (int c : children[p]) out[c] = table[c].started, todo.push_back(c);
  }
  return out;
}

// How many of `procs` (pid -> start time) still run.
int still_running(const std::map<int, std::string>& procs) {
  std::map<int, Proc> table = process_table();
  int n = 0;
  for (const auto& [pid, started] : procs) n += table.count(pid) && table[pid].started == started;
  return n;
}

// A TCP listener on the host's loopback that counts the connections it accepts.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    listen(fd_, 8);
    fcntl(fd_, F_SETFL, O_NONBLOCK);
    thread_ = std::thread([this] {
      while (!stop_) {
        int c = accept(fd_, nullptr, nullptr);
        if (c >= 0) ++accepted_, close(c);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  ~Listener() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// The honest kernel, as the adversarial ones see the world: a copy of tests/fixtures/cpu/correct.cpp.
fs::path honest(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(kFixtureHeader, dir / "fixture.h", fs::copy_options::overwrite_existing);
  fs::copy_file(pkb::repo_root() / "tests/fixtures/cpu/correct.cpp", dir / "correct.cpp",
                fs::copy_options::overwrite_existing);
  return dir / "correct.cpp";
}

TEST(Security, EscapesReachNothing) {
  pkb::test::TempDir tmp;
  fs::path target = tmp.path() / "outside";
  fs::create_directories(target);
  std::string canary = "canary-" + std::to_string(std::random_device{}());
  pkb::test::write_file(target / "canary", canary);
  std::string marker = "3000." + std::to_string(100000 + std::random_device{}() % 800000);
  Listener listener;
  std::string secret = "sk-test-" + std::to_string(std::random_device{}());
  std::string macros = "#define PKB_TARGET_DIR \"" + target.string() + "\"\n#define PKB_PORT " +
                       std::to_string(listener.port()) + "\n#define PKB_MARKER \"" + marker + "\"\n";
  auto e = eval(stage(tmp.path() / "cand", "escape", macros), tmp.path() / "eval", kSharedCache, 60,
                {{"PKB_TEST_SECRET", secret}});
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_TRUE(e.record["sandbox"].value("enabled", false));
  EXPECT_EQ(e.record["sandbox"].value("candidate_process", ""), "runner process");
  EXPECT_FALSE(e.record["sandbox"].contains("lockdown_note")) << e.record["sandbox"].dump();
  EXPECT_FALSE(fs::exists(target / "shell-was-here"));
  EXPECT_FALSE(fs::exists(target / "file-was-written"));
  EXPECT_EQ(listener.accepted(), 0);
  // What it printed reached the logs, but none of what it looked for was there to print.
  std::string logs = e.out + e.err;
  for (const auto& f : fs::recursive_directory_iterator(tmp.path() / "eval"))
    if (f.is_regular_file()) logs += pkb::read_text_file(f.path());
  EXPECT_NE(logs.find("secret: (none)"), std::string::npos) << "the candidate's stderr should be in its run directory";
  EXPECT_EQ(logs.find(canary), std::string::npos);
  EXPECT_EQ(logs.find(secret), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(processes_with(marker), 0) << "a process the candidate started outlived its evaluation";
}

// A kernel that prints where it runs (its environment, working directory, program, mounts, command line) and
// crashes (issue 43): what a model is shown of the evaluation (prompt/feedback.cpp: the message, the failure with its
// stderr tail, the compiler's log; an agent's evaluate tool gives the same) and every log of the candidate pass name
// no host path of the run: not the run directory, not the candidate's folder (both in the test's directory), not the
// cache.
TEST(Security, NoHostPathOfTheRunReachesTheCandidate) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "host_paths"), tmp.path() / "eval", kSharedCache);
  ASSERT_EQ(e.record.value("status", ""), "crash") << e.out << e.err;
  std::string seen = e.record.value("message", "") + "\n" + e.record.value("failure", json()).dump() + "\n" +
                     e.record.value("compile", json::object()).value("log", "");
  std::string logs;
  for (const auto& f : fs::recursive_directory_iterator(tmp.path() / "eval"))
    if (f.is_regular_file() && (f.path().extension() == ".stderr" || f.path().extension() == ".stdout"))
      logs += pkb::read_text_file(f.path());
  ASSERT_NE(logs.find("mountinfo: "), std::string::npos) << "the candidate's printout should be in its logs:\n" << logs;
  EXPECT_NE(logs.find("HOME=/pkb/work"), std::string::npos) << logs;
  EXPECT_NE(seen.find("cwd=/pkb/work"), std::string::npos) << "the stderr tail should end with the printout: " << seen;
  for (const std::string host : {tmp.path().string(), fs::path(kSharedCache).string()}) {
    EXPECT_EQ(seen.find(host), std::string::npos) << host << " in what a model sees:\n" << seen;
    EXPECT_EQ(logs.find(host), std::string::npos) << host << " in the candidate pass's logs:\n" << logs;
  }
}

TEST(Security, CannotReadOrPoisonTheReferenceCache) {
  pkb::test::TempDir tmp;
  auto first = eval(honest(tmp.path() / "honest"), tmp.path() / "eval", tmp.path() / "cache");
  ASSERT_EQ(first.record.value("status", ""), "correct") << first.out << first.err;
  auto before = digests(tmp.path() / "cache/reference");
  std::string macros = "#define PKB_TARGET_DIR \"" + (tmp.path() / "cache").string() + "\"\n";
  auto attack = eval(stage(tmp.path() / "cand", "poison_cache", macros), tmp.path() / "eval", tmp.path() / "cache");
  EXPECT_EQ(attack.record.value("status", ""), "incorrect");
  EXPECT_EQ(digests(tmp.path() / "cache/reference"), before) << "the candidate changed the reference cache";
  auto after = eval(honest(tmp.path() / "honest"), tmp.path() / "eval", tmp.path() / "cache");
  EXPECT_EQ(after.record.value("status", ""), "correct");
  EXPECT_TRUE(after.record["reference"].value("cached", false));
}

// Without a sandbox the driver's files are on the candidate's file system, but its runner hides the reference cache
// (and the run directory) from it: it reads none of them, and the cache stays as it was.
TEST(Security, WithoutASandboxTheRunnerStillCannotReadTheReferenceCache) {
  pkb::test::TempDir tmp;
  auto first = eval(honest(tmp.path() / "honest"), tmp.path() / "eval", tmp.path() / "cache");
  ASSERT_EQ(first.record.value("status", ""), "correct") << first.out << first.err;
  auto before = digests(tmp.path() / "cache/reference");
  std::string macros = "#define PKB_TARGET_DIR \"" + (tmp.path() / "cache").string() + "\"\n";
  auto e = eval(stage(tmp.path() / "cand", "cache_reader", macros), tmp.path() / "eval", tmp.path() / "cache", 60, {},
                "2", {"--no-sandbox"});
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_FALSE(e.record["sandbox"].value("enabled", true));
  std::string logs;
  for (const auto& f : fs::recursive_directory_iterator(tmp.path() / "eval"))
    if (f.is_regular_file() && f.path().extension() == ".stderr") logs += pkb::read_text_file(f.path());
  EXPECT_NE(logs.find("cache files readable: 0"), std::string::npos) << logs.substr(0, 2000);
  EXPECT_EQ(digests(tmp.path() / "cache/reference"), before);
}

TEST(Security, FilesRewrittenAfterReturnChangeNothing) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "rewrite_after_return"), tmp.path() / "eval", kSharedCache);
  ASSERT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_NE(e.record["timing"]["candidate"].value("median_us", 0.0), 0.001);
  EXPECT_EQ(e.record["timing"]["candidate"].value("iters", 0), 5 * e.record["timing"]["candidate"].value("reps", 0));
}

// The candidate's process holds no descriptor of the sealed channel and cannot open its FIFOs (they are hidden from
// it), so a forged record never reaches the driver: the honest verdict and times stand. (Frames that did arrive
// out of sequence would make the stream corrupt: tests/unit's seal tests.)
TEST(Security, TheSealedChannelIsOutOfTheCandidatesReach) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "inject_frames"), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_GT(e.record["timing"]["candidate"].value("median_us", 0.0), 0.001);
  EXPECT_EQ(e.record["timing"]["candidate"].value("iters", 0), 5 * e.record["timing"]["candidate"].value("reps", 0));
}

// The settings of the `eval` above as the ranks see them, for fixtures that count calls: the user who chose them
// knows them, though no process of the candidate's can read them any more.
const std::string kKnownArgs =
    "#define PKB_KNOWN_ARGS \"--trials 0,1 --warmup 1 --paper-warmup 500 --iters 5 "
    "--paper-iters 3 --min-reps 1 --max-reps 2\"\n";

TEST(Security, SkippingTheTimedCallsIsCaught) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "skip_when_unchecked", kKnownArgs), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(e.record.value("status", ""), "incorrect") << e.record.dump(2).substr(0, 3000);
  EXPECT_NE(e.record.value("message", "").find("a timed call"), std::string::npos) << e.record.value("message", "");
}

TEST(Security, EveryCallIsPoisonedAndChecked) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "poison_detector"), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_GE(e.record["checks"].value("timed_calls_checked", 0), 1);
}

TEST(Security, NoTwoCallsSeeTheSameInputContents) {
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "repeat_detector", kKnownArgs), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_EQ(e.record["timing"]["candidate"].value("repeated_content_iters", -1), 0);
}

// One rank, so that a machine of 2 CPUs pins it (core/dispatch_pin.h needs 2 cores per local rank).
TEST(Security, TheCpuMaskCannotTellTimedCallsFromCheckedOnes) {
  if (pkb::allowed_cpus().size() < 2) GTEST_SKIP() << "one CPU: nothing is pinned, the test would prove nothing";
  pkb::test::TempDir tmp;
  auto e = eval(stage(tmp.path() / "cand", "affinity_detector"), tmp.path() / "eval", kSharedCache, 60, {}, "1");
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_GE(e.record["timing"]["candidate"].value("dispatch_cpu", -1), 0) << "not pinned: the test proved nothing";
}

TEST(Security, BytesThatAreNotUtf8NeverBreakARecord) {
  pkb::test::TempDir tmp;
  auto crash = eval(stage(tmp.path() / "a", "bad_utf8_stderr"), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(crash.exit_code, 1);
  EXPECT_EQ(crash.record.value("status", ""), "crash") << crash.out << crash.err;
  auto compile = eval(stage(tmp.path() / "b", "bad_utf8_compile"), tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(compile.record.value("status", ""), "compile_error") << compile.out << compile.err;
  EXPECT_NE(compile.record["compile"].value("log", "").find("\xEF\xBF\xBD"), std::string::npos);
  // A file name that is not UTF-8.
  fs::path odd = honest(tmp.path() / "c");
  fs::path renamed = odd.parent_path() / "kernel-\xff\xfe.cpp";
  fs::rename(odd, renamed);
  auto named = eval(renamed, tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(named.record.value("status", ""), "correct") << named.out << named.err;
  // A lint excerpt cut in the middle of a multi-byte character.
  std::string line = "int x = system(\"" + std::string(190, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9\");\n";
  pkb::test::write_file(tmp.path() / "d/lint.cpp", "#include <cstdlib>\n" + line);
  auto lint = eval(tmp.path() / "d/lint.cpp", tmp.path() / "eval", kSharedCache);
  EXPECT_EQ(lint.record.value("status", ""), "lint_violation") << lint.out << lint.err;
}

// Caches verify themselves: a damaged compile entry or reference entry is rebuilt, never believed.
TEST(Security, DamagedCachesAreRebuilt) {
  pkb::test::TempDir tmp;
  fs::path src = honest(tmp.path() / "honest");
  auto first = eval(src, tmp.path() / "eval", tmp.path() / "cache");
  ASSERT_EQ(first.record.value("status", ""), "correct") << first.out << first.err;
  fs::path entry;
  for (const auto& e : fs::directory_iterator(tmp.path() / "cache/compile")) entry = e.path();
  auto damage_library = [&](int how) {
    fs::path lib = entry / "candidate.so";
    if (how == 0) fs::resize_file(lib, 100);                    // truncated
    if (how == 1) fs::remove(lib);                              // deleted
    if (how == 2) pkb::test::write_file(lib, "not a library");  // replaced
  };
  for (int how = 0; how < 2; ++how) {
    damage_library(how);
    auto again = eval(src, tmp.path() / "eval", tmp.path() / "cache");
    EXPECT_EQ(again.record.value("status", ""), "correct") << how << again.out << again.err;
    EXPECT_FALSE(again.record["compile"].value("cached", true)) << how;
  }
  // The last evaluation finds both caches damaged (one evaluation fewer on a 2-core CI machine): a library
  // replaced, a flipped value in the expected outputs.
  damage_library(2);
  fs::path ref;
  for (const auto& e : fs::directory_iterator(tmp.path() / "cache/reference")) ref = e.path();
  fs::path expected = ref / "trial0/oracle.rank0.safetensors";
  std::string bytes = pkb::read_text_file(expected);
  bytes[bytes.size() - 3] ^= 0x40;
  pkb::test::write_file(expected, bytes);
  // And a work directory of a process that died while building.
  fs::create_directories(ref.string() + ".work-999999-0/trial0");
  auto again = eval(src, tmp.path() / "eval", tmp.path() / "cache");
  EXPECT_EQ(again.record.value("status", ""), "correct") << again.out << again.err;
  EXPECT_FALSE(again.record["compile"].value("cached", true));
  EXPECT_FALSE(again.record["reference"].value("cached", true));
  EXPECT_NE(again.record["reference"].value("cache_damage", "").find("trial0/oracle.rank0.safetensors"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(ref.string() + ".work-999999-0"));
}

// Everything an evaluation left in its directory, with pkb's own output: where a candidate's stderr lands.
std::string logs_of(const Eval& e, const fs::path& dir) {
  std::string logs = e.out + e.err;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) logs += pkb::read_text_file(it->path());
  return logs;
}

// The kernel signals nothing on the runner's behalf: an I/O owner by fcntl (to the monitor, to the sandbox's first
// process) or by ioctl, each with a stopping or killing signal, is refused; the honest verdict stands.
TEST(Security, NoSignalReachesAnotherProcessByProxy) {
  for (int route = 0; route < 4; ++route) {
    SCOPED_TRACE("route " + std::to_string(route));
    pkb::test::TempDir tmp;
    std::string macros = "#define PKB_ROUTE " + std::to_string(route) + "\n";
    auto e = eval(stage(tmp.path() / "cand", "signal_others", macros), tmp.path() / "eval", kSharedCache, 30);
    EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
    EXPECT_NE(logs_of(e, tmp.path() / "eval").find("signal route: refused"), std::string::npos);
  }
}

// No inotify watch on the paths the lockdown hides (the seal's FIFOs, /tmp, /dev/shm, other processes' /proc).
TEST(Security, HiddenPathsCannotBeWatched) {
  pkb::test::TempDir tmp;
  auto e =
      eval(stage(tmp.path() / "cand", "signal_others", "#define PKB_ROUTE 4\n"), tmp.path() / "eval", kSharedCache, 30);
  EXPECT_EQ(e.record.value("status", ""), "correct") << e.record.dump(2).substr(0, 3000);
  EXPECT_NE(logs_of(e, tmp.path() / "eval").find("hidden paths watched: 0"), std::string::npos);
}

// `pkb eval` of `src` started in the background (its output discarded), with pkb's temporary files in `tmp`: the
// seal's directory, which a killed pkb leaves behind, goes with it.
pid_t start_eval(const fs::path& tmp, const fs::path& src) {
  std::vector<std::string> env = {"TMPDIR=" + tmp.string()};
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("TMPDIR=", 0) != 0) env.push_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {
      PKB_BINARY, "eval", src.string(), "--out", (tmp / "eval").string(), "--cache", (tmp / "cache").string()};
  for (const char* a : {"--problem", "1", "-w", "2", "--device", "cpu", "--param", "M=64", "--param", "N=48",
                        "--trials", "1", "--timeout", "120"})
    args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = ::open("/dev/null", O_WRONLY);
    dup2(null_fd, 1), dup2(null_fd, 2);
    execve(PKB_BINARY, argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// pkb killed (SIGTERM, as Slurm cancels a job, or SIGKILL) while its candidate spins inside the sandbox and has
// started daemons there: nothing survives.
void kill_pkb_mid_evaluation(int sig) {
  pkb::test::TempDir tmp;
  fs::path target = tmp.path() / "outside";
  fs::create_directories(target);
  std::string marker = "3000." + std::to_string(100000 + std::random_device{}() % 800000);
  std::string macros = "#define PKB_TARGET_DIR \"" + target.string() + "\"\n#define PKB_PORT 9\n#define PKB_MARKER \"" +
                       marker + "\"\n#define PKB_SPIN 1\n";
  fs::path src = stage(tmp.path() / "cand", "escape", macros);
  pid_t pid = start_eval(tmp.path(), src);
  bool started = false;
  for (int i = 0; i < 600 && !started; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::error_code ec;
    for (fs::recursive_directory_iterator it(tmp.path() / "eval", ec), end; !ec && it != end && !started;
         it.increment(ec))
      started =
          it->path().extension() == ".stderr" && pkb::read_text_file(it->path()).find("spinning") != std::string::npos;
  }
  ASSERT_TRUE(started) << "the candidate never started spinning";
  // The evaluation's processes: bwrap, mpirun, the ranks, the candidate's own processes and whatever they started.
  std::map<int, std::string> evaluation = descendants(pid);
  EXPECT_GE(evaluation.size(), 4u) << "the sandbox's processes were not found: the test would prove nothing";
  kill(pid, sig);
  waitpid(pid, nullptr, 0);
  int left = 1;
  for (int i = 0; i < 50 && left; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Daemons (if any got out, found by the marker on their command lines), and every process of the evaluation.
    left = processes_with(marker) + processes_with(src.string()) + processes_with(tmp.path().string()) +
           still_running(evaluation);
  }
  EXPECT_EQ(left, 0) << "processes of the evaluation killed by signal " << sig << " are still running";
}

TEST(Security, KillingPkbLeavesNothingRunning) { kill_pkb_mid_evaluation(SIGKILL); }

// pkb eval killed by SIGKILL at random moments of an evaluation (compiling, building the reference, starting the
// sandbox, inside the candidate's pass): 5 s later no process of it is left. Its files all lie under one directory,
// the cache too, so that every process of the run names it or works there.
TEST(Security, KilledAtRandomMomentsPkbEvalLeavesNothing) {
  pkb::test::TempDir tmp;
  fs::path src = honest(tmp.path() / "cand");
  std::vector<std::string> args = {"eval",      src.string(),
                                   "--problem", "1",
                                   "-w",        "2",
                                   "--device",  "cpu",
                                   "--param",   "M=64",
                                   "--param",   "N=48",
                                   "--trials",  "1",
                                   "--warmup",  "1",
                                   "--iters",   "3",
                                   "--out",     (tmp.path() / "eval").string(),
                                   "--cache",   (tmp.path() / "cache").string()};
  args.insert(args.end(), pkb::test::kShortTiming.begin(), pkb::test::kShortTiming.end());
  const unsigned seed = std::random_device{}();
  auto left = pkb::test::leftovers_after_random_kills(PKB_BINARY, args, {{"TMPDIR", tmp.path().string()}}, 10, 6.0,
                                                      seed, [&] { fs::remove_all(tmp.path() / "eval"); });
  for (size_t i = 0; i < left.size(); ++i) EXPECT_EQ(left[i], 0) << "kill " << i << " (seed " << seed << ")";
}
TEST(Security, TerminatingPkbLeavesNothingRunning) { kill_pkb_mid_evaluation(SIGTERM); }

}  // namespace
