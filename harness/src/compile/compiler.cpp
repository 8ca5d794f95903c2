#include "compile/compiler.h"

#include <chrono>
#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "launch/process.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct LintRule {
  const char* name;
  std::regex pattern;
  bool nccl_rule;
};

const std::vector<LintRule>& rules() {
  static const std::vector<LintRule> kRules = {
      {"process", std::regex(R"(\b(fork|vfork|execv[pe]*|execl[pe]*|system|popen|posix_spawnp?|clone)\s*\()"), false},
      {"socket", std::regex(R"(\b(socket|connect|bind|listen|accept)\s*\(|#\s*include\s*<(sys/socket|netinet/|arpa/))"), false},
      {"dynamic_loading", std::regex(R"(\b(dlopen|dlsym|dlmopen|dlvsym)\b)"), false},
      {"nccl", std::regex(R"(\bnccl[A-Z]\w*\s*\(|#\s*include\s*[<"]nccl)"), true},
      {"mpi", std::regex(R"(\bMPI_[A-Z]\w*\s*\(|#\s*include\s*[<"]mpi)"), false},
      {"device_reset", std::regex(R"(\bcudaDeviceReset\b)"), false},
      {"device_switch", std::regex(R"(\bcudaSetDevice\s*\()"), false},
      {"timing", std::regex(R"(\b(clock_settime|settimeofday|cudaProfilerStart|cudaProfilerStop|setenv|putenv|unsetenv)\s*\()"), false},
  };
  return kRules;
}

// Blanks comments and string/char literals (keeping newlines) so rules match code only. #include lines keep
// their <...> and "..." targets because the include rules need them.
std::string strip_comments_and_strings(const std::string& s) {
  std::string out = s;
  enum { code, line_comment, block_comment, str, chr } state = code;
  bool include_line = false;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i], n = i + 1 < out.size() ? out[i + 1] : '\0';
    if (c == '\n') {
      include_line = false;
      if (state == line_comment) state = code;
      continue;
    }
    switch (state) {
      case code:
        if (c == '#') {
          size_t j = out.find_first_not_of(" \t", i + 1);
          include_line = j != std::string::npos && out.compare(j, 7, "include") == 0;
        }
        if (c == '/' && n == '/') state = line_comment, out[i] = ' ';
        else if (c == '/' && n == '*') state = block_comment, out[i] = ' ';
        else if (c == '"' && !include_line) state = str;
        else if (c == '\'') state = chr;
        break;
      case line_comment: out[i] = ' '; break;
      case block_comment:
        if (c == '*' && n == '/') out[i] = out[i + 1] = ' ', ++i, state = code;
        else out[i] = ' ';
        break;
      case str:
      case chr:
        if (c == '\\') out[i] = ' ', out[i + 1] = (out[i + 1] == '\n' ? '\n' : ' '), ++i;
        else if ((state == str && c == '"') || (state == chr && c == '\'')) state = code;
        else out[i] = ' ';
        break;
    }
  }
  return out;
}

const std::string& compiler_version(bool cuda) {
  static std::string versions[2];
  std::string& v = versions[cuda];
  if (v.empty()) {
    v = capture_stdout({cuda ? "nvcc" : "c++", "--version"}, 60);
    if (v.empty()) v = "unknown";
  }
  return v;
}

std::vector<std::string> compile_command(const CompileOptions& o, const std::string& src, const std::string& lib) {
  // The candidate's own folder comes after pkb's headers, so it cannot shadow pkb/abi.h.
  std::string inc = "-I" + o.include_dir.string(), local = "-I" + o.source_dir.string();
  if (!o.cuda) return {"c++", "-std=c++17", "-O2", "-shared", "-fPIC", inc, local, "-o", lib, src};
  std::string arch = o.arch;  // sm_90a -> compute_90a / sm_90a
  std::string compute = "compute_" + arch.substr(arch.find('_') + 1);
  return {"nvcc", "-std=c++17", "-O3", "-gencode", "arch=" + compute + ",code=" + arch, "-shared",
          "-Xcompiler", "-fPIC", inc, local, "-o", lib, src, "-lcudart", "-lcublas", "-lcublasLt"};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

const char* compile_status_name(CompileStatus s) {
  switch (s) {
    case CompileStatus::ok: return "ok";
    case CompileStatus::compile_error: return "compile_error";
    case CompileStatus::lint_violation: return "lint_violation";
  }
  return "compile_error";
}

std::vector<LintFinding> lint_source(const std::string& code, bool allow_nccl) {
  std::vector<LintFinding> found;
  std::string clean = strip_comments_and_strings(code);
  std::istringstream lines(clean), original(code);
  std::string line, orig;
  for (int n = 1; std::getline(lines, line) && std::getline(original, orig); ++n) {
    for (const auto& r : rules()) {
      if (r.nccl_rule && allow_nccl) continue;
      if (std::regex_search(line, r.pattern)) {
        orig.erase(0, orig.find_first_not_of(" \t"));
        found.push_back({r.name, n, orig.substr(0, 200)});
      }
    }
  }
  return found;
}

std::string trim_log(const std::string& log, size_t max_lines, size_t max_bytes) {
  std::istringstream in(log);
  std::string line, out;
  size_t lines = 0, total = 0;
  while (std::getline(in, line)) ++total;
  in.clear();
  in.seekg(0);
  while (std::getline(in, line) && lines < max_lines && out.size() + line.size() < max_bytes) out += line + "\n", ++lines;
  if (lines < total) out += "[... " + std::to_string(total - lines) + " more lines]\n";
  return out;
}

// Headers beside the candidate (a fixture's shared helpers) are part of what the library is built from.
std::string local_headers(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".h" || e.path().extension() == ".cuh") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const auto& f : files) all += f.filename().string() + "\n" + read_text_file(f);
  return all;
}

CompileResult compile_candidate(const fs::path& source, const CompileOptions& opts) {
  CompileOptions o = opts;
  o.source_dir = fs::absolute(source).parent_path();
  CompileResult r;
  std::string code = read_text_file(source);
  r.lint = lint_source(code, o.allow_nccl);
  if (!r.lint.empty()) {
    r.status = CompileStatus::lint_violation;
    for (const auto& f : r.lint) r.log += "line " + std::to_string(f.line) + " [" + f.rule + "]: " + f.text + "\n";
    return r;
  }
  std::string ext = o.cuda ? ".cu" : ".cpp";
  std::vector<std::string> cmd = compile_command(o, "candidate" + ext, "candidate.so");
  r.command = join(cmd);
  r.hash = sha256_hex(code + "\n--\n" + local_headers(o.source_dir) + "\n--\n" + r.command + "\n--\n" + compiler_version(o.cuda) + "\n--\n" +
                      read_text_file(o.include_dir / "pkb/abi.h") + (o.cuda ? read_text_file(o.include_dir / "pkb/device.cuh") : ""));
  fs::path entry = o.cache_dir / r.hash;
  r.library = entry / "candidate.so";
  if (fs::exists(entry / "result.json")) {
    std::ifstream in(entry / "result.json");
    json j = json::parse(in, nullptr, false);
    if (!j.is_discarded()) {
      r.status = j.value("status", "") == "ok" ? CompileStatus::ok : CompileStatus::compile_error;
      r.log = j.value("log", "");
      r.cached = true;
      if (r.status != CompileStatus::ok || fs::exists(r.library)) return r;
    }
  }
  // Compile in a private directory and rename it into place: concurrent compilations of the same source
  // (parallel evaluations, `pkb run`'s pool beside a `pkb eval`) must not write into each other's files.
  fs::path work = private_work_dir(entry);
  { std::ofstream(work / ("candidate" + ext)) << code; }
  ProcessOptions po;
  po.timeout_s = o.timeout_s;
  po.cwd = work;
  po.stdout_path = work / "compile.log";
  po.stderr_path = work / "compile.log.err";
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult pr = run_process(cmd, po);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string log = file_tail(work / "compile.log", 1 << 20) + file_tail(work / "compile.log.err", 1 << 20);
  if (pr.timed_out) log = "compilation timed out after " + std::to_string(static_cast<int>(o.timeout_s)) + " s\n" + log;
  r.log = trim_log(log);
  r.status = pr.ok() && fs::exists(work / "candidate.so") ? CompileStatus::ok : CompileStatus::compile_error;
  if (r.status == CompileStatus::compile_error && r.log.empty()) r.log = "compiler " + pr.summary() + "\n";
  if (pr.timed_out) {  // a timeout may be the machine's fault: do not cache it
    fs::remove_all(work);
    return r;
  }
  std::ofstream(work / "result.json") << json{{"status", compile_status_name(r.status)}, {"log", r.log}}.dump();
  place_directory(work, entry, "result.json");
  return r;
}

}  // namespace pkb
