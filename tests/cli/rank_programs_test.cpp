// The two rank programs that host candidates: pkb-candidate (no libtorch) and pkb-rank (for problems whose inputs a
// libtorch prepare step finishes) must hand a candidate the very bytes the reference pass computed on, in either
// float dtype. An echo candidate (its output is its input) shows them.
#include <gtest/gtest.h>

#include "../unit/test_util.h"
#include "core/files.h"
#include "launch/mpirun.h"
#include "launch/process.h"
#include "spec/catalog.h"

namespace {

namespace fs = std::filesystem;

pkb::ProcessResult run_ranks(const std::vector<std::string>& program, const fs::path& log_dir) {
  pkb::MpirunJob job = pkb::mpirun_job({2, false, {}}, program);
  pkb::ProcessOptions o;
  o.timeout_s = 120;
  o.env = job.env;
  o.stdout_path = log_dir / "stdout";
  o.stderr_path = log_dir / "stderr";
  fs::create_directories(log_dir);
  return pkb::run_process(job.argv, o);
}

// The data section of a safetensors file holding one tensor: its last `bytes` bytes.
std::string data_section(const fs::path& file, size_t bytes) {
  std::string all = pkb::read_text_file(file);
  EXPECT_GE(all.size(), bytes) << file;
  return all.size() >= bytes ? all.substr(all.size() - bytes) : "";
}

TEST(RankPrograms, BothCandidateHostsGiveTheReferencePassInputs) {
  pkb::test::TempDir tmp;
  const fs::path lib = tmp.path() / "echo.so";
  const fs::path fixtures = pkb::repo_root() / "tests/fixtures/cpu";
  pkb::ProcessOptions co;
  co.timeout_s = 120;
  co.stderr_path = tmp.path() / "cc.stderr";
  auto cc = pkb::run_process({"c++", "-shared", "-fPIC", "-O1", "-I", (pkb::repo_root() / "harness/include").string(),
                              (fixtures / "echo_inputs.cpp").string(), "-o", lib.string()},
                             co);
  ASSERT_TRUE(cc.ok()) << cc.summary() << pkb::file_tail(co.stderr_path);
  const std::string problem = (pkb::repo_root() / "problems/001_allreduce").string();
  const std::vector<std::string> shape = {"--param", "M=24", "--param", "N=40", "--trials", "0,3", "--seed", "11"};
  for (const std::string dtype : {"bf16", "fp32"}) {
    const size_t bytes = 24 * 40 * (dtype == "bf16" ? 2 : 4);
    const fs::path ref = tmp.path() / (dtype + "-reference");
    std::vector<std::string> ref_cmd = {PKB_RANK_BINARY, "--problem-dir", problem, "--out",
                                        ref.string(),    "--dtype",       dtype,   "--save-inputs"};
    ref_cmd.insert(ref_cmd.end(), shape.begin(), shape.end());
    auto r = run_ranks(ref_cmd, ref);
    ASSERT_TRUE(r.ok()) << r.summary() << pkb::file_tail(ref / "stderr");
    for (const std::string host : {PKB_RANK_BINARY, PKB_CANDIDATE_BINARY}) {
      const fs::path out = tmp.path() / (dtype + "-" + fs::path(host).filename().string());
      std::vector<std::string> cmd = {host,      "--problem-dir", problem,       "--out",     out.string(),
                                      "--dtype", dtype,           "--candidate", lib.string()};
      cmd.insert(cmd.end(), shape.begin(), shape.end());
      auto c = run_ranks(cmd, out);
      ASSERT_TRUE(c.ok()) << host << ": " << c.summary() << pkb::file_tail(out / "stderr");
      for (int trial : {0, 3})
        for (int rank : {0, 1}) {
          const std::string t = "trial" + std::to_string(trial), rk = std::to_string(rank);
          std::string given = data_section(out / t / ("rank" + rk + ".safetensors"), bytes);
          std::string drawn = data_section(ref / t / ("inputs.rank" + rk + ".safetensors"), bytes);
          EXPECT_FALSE(given.empty());
          EXPECT_TRUE(given == drawn) << host << " " << dtype << " trial " << trial << " rank " << rank
                                      << ": the candidate saw other inputs than the reference pass";
        }
    }
  }
}

// pkb-candidate has no references in it: a reference job is a usage error, said as such.
TEST(RankPrograms, PkbCandidateRunsCandidatePassesOnly) {
  pkb::test::TempDir tmp;
  auto r = pkb::test::run_cli(
      PKB_CANDIDATE_BINARY,
      {"--problem-dir", (pkb::repo_root() / "problems/001_allreduce").string(), "--out", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("runs candidate passes only"), std::string::npos) << r.err;
}

// glibc's malloc settings reach every rank: transparent huge pages by default (launch/mpirun.cpp says why), pkb's own
// GLIBC_TUNABLES instead where it has one.
TEST(RankPrograms, MallocSettingsReachEveryRank) {
  pkb::test::TempDir tmp;
  const char* saved = getenv("GLIBC_TUNABLES");
  const std::string restore = saved ? saved : "";
  const std::vector<std::string> echo = {"/bin/sh", "-c", "echo \"tunables=$GLIBC_TUNABLES\""};
  for (const std::string own : {"", "glibc.malloc.hugetlb=0"}) {
    if (own.empty())
      unsetenv("GLIBC_TUNABLES");
    else
      setenv("GLIBC_TUNABLES", own.c_str(), 1);
    const std::string want = "tunables=" + (own.empty() ? std::string("glibc.malloc.hugetlb=1") : own) + "\n";
    const fs::path dir = tmp.path() / (own.empty() ? "default" : "own");
    auto r = run_ranks(echo, dir);
    ASSERT_TRUE(r.ok()) << r.summary() << pkb::file_tail(dir / "stderr");
    EXPECT_EQ(pkb::read_text_file(dir / "stdout"), want + want) << "own setting: '" << own << "'";
  }
  if (saved)
    setenv("GLIBC_TUNABLES", restore.c_str(), 1);
  else
    unsetenv("GLIBC_TUNABLES");
}

}  // namespace
