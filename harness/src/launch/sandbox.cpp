#include "launch/sandbox.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/fact_memo.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;

std::atomic<int> mps_logs_made{0};  // one folder of the sandbox daemon's logs per job (PKB_MPS_LOG_DIR)

// What programs inside need from /etc, and nothing else (no shadow files, no ssh keys, no credentials):
// users and hosts, the dynamic linker's cache, Open MPI's defaults, Debian's alternatives (mpirun is a link).
const char* const kEtcEntries[] = {
    "passwd",       "group",    "hosts",        "nsswitch.conf", "host.conf",  "ld.so.cache",    "ld.so.conf",
    "ld.so.conf.d", "openmpi",  "alternatives", "localtime",     "os-release", "debian_version", "lsb-release",
    "nvidia",       "gai.conf", "pmix",         "prte",          "ucx",        "libibverbs.d",   "fonts"};
const char* const kSystemDirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"};

std::string bwrap_path() {
  if (const char* p = getenv("PKB_BWRAP"); p && *p) return p;
  return "bwrap";
}

bool under_system_dir(const fs::path& p) {
  std::string s = p.string();
  for (const char* d : kSystemDirs)
    if (s == d || s.rfind(std::string(d) + "/", 0) == 0) return true;
  return false;
}

void add(std::vector<std::string>& v, std::initializer_list<std::string> items) { v.insert(v.end(), items); }

constexpr int kInfoFd = 3;       // where bwrap writes {"child-pid": N} (ProcessOptions::info_fd)
constexpr int kFirstFileFd = 4;  // Sandbox::files[i] is read from descriptor kFirstFileFd + i

// A descriptor of an anonymous file holding `contents`, at its start, for bwrap to read.
int data_descriptor(const std::string& contents) {
  int fd = memfd_create("pkb-sandbox-file", MFD_CLOEXEC);
  if (fd < 0) throw Error(std::string("memfd_create: ") + std::strerror(errno));
  for (size_t done = 0; done < contents.size();) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      throw Error(std::string("writing a file for the sandbox: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  lseek(fd, 0, SEEK_SET);
  return fd;
}

// What the job brings: its read-only paths, the working directory (bound, or a private tmpfs) and its files.
void add_job_mounts(std::vector<std::string>& c, const Sandbox& box) {
  for (const auto& p : box.read_only) add(c, {"--ro-bind", p.string(), p.string()});
  for (const auto& [from, to] : box.read_only_at) add(c, {"--ro-bind", from.string(), to.string()});
  if (box.work.empty())
    add(c, {"--perms", "0755", "--size", std::to_string(box.tmpfs_bytes), "--tmpfs", kSandboxWork.string()});
  else
    add(c, {"--bind", box.work.string(), kSandboxWork.string()});
  for (size_t i = 0; i < box.files.size(); ++i)
    add(c, {box.files[i].read_only ? "--ro-bind-data" : "--file", std::to_string(kFirstFileFd + static_cast<int>(i)),
            box.files[i].inside.string()});
}

}  // namespace

std::vector<std::string> sandbox_command(const Sandbox& box, const std::vector<std::string>& argv) {
  std::vector<std::string> c = {bwrap_path(),
                                "--info-fd",
                                std::to_string(kInfoFd),
                                "--die-with-parent",
                                "--new-session",
                                "--unshare-all",
                                "--unshare-user",
                                "--uid",
                                "65534",
                                "--gid",
                                "65534",
                                "--disable-userns",
                                "--cap-drop",
                                "ALL",
                                "--hostname",
                                "pkb-sandbox",
                                "--clearenv"};
  for (const char* d : kSystemDirs) {
    std::error_code ec;
    if (fs::is_symlink(d, ec))
      add(c, {"--symlink", fs::read_symlink(d, ec).string(), d});
    else if (fs::is_directory(d, ec))
      add(c, {"--ro-bind", d, d});
  }
  for (const char* e : kEtcEntries) add(c, {"--ro-bind-try", std::string("/etc/") + e, std::string("/etc/") + e});
  // /sys read-only: Open MPI's hwloc and CUDA read the machine's topology there.
  add(c, {"--proc", "/proc", "--dev", "/dev", "--ro-bind", "/sys", "/sys"});
  std::string tmp_size = std::to_string(box.tmpfs_bytes);
  add(c, {"--perms", "1777", "--size", tmp_size, "--tmpfs", "/tmp", "--perms", "1777", "--size", tmp_size, "--tmpfs",
          "/dev/shm"});
  if (box.gpu) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev", ec))
      if (e.path().filename().string().rfind("nvidia", 0) == 0)
        add(c, {"--dev-bind", e.path().string(), e.path().string()});
    // The MPS control daemon's pipes, where one on the host serves this GPU; the sandbox's own lives in its /tmp.
    auto mps = box.env.find("CUDA_MPS_PIPE_DIRECTORY");
    if (mps != box.env.end() && !box.own_mps) add(c, {"--bind-try", mps->second, mps->second});
    // PKB_MPS_LOG_DIR keeps the sandbox daemon's logs (which clients connected), for measurements only.
    if (const char* keep = getenv("PKB_MPS_LOG_DIR"); box.own_mps && keep && *keep) {
      std::error_code ec;
      fs::path logs = fs::path(keep) / ("sandbox-" + std::to_string(getpid()) + "-" + std::to_string(++mps_logs_made));
      fs::create_directories(logs, ec);
      add(c, {"--bind", logs.string(), kSandboxMpsLogs.string()});
    }
  }
  add_job_mounts(c, box);
  const std::string work = kSandboxWork.string();
  add(c, {"--chdir", work});
  std::map<std::string, std::string> env = {{"PATH", "/usr/local/cuda/bin:/usr/local/bin:/usr/bin:/bin"},
                                            {"HOME", work},
                                            {"PWD", work},
                                            {"TMPDIR", "/tmp"},
                                            {"LANG", "C.UTF-8"}};
  if (const char* ld = getenv("LD_LIBRARY_PATH"); ld && *ld) env["LD_LIBRARY_PATH"] = ld;
  for (const auto& [k, v] : box.env) env[k] = v;
  if (box.gpu && box.own_mps) {
    env["CUDA_MPS_PIPE_DIRECTORY"] = kSandboxMpsPipes.string();
    env["CUDA_MPS_LOG_DIRECTORY"] = kSandboxMpsLogs.string();
  }
  for (const auto& [k, v] : env) add(c, {"--setenv", k, v});
  c.push_back("--");
  if (box.gpu && box.own_mps) {
    // The daemon first (a client that finds no daemon runs without one, slower but right), the job, then the daemon
    // told to quit; the PID namespace ends whatever is left when the job's first process exits.
    add(c, {"/bin/sh", "-c",
            "mkdir -p \"$CUDA_MPS_PIPE_DIRECTORY\" \"$CUDA_MPS_LOG_DIRECTORY\" && nvidia-cuda-mps-control -d "
            "|| echo 'pkb: no MPS daemon in the sandbox: processes sharing the GPU take turns' >&2\n"
            "\"$@\"; rc=$?\n"
            "echo quit | nvidia-cuda-mps-control >/dev/null 2>&1\n"
            "exit $rc",
            "pkb-job"});
  }
  c.insert(c.end(), argv.begin(), argv.end());
  return c;
}

ProcessResult run_sandboxed(const Sandbox& box, const std::vector<std::string>& argv, ProcessOptions po) {
  po.clear_env = true;
  po.info_fd = kInfoFd;
  struct Closer {
    std::vector<int> fds;
    ~Closer() {
      for (int fd : fds) close(fd);
    }
  } data;
  for (size_t i = 0; i < box.files.size(); ++i) {
    data.fds.push_back(data_descriptor(box.files[i].contents));
    po.pass_fds.push_back({data.fds.back(), kFirstFileFd + static_cast<int>(i)});
  }
  return run_process(sandbox_command(box, argv), po);
}

const std::string& sandbox_unavailable() {
  static std::once_flag once;
  static std::string why;
  std::call_once(once, [] {
    Sandbox box;
    ProcessOptions po;
    po.timeout_s = 30;
    fs::path err = fs::temp_directory_path() / ("pkb-sandbox-probe-" + std::to_string(getpid()));
    po.stderr_path = err;
    ProcessResult r;
    try {
      r = run_sandboxed(box, {"/bin/true"}, po);
    } catch (const std::exception& e) {  // it cannot be started at all
      why = std::string("bubblewrap (bwrap) is not installed (") + e.what() +
            "): apt-get install bubblewrap, or set PKB_BWRAP";
    }
    if (why.empty() && !r.ok()) {
      std::string tail = file_tail(err, 400);
      while (!tail.empty() && tail.back() == '\n') tail.pop_back();
      why = "bubblewrap cannot create its namespaces here (" + r.summary() + "): " + tail;
    }
    std::error_code ec;
    fs::remove(err, ec);
  });
  return why;
}

namespace {

// ldd's answer: every library's path, as the loader resolves it now.
std::vector<fs::path> ldd(const fs::path& binary) {
  std::vector<fs::path> paths;
  std::istringstream lines(capture_stdout({"ldd", binary.string()}, 60));
  for (std::string line; std::getline(lines, line);) {
    const auto arrow = line.find("=> /"), start = line.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    std::string path = arrow != std::string::npos ? line.substr(arrow + 3) : line.substr(start);
    path = path.substr(0, path.find(" ("));
    if (!path.empty() && path[0] == '/') paths.push_back(path);
  }
  return paths;
}

}  // namespace

std::vector<fs::path> shared_libraries(const fs::path& binary) {
  static std::mutex m;
  static std::map<fs::path, std::vector<fs::path>> cache;
  std::lock_guard<std::mutex> lock(m);
  if (auto it = cache.find(binary); it != cache.end()) return it->second;
  // The loader's answer changes with the binary, its search settings and its cache, and with any library of the
  // answer or any folder holding one (a library added, removed or replaced there): all of them key the kept answer.
  std::error_code ec;
  const fs::path real = fs::canonical(binary, ec);
  const nlohmann::json inputs = {{"binary", real.string()},
                                 {"stamp", file_stamp(real)},
                                 {"LD_LIBRARY_PATH", getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : ""},
                                 {"LD_PRELOAD", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : ""},
                                 {"ld.so.cache", file_stamp("/etc/ld.so.cache")},
                                 {"ld.so.preload", file_stamp("/etc/ld.so.preload")}};
  const nlohmann::json kept = memoized_fact(
      "libraries", inputs,
      [&] {
        LearnedFact fact{nlohmann::json::array(), {}};
        for (const fs::path& lib : ldd(binary)) {
          fact.value.push_back(lib.string());
          const fs::path real_lib = fs::canonical(lib, ec);
          for (const fs::path& p : {lib, lib.parent_path(), real_lib, real_lib.parent_path()})
            if (!p.empty() && std::find(fact.depends_on.begin(), fact.depends_on.end(), p) == fact.depends_on.end())
              fact.depends_on.push_back(p);
        }
        fact.keep = !fact.value.empty();  // ldd failed: no answer to keep
        return fact;
      },
      [](const nlohmann::json& v) {
        return v.is_array() && std::all_of(v.begin(), v.end(), [](const auto& p) { return p.is_string(); });
      });
  std::vector<fs::path> paths;
  for (const auto& p : kept) paths.emplace_back(p.get<std::string>());
  return cache[binary] = paths;
}

std::vector<fs::path> library_dirs_outside_system(const fs::path& binary) {
  std::vector<fs::path> dirs;
  for (const fs::path& path : shared_libraries(binary)) {
    // Both the directory the loader names and the one its links lead to must exist inside.
    std::error_code ec;
    for (fs::path dir : {path.parent_path(), fs::canonical(path, ec).parent_path()})
      if (!dir.empty() && !under_system_dir(dir) && std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
        dirs.push_back(dir);
  }
  return dirs;
}

void apply_limits(ProcessOptions& po, const SandboxLimits& l) {
  if (l.address_space) po.rlimits.push_back({RLIMIT_AS, l.address_space});
  if (l.file_size) po.rlimits.push_back({RLIMIT_FSIZE, l.file_size});
  if (l.cpu_s > 0) po.rlimits.push_back({RLIMIT_CPU, static_cast<unsigned long>(l.cpu_s + 1)});
  if (l.processes) po.rlimits.push_back({RLIMIT_NPROC, l.processes});
  po.rlimits.push_back({RLIMIT_CORE, 0});  // a crashing candidate leaves no core file of its memory behind
}

}  // namespace pkb
