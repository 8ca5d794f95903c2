// The compile stage with the real compilers: nvcc for .cu (GPU candidates build here even without a GPU) and
// the host compiler for CPU-mode .cpp; plus the lint rules.
#include "compile/compiler.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "core/files.h"
#include "spec/catalog.h"
#include "test_util.h"

namespace {

pkb::CompileOptions options(const pkb::test::TempDir& tmp, bool cuda) {
  pkb::CompileOptions o;
  o.cuda = cuda;
  o.cache_dir = tmp.path() / "cache";
  o.include_dir = pkb::repo_root() / "harness/include";
  return o;
}

}  // namespace

TEST(Compiler, ExpertKernelsBuildWithNvcc) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, true);
  for (const char* p : {"001_allreduce", "004_reduce"}) {
    auto r = pkb::compile_candidate(pkb::repo_root() / "problems" / p / "solution.cu", o);
    EXPECT_EQ(r.status, pkb::CompileStatus::ok) << p << ": " << r.log;
    EXPECT_TRUE(std::filesystem::exists(r.library));
    EXPECT_FALSE(r.cached);
  }
  // Same source, flags and compiler: served from the cache, no compiler run.
  auto again = pkb::compile_candidate(pkb::repo_root() / "problems/001_allreduce/solution.cu", o);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.status, pkb::CompileStatus::ok);
}

TEST(Compiler, CompileErrorsAreKeptAndCached) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, false);
  auto src = pkb::repo_root() / "tests/fixtures/cpu/compile_error.cpp";
  auto r = pkb::compile_candidate(src, o);
  EXPECT_EQ(r.status, pkb::CompileStatus::compile_error);
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  auto again = pkb::compile_candidate(src, o);
  EXPECT_TRUE(again.cached);
  EXPECT_EQ(again.log, r.log);
  // The fixture's shared header beside it is found (-I of the candidate's folder).
  EXPECT_EQ(pkb::compile_candidate(pkb::repo_root() / "tests/fixtures/cpu/correct.cpp", o).status,
            pkb::CompileStatus::ok);
}

// A sandbox that cannot be started is pkb's failure, not the kernel's: the compile throws, caches nothing, and the
// same source compiles once the sandbox is there (a missing bwrap was once cached as every kernel's compile_error).
TEST(Compiler, ASandboxThatCannotStartCachesNoFailure) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, false);
  o.sandbox = true;
  auto src = pkb::repo_root() / "tests/fixtures/cpu/correct.cpp";
  const char* had = getenv("PKB_BWRAP");
  const std::string before = had ? had : "";
  setenv("PKB_BWRAP", "/nonexistent/bwrap", 1);
  EXPECT_THROW(pkb::compile_candidate(src, o), pkb::Error);
  if (had)
    setenv("PKB_BWRAP", before.c_str(), 1);
  else
    unsetenv("PKB_BWRAP");
  auto r = pkb::compile_candidate(src, o);
  EXPECT_EQ(r.status, pkb::CompileStatus::ok) << r.log;
  EXPECT_FALSE(r.cached);
}

// A failure entry is believed only with the digest that binds it to its key and log: an edited log, a planted
// failure for a source that compiles, or a status pkb never caches is compiled again.
TEST(Compiler, AFailureEntryIsBelievedOnlyWithItsDigest) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, false);
  auto bad = pkb::repo_root() / "tests/fixtures/cpu/compile_error.cpp";
  auto r = pkb::compile_candidate(bad, o);
  ASSERT_EQ(r.status, pkb::CompileStatus::compile_error);
  auto result = o.cache_dir / r.hash / "result.json";
  auto entry = nlohmann::json::parse(pkb::read_text_file(result));
  EXPECT_EQ(entry["failure_sha256"].get<std::string>().size(), 64u);
  entry["log"] = "error: edited\n";
  pkb::test::write_file(result, entry.dump());
  auto edited = pkb::compile_candidate(bad, o);
  EXPECT_FALSE(edited.cached);
  EXPECT_EQ(edited.log, r.log);

  auto good = pkb::repo_root() / "tests/fixtures/cpu/correct.cpp";
  auto ok = pkb::compile_candidate(good, o);
  ASSERT_EQ(ok.status, pkb::CompileStatus::ok) << ok.log;
  for (const char* status : {"compile_error", "lint_violation"}) {
    std::filesystem::remove(ok.library);
    pkb::test::write_file(o.cache_dir / ok.hash / "result.json",
                          nlohmann::json{{"status", status}, {"log", "error: forged\n"}}.dump());
    auto again = pkb::compile_candidate(good, o);
    EXPECT_EQ(again.status, pkb::CompileStatus::ok) << status << ": " << again.log;
    EXPECT_FALSE(again.cached) << status;
  }
}

// Parallel evaluations compile the same source at once: each compiles privately and one entry is kept.
TEST(Compiler, ConcurrentCompilationsOfOneSourceShareOneEntry) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, false);
  auto src = pkb::repo_root() / "tests/fixtures/cpu/correct.cpp";
  std::vector<pkb::CompileResult> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&r, &src, &o] { r = pkb::compile_candidate(src, o); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    EXPECT_EQ(r.status, pkb::CompileStatus::ok) << r.log;
    EXPECT_TRUE(std::filesystem::exists(r.library)) << r.library;
  }
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path() / "cache")) {
    EXPECT_EQ(e.path().filename().string().find(".work-"), std::string::npos) << "left behind: " << e.path();
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

// The key is what is compiled, not where it lies: the same source and headers in another folder are served from the
// cache; a header that differs is compiled again.
TEST(Compiler, TheSameCandidateInAnotherFolderIsCached) {
  pkb::test::TempDir tmp;
  auto o = options(tmp, false);
  const auto fixtures = pkb::repo_root() / "tests/fixtures/cpu";
  for (const char* folder : {"a", "b", "c"}) {
    std::filesystem::create_directories(tmp.path() / folder);
    std::filesystem::copy_file(fixtures / "correct.cpp", tmp.path() / folder / "correct.cpp");
    std::filesystem::copy_file(fixtures / "fixture.h", tmp.path() / folder / "fixture.h");
  }
  pkb::test::write_file(tmp.path() / "c/fixture.h",
                        "// another header\n" + pkb::read_text_file(fixtures / "fixture.h"));
  auto first = pkb::compile_candidate(tmp.path() / "a/correct.cpp", o);
  ASSERT_EQ(first.status, pkb::CompileStatus::ok) << first.log;
  EXPECT_FALSE(first.cached);
  auto moved = pkb::compile_candidate(tmp.path() / "b/correct.cpp", o);
  EXPECT_TRUE(moved.cached);
  EXPECT_EQ(moved.hash, first.hash);
  auto other_header = pkb::compile_candidate(tmp.path() / "c/correct.cpp", o);
  EXPECT_EQ(other_header.status, pkb::CompileStatus::ok) << other_header.log;
  EXPECT_FALSE(other_header.cached);
  EXPECT_NE(other_header.hash, first.hash);
}

TEST(Compiler, CudaCompileErrorIsReported) {
  pkb::test::TempDir tmp;
  pkb::test::write_file(tmp.path() / "bad.cu",
                        "#include <pkb/abi.h>\nextern \"C\" int pkb_run(pkb_context* c) { return undefined_name; }\n");
  auto r = pkb::compile_candidate(tmp.path() / "bad.cu", options(tmp, true));
  EXPECT_EQ(r.status, pkb::CompileStatus::compile_error);
  EXPECT_NE(r.log.find("undefined_name"), std::string::npos) << r.log;
}

TEST(Lint, FlagsForbiddenConstructsButNotCommentsOrStrings) {
  auto rules = [](const std::string& code, bool allow_nccl = false) {
    std::vector<std::string> out;
    for (const auto& f : pkb::lint_source(code, allow_nccl)) out.push_back(f.rule);
    return out;
  };
  EXPECT_EQ(rules("int x = fork();"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("system(\"ls\");"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("#include <sys/socket.h>"), std::vector<std::string>{"socket"});
  EXPECT_EQ(rules("void* h = dlopen(0, 0);"), std::vector<std::string>{"dynamic_loading"});
  EXPECT_EQ(rules("ncclAllReduce(a, b, n, t, op, c, s);"), std::vector<std::string>{"nccl"});
  EXPECT_TRUE(rules("ncclAllReduce(a, b, n, t, op, c, s);", true).empty()) << "policy may allow NCCL";
  EXPECT_EQ(rules("MPI_Barrier(MPI_COMM_WORLD);"), std::vector<std::string>{"mpi"});
  EXPECT_EQ(rules("cudaDeviceReset();"), std::vector<std::string>{"device_reset"});
  EXPECT_EQ(rules("cudaSetDevice(1);"), std::vector<std::string>{"device_switch"});
  EXPECT_EQ(rules("setenv(\"X\", \"1\", 1);"), std::vector<std::string>{"timing"});
  // Mentions in comments and strings are not calls.
  EXPECT_TRUE(rules("// we do not fork() here\n/* dlopen */ const char* s = \"system(x)\";").empty());
  EXPECT_TRUE(rules("int my_system_count = 0; cudaStreamSynchronize(s);").empty());
  auto f = pkb::lint_source("int a;\n  int b = fork();\n", false);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].line, 2);
  EXPECT_EQ(f[0].text, "int b = fork();");
}

// The spellings that got past the old regular expressions: a name is flagged wherever it stands. (Token pasting
// and the like still get past any scan: the sandbox stops those, tests/security.)
TEST(Lint, FlagsNamesHoweverTheyAreSpelled) {
  auto rules = [](const std::string& code) {
    std::vector<std::string> out;
    for (const auto& f : pkb::lint_source(code, false)) out.push_back(f.rule);
    return out;
  };
  EXPECT_EQ(rules("int (*f)(const char*) = system;"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("auto g = &std::system;"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("(std::system)(\"sh\");"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("int r = system\n  (\"sh\");"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("syscall(SYS_fork);"), std::vector<std::string>{"process"});
  EXPECT_EQ(rules("void* p = dlsym(RTLD_DEFAULT, name);"), std::vector<std::string>{"dynamic_loading"});
  EXPECT_EQ(rules("#include <openmpi/mpi.h>"), std::vector<std::string>{"mpi"});
  EXPECT_EQ(rules("PMPI_Barrier(c);"), std::vector<std::string>{"mpi"});
  EXPECT_EQ(rules("#include \"/etc/hostname\""), std::vector<std::string>{"include_path"});
  EXPECT_EQ(rules("#include \"../../secret.h\""), std::vector<std::string>{"include_path"});
  EXPECT_EQ(rules("#include <dlfcn.h>"), std::vector<std::string>{"dynamic_loading"});
  // Common words are names only when called.
  EXPECT_TRUE(rules("bool accept = true; int listen = 0; auto b = std::bind_front;").empty());
  EXPECT_EQ(rules("accept(fd, 0, 0);"), std::vector<std::string>{"socket"});
}

// A keyword followed by 100k blanks on one line once overflowed std::regex's stack: the scan is linear.
TEST(Lint, LongLinesAreScannedInLinearTime) {
  std::string line = "system" + std::string(100000, ' ') + "(\"x\");\n";
  std::string big;
  for (int i = 0; i < 20; ++i) big += line;
  auto f = pkb::lint_source(big, false);
  ASSERT_EQ(f.size(), 20u);
  EXPECT_LE(f[0].text.size(), 200u);
}
