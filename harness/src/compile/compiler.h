// Turns a candidate source into a shared library: lint first (forbidden constructs are recorded and stop the
// evaluation), then nvcc (.cu, GPU) or the host C++ compiler (.cpp, CPU mode), with a deadline. Results are
// cached by the hash of (source, flags, compiler version), compile errors included, so re-runs cost nothing. An
// entry is believed only when intact: a library that matches its recorded sha256, or a compile error whose digest
// binds it to its key and log; anything else is discarded and compiled again. Timeouts and killed compilers (the
// machine's fault, perhaps) are not cached.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace pkb {

struct LintFinding {
  std::string rule;  // "process", "socket", "dynamic_loading", "nccl", "mpi", "device_reset", "timing",
                     // "device_switch", "include_path"
  int line = 0;      // 1-based
  std::string text;  // the offending line, trimmed
};

// Scans the identifiers and #include targets of code with comments and string literals blanked out, in linear
// time. allow_nccl: a run's policy may permit NCCL. An early rejection of obvious misuse, not a security boundary.
std::vector<LintFinding> lint_source(const std::string& code, bool allow_nccl);

struct CompileOptions {
  bool cuda = true;             // .cu with nvcc; false: .cpp with the host compiler (CPU mode)
  std::string arch = "sm_90a";  // nvcc target
  double timeout_s = 180;
  bool allow_nccl = false;
  bool sandbox = true;                // run the compiler inside bubblewrap (it reads untrusted source)
  std::filesystem::path cache_dir;    // results/cache/compile
  std::filesystem::path include_dir;  // harness/include
  std::filesystem::path source_dir;   // set by compile_candidate: the candidate's folder, for its own headers
};

enum class CompileStatus { ok, compile_error, lint_violation };
const char* compile_status_name(CompileStatus s);

struct CompileResult {
  CompileStatus status = CompileStatus::compile_error;
  std::filesystem::path library;  // the .so when ok
  std::string log;                // compiler output, trimmed; for reports and for feeding back to models
  std::vector<LintFinding> lint;
  std::string hash;     // cache key
  std::string command;  // what ran (paths relative to the cache entry)
  double seconds = 0;   // compile time (0 when cached)
  bool cached = false;
};

CompileResult compile_candidate(const std::filesystem::path& source, const CompileOptions& opts);

// Keeps the first `max_lines` lines and at most `max_bytes`, noting what was cut.
std::string trim_log(const std::string& log, size_t max_lines = 60, size_t max_bytes = 8192);

}  // namespace pkb
