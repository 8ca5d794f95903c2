// Helpers for tests: files on disk, and programs run as a user runs them.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "core/files.h"
#include "launch/process.h"
#include "spec/catalog.h"

namespace pkb::test {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("pkb-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace pkb::test

namespace pkb::test {

// The pkb binary (or any program) as a user runs it: exit code (-1 if it did not exit), stdout and stderr.
struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// A candidate of tests/fixtures/cpu as one self-contained source, fixture.h inlined: what a model's answer or an
// agent's tool call carries.
inline std::string cpu_fixture(const std::string& name) {
  std::filesystem::path dir = repo_root() / "tests/fixtures/cpu";
  std::string code = read_text_file(dir / (name + ".cpp"));
  return std::regex_replace(code, std::regex("#include \"fixture.h\""), read_text_file(dir / "fixture.h"));
}

// Timing options for tests that judge statuses, not speed: two repetitions of each method (kTwoRepetitions),
// after a paper warm-up of one call (kShortTiming); the default 500-call warm-up stays where call-counting attacks
// need it (tests/security).
inline const std::vector<std::string> kTwoRepetitions = {"--paper-iters", "3", "--min-reps", "1", "--max-reps", "2"};
inline const std::vector<std::string> kShortTiming = {"--paper-warmup", "1", "--paper-iters", "3",
                                                      "--min-reps",     "1", "--max-reps",    "2"};

// The parts one after the other: an argument list with a shared run of options inside it.
inline std::vector<std::string> joined(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> all;
  for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

inline CliRun run_cli(const std::string& program, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {}, double timeout_s = 400) {
  TempDir tmp;
  ProcessOptions o;
  o.timeout_s = timeout_s;
  o.stdout_path = tmp.path() / "out";
  o.stderr_path = tmp.path() / "err";
  o.env = env;
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, o);
  return {r.exited ? r.exit_code : -1, file_tail(tmp.path() / "out", 1 << 22), file_tail(tmp.path() / "err", 1 << 22)};
}

}  // namespace pkb::test
