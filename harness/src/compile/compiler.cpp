#include "compile/compiler.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/fact_memo.h"
#include "core/files.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "launch/process.h"
#include "launch/sandbox.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The lint is an early, friendly rejection of obvious misuse; the sandbox is the security boundary (code that
// spells a call in a way no scan sees still reaches nothing). It scans identifiers, not text patterns: a name
// is flagged wherever it appears (called, taken as a pointer, parenthesized, after a line break), in linear time.
struct LintName {
  const char* name;
  const char* rule;
  bool nccl_rule = false;
  bool needs_call = false;  // common words (bind, connect, accept...): only when followed by '(' or ')'
};

const std::vector<LintName>& lint_names() {
  static const std::vector<LintName> kNames = {
      {"fork", "process"},
      {"vfork", "process"},
      {"execv", "process"},
      {"execve", "process"},
      {"execvp", "process"},
      {"execvpe", "process"},
      {"execl", "process"},
      {"execle", "process"},
      {"execlp", "process"},
      {"fexecve", "process"},
      {"system", "process"},
      {"popen", "process"},
      {"posix_spawn", "process"},
      {"posix_spawnp", "process"},
      {"clone", "process", false, true},
      {"clone3", "process"},
      {"syscall", "process"},
      {"ptrace", "process"},
      {"socket", "socket", false, true},
      {"socketpair", "socket"},
      {"connect", "socket", false, true},
      {"bind", "socket", false, true},
      {"listen", "socket", false, true},
      {"accept", "socket", false, true},
      {"accept4", "socket"},
      {"getaddrinfo", "socket"},
      {"gethostbyname", "socket"},
      {"dlopen", "dynamic_loading"},
      {"dlsym", "dynamic_loading"},
      {"dlmopen", "dynamic_loading"},
      {"dlvsym", "dynamic_loading"},
      {"cudaDeviceReset", "device_reset"},
      {"cudaSetDevice", "device_switch"},
      {"clock_settime", "timing"},
      {"settimeofday", "timing"},
      {"cudaProfilerStart", "timing"},
      {"cudaProfilerStop", "timing"},
      {"setenv", "timing"},
      {"putenv", "timing"},
      {"unsetenv", "timing"},
  };
  return kNames;
}

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The rule an identifier breaks ("" if none). Prefix families: NCCL (ncclX), MPI and its profiling layer.
std::string identifier_rule(const std::string& id, bool call_like) {
  for (const auto& n : lint_names())
    if (id == n.name && (!n.needs_call || call_like)) return n.rule;
  if (id.size() > 4 && id.compare(0, 4, "nccl") == 0 && std::isupper(static_cast<unsigned char>(id[4]))) return "nccl";
  if ((id.rfind("MPI_", 0) == 0 || id.rfind("PMPI_", 0) == 0) && id.size() > 5) return "mpi";
  return "";
}

// The rule an #include breaks: network headers, NCCL, MPI (any spelling of the path), and paths outside the
// include directories (absolute, or climbing with ..), which could only serve to read a file into a log.
std::string include_rule(const std::string& target) {
  std::string t = target;
  for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.rfind("sys/socket", 0) == 0 || t.rfind("netinet/", 0) == 0 || t.rfind("arpa/", 0) == 0 || t == "netdb.h")
    return "socket";
  if (t.find("nccl") != std::string::npos) return "nccl";
  std::string base = t.substr(t.find_last_of('/') == std::string::npos ? 0 : t.find_last_of('/') + 1);
  if (base.rfind("mpi", 0) == 0 || base.rfind("pmpi", 0) == 0 || t.find("openmpi") != std::string::npos) return "mpi";
  if (base == "dlfcn.h" || base == "spawn.h") return base == "dlfcn.h" ? "dynamic_loading" : "process";
  if (!t.empty() && (t[0] == '/' || t.find("..") != std::string::npos)) return "include_path";
  return "";
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
        if (c == '/' && n == '/')
          state = line_comment, out[i] = ' ';
        else if (c == '/' && n == '*')
          state = block_comment, out[i] = ' ';
        else if (c == '"' && !include_line)
          state = str;
        else if (c == '\'')
          state = chr;
        break;
      case line_comment:
        out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && n == '/')
          out[i] = out[i + 1] = ' ', ++i, state = code;
        else
          out[i] = ' ';
        break;
      case str:
      case chr:
        if (c == '\\')
          out[i] = ' ', out[i + 1] = (out[i + 1] == '\n' ? '\n' : ' '), ++i;
        else if ((state == str && c == '"') || (state == chr && c == '\''))
          state = code;
        else
          out[i] = ' ';
        break;
    }
  }
  return out;
}

// Asked once per compiler; pkb run's compile pool calls this from several threads.
const std::string& compiler_version(bool cuda) {
  static std::once_flag once[2];
  static std::string versions[2];
  std::call_once(once[cuda], [cuda] {
    // Kept between pkb's processes under the compiler binary's identity (core/fact_memo.h).
    const std::string name = cuda ? "nvcc" : "c++";
    const std::filesystem::path program = find_program(name);
    const nlohmann::json inputs = {{"program", program.string()}, {"stamp", file_stamp(program)}};
    versions[cuda] = memoized_fact(
                         "compiler_version", inputs,
                         [&] {
                           std::string v = capture_stdout({name, "--version"}, 60);
                           return LearnedFact{v.empty() ? "unknown" : v, {program}, !v.empty()};
                         },
                         [](const nlohmann::json& v) { return v.is_string(); })
                         .get<std::string>();
  });
  return versions[cuda];
}

std::vector<std::string> compile_command(const CompileOptions& o, const std::string& src, const std::string& lib) {
  // The candidate's own headers are copied beside its source in the compiler's working directory, which comes after
  // pkb's headers, so it cannot shadow pkb/abi.h; "." rather than the folder's path keeps the command (and so the
  // cache key) the same wherever the candidate's folder lies.
  std::string inc = "-I" + o.include_dir.string(), local = "-I.";
  if (!o.cuda) return {"c++", "-std=c++17", "-O2", "-shared", "-fPIC", inc, local, "-o", lib, src};
  std::string arch = o.arch;  // sm_90a -> compute_90a / sm_90a
  std::string compute = "compute_" + arch.substr(arch.find('_') + 1);
  return {"nvcc",      "-std=c++17", "-O3",   "-gencode", "arch=" + compute + ",code=" + arch,
          "-shared",   "-Xcompiler", "-fPIC", inc,        local,
          "-o",        lib,          src,     "-lcudart", "-lcublas",
          "-lcublasLt"};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

const char* compile_status_name(CompileStatus s) {
  switch (s) {
    case CompileStatus::ok:
      return "ok";
    case CompileStatus::compile_error:
      return "compile_error";
    case CompileStatus::lint_violation:
      return "lint_violation";
  }
  return "compile_error";
}

std::vector<LintFinding> lint_source(const std::string& code, bool allow_nccl) {
  std::vector<LintFinding> found;
  std::string clean = strip_comments_and_strings(code);
  std::vector<size_t> line_start = {0};
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i] == '\n') line_start.push_back(i + 1);
  auto report = [&](const std::string& rule, size_t pos) {
    if (rule.empty() || (rule == "nccl" && allow_nccl)) return;
    int line = static_cast<int>(std::upper_bound(line_start.begin(), line_start.end(), pos) - line_start.begin());
    for (const auto& f : found)
      if (f.line == line && f.rule == rule) return;
    size_t b = line_start[line - 1], e = code.find('\n', b);
    std::string text = code.substr(b, (e == std::string::npos ? code.size() : e) - b);
    text.erase(0, text.find_first_not_of(" \t"));
    found.push_back({rule, line, utf8_prefix(text, 200)});
  };
  for (size_t i = 0; i < clean.size();) {
    char c = clean[i];
    if (c == '#') {  // a preprocessor line: only #include matters
      size_t j = clean.find_first_not_of(" \t", i + 1);
      if (j != std::string::npos && clean.compare(j, 7, "include") == 0) {
        size_t open = clean.find_first_of("<\"\n", j + 7);
        if (open != std::string::npos && clean[open] != '\n') {
          char close = clean[open] == '<' ? '>' : '"';
          size_t end = clean.find_first_of(std::string(1, close) + "\n", open + 1);
          if (end != std::string::npos && clean[end] == close)
            report(include_rule(clean.substr(open + 1, end - open - 1)), i);
        }
      }
    }
    if (ident_start(c) && (i == 0 || !ident_char(clean[i - 1]))) {
      size_t j = i;
      while (j < clean.size() && ident_char(clean[j])) ++j;
      size_t k = clean.find_first_not_of(" \t\r\n\\", j);
      bool call_like = k != std::string::npos && (clean[k] == '(' || clean[k] == ')');
      report(identifier_rule(clean.substr(i, j - i), call_like), i);
      i = j;
      continue;
    }
    ++i;
  }
  std::sort(found.begin(), found.end(), [](const LintFinding& a, const LintFinding& b) { return a.line < b.line; });
  return found;
}

namespace {

// Headers beside the candidate (a fixture's shared helpers) are part of what the library is built from; they are
// copied next to the source, so that the compiler never sees the candidate's folder (other candidates live there).
std::vector<fs::path> local_header_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".h" || e.path().extension() == ".cuh") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// What binds a failure entry to its key (source, headers, flags, compiler) and to the compiler's output: an entry
// written for another key, edited, truncated or planted without it does not match.
std::string failure_digest(const std::string& key, const std::string& log) {
  return sha256_hex("pkb.compile_failure/1\n" + key + "\n" + log);
}

// A cache entry is believed only if it is one of the two results pkb writes, intact: ok with the library it
// recorded (the sha256 of the library), or compile_error with the digest of its key and log.
bool entry_intact(const json& result, const std::string& key, const fs::path& library) {
  std::string status = result.value("status", ""), log = result.value("log", "");
  if (status == "compile_error") return result.value("failure_sha256", "") == failure_digest(key, log);
  if (status != "ok") return false;
  std::error_code ec;
  if (!fs::is_regular_file(library, ec)) return false;
  return result.value("library_sha256", "") == sha256_file(library);
}

}  // namespace

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
  std::vector<fs::path> headers = local_header_files(o.source_dir);
  std::string header_text;
  for (const auto& f : headers) header_text += f.filename().string() + "\n" + read_text_file(f);
  r.hash = sha256_hex(code + "\n--\n" + header_text + "\n--\n" + r.command + "\n--\n" + compiler_version(o.cuda) +
                      "\n--\n" + read_text_file(o.include_dir / "pkb/abi.h") +
                      (o.cuda ? read_text_file(o.include_dir / "pkb/device.cuh") : ""));
  fs::path entry = o.cache_dir / r.hash;
  r.library = entry / "candidate.so";
  if (fs::exists(entry / "result.json")) {
    json j = read_json_or_null(entry / "result.json");
    if (j.is_object() && entry_intact(j, r.hash, r.library)) {
      r.status = j.value("status", "") == "ok" ? CompileStatus::ok : CompileStatus::compile_error;
      r.log = j.value("log", "");
      r.cached = true;
      return r;
    }
    std::error_code ec;  // damaged (truncated, deleted or replaced library, unreadable result): build it again
    fs::remove_all(entry, ec);
  }
  // Compile in a private directory and rename it into place: concurrent compilations of the same source
  // (parallel evaluations, `pkb run`'s pool beside a `pkb eval`) must not write into each other's files.
  fs::path work = private_work_dir(entry);
  write_file_atomically(work / ("candidate" + ext), code);
  for (const auto& h : headers) fs::copy_file(h, work / h.filename(), fs::copy_options::overwrite_existing);
  ProcessOptions po;
  po.timeout_s = o.timeout_s;
  po.cwd = work;
  po.stdout_path = work / "compile.log";
  po.stderr_path = work / "compile.log.err";
  Sandbox box;
  if (o.sandbox) {
    // The compiler reads untrusted source: it sees the system, pkb's headers and its own directory only
    // (an #include of a secret finds nothing), with no network and no environment of the driver.
    box.read_only = {o.include_dir};
    box.work = work;  // at /pkb/work: the compiler is given relative paths
    box.env = {{"CUDA_HOME", "/usr/local/cuda"}};
    apply_limits(po, {size_t{32} << 30, size_t{1} << 30, o.timeout_s + 5, 512});
  }
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult pr = o.sandbox ? run_sandboxed(box, cmd, po) : run_process(cmd, po);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string log = file_tail(work / "compile.log", 1 << 20) + file_tail(work / "compile.log.err", 1 << 20);
  if (pr.timed_out) log = "compilation timed out after " + std::to_string(static_cast<int>(o.timeout_s)) + " s\n" + log;
  r.log = trim_log(valid_utf8(log));
  r.status = pr.ok() && fs::exists(work / "candidate.so") ? CompileStatus::ok : CompileStatus::compile_error;
  if (r.status == CompileStatus::compile_error && r.log.empty()) r.log = "compiler " + pr.summary() + "\n";
  if (pr.timed_out || !pr.exited) {  // a timeout or a kill (memory) may be the machine's fault: do not cache it
    fs::remove_all(work);
    return r;
  }
  json result = {{"status", compile_status_name(r.status)}, {"log", r.log}};
  if (r.status == CompileStatus::ok)
    result["library_sha256"] = sha256_file(work / "candidate.so");
  else
    result["failure_sha256"] = failure_digest(r.hash, r.log);
  write_file_atomically(work / "result.json", result.dump());
  place_directory(work, entry, "result.json");
  return r;
}

std::string trim_log(const std::string& log, size_t max_lines, size_t max_bytes) {
  std::istringstream in(log);
  std::string line, out;
  size_t lines = 0, total = 0;
  while (std::getline(in, line)) ++total;
  in.clear();
  in.seekg(0);
  while (std::getline(in, line) && lines < max_lines && out.size() + line.size() < max_bytes)
    out += line + "\n", ++lines;
  if (lines < total) out += "[... " + std::to_string(total - lines) + " more lines]\n";
  return out;
}

}  // namespace pkb
