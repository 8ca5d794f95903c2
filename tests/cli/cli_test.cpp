// The pkb binary as a user runs it: exit codes, one-line errors, selection, skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "../unit/test_util.h"
#include "core/files.h"
#include "launch/process.h"
#include "spec/catalog.h"

using pkb::test::TempDir;
using pkb::test::write_file;

namespace {

using pkb::test::CliRun;

// pkb as users run it, over test_util's run_cli; `root` becomes PKB_ROOT (a ToyRoot's problems instead of the tree's).
CliRun pkb_cli(const std::vector<std::string>& args, const std::filesystem::path& root = {},
               std::map<std::string, std::string> env = {}) {
  if (!root.empty()) env["PKB_ROOT"] = root.string();
  return pkb::test::run_cli(PKB_BINARY, args, env, 300);
}

// A throwaway repo root holding copies of shipped problems, with their problem.json edited.
class ToyRoot {
 public:
  explicit ToyRoot(const std::string& folder, const std::function<void(nlohmann::json&)>& edit) {
    std::filesystem::copy(pkb::repo_root() / "topologies", tmp_.path() / "topologies");
    std::filesystem::create_directories(tmp_.path() / "harness");
    std::filesystem::copy(pkb::repo_root() / "harness/python", tmp_.path() / "harness/python");  // reference.py runner
    add(folder, edit);
  }
  void add(
      const std::string& folder, const std::function<void(nlohmann::json&)>& edit = [](nlohmann::json&) {}) {
    auto src = pkb::repo_root() / "problems" / folder;
    std::filesystem::create_directories(tmp_.path() / "problems");
    std::filesystem::copy(src, tmp_.path() / "problems" / folder, std::filesystem::copy_options::recursive);
    std::ifstream in(src / "problem.json");
    nlohmann::json j = nlohmann::json::parse(in);
    edit(j);
    write_file(tmp_.path() / "problems" / folder / "problem.json", j.dump(2));
  }
  const std::filesystem::path& path() const { return tmp_.path(); }

 private:
  TempDir tmp_;
};

}  // namespace

TEST(Cli, ProblemsListShowsTheShippedProblems) {
  CliRun r = pkb_cli({"problems", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* slug :
       {"allreduce", "allgather", "broadcast", "reduce", "scatter", "gather", "reducescatter", "alltoall"})
    EXPECT_NE(r.out.find(slug), std::string::npos) << slug;
  CliRun j = pkb_cli({"problems", "list", "--json"});
  auto arr = nlohmann::json::parse(j.out);
  ASSERT_GE(arr.size(), 8u);
  EXPECT_EQ(arr[0]["slug"], "allreduce");
  EXPECT_EQ(arr[0]["has_reference"], true);
}

TEST(Cli, ProblemsShowResolvesShapes) {
  CliRun r = pkb_cli({"problems", "show", "gather", "-w", "4"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("out (4, 1024, 1024) bf16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("link_bytes=6291456"), std::string::npos) << r.out;  // (W-1) * M * N * 2 bytes
}

TEST(Cli, MalformedProblemGivesOneLineErrorNamingFileAndField) {
  ToyRoot root("001_allreduce", [](nlohmann::json& j) { j["inputs"][0]["dtype"] = "bfloat17"; });
  CliRun r = pkb_cli({"problems", "list"}, root.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("001_allreduce/problem.json: inputs[0].dtype: unknown dtype 'bfloat17'"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "exactly one line: " << r.err;
}

TEST(Cli, UnknownSelectionIsAUsageError) {
  CliRun r = pkb_cli({"validate", "999", "--device", "cpu"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no problem with id 999"), std::string::npos) << r.err;
  EXPECT_EQ(pkb_cli({"validate"}).exit_code, 2);
  EXPECT_EQ(pkb_cli({"frobnicate"}).exit_code, 2);
}

// A directory read as the candidate is empty text that compiles to a library without pkb_run (load_error): it must
// be a usage error that names the path, with nothing recorded.
TEST(Cli, ADirectoryAsTheCandidateIsAUsageErrorNamingIt) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "kernels");
  std::string dir = (tmp.path() / "kernels").string();
  CliRun r = pkb_cli({"eval", dir, "--problem", "1", "-w", "2", "--device", "cpu", "--out",
                      (tmp.path() / "out").string(), "--cache", (tmp.path() / "cache").string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(dir + ": is a directory, not a candidate source file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "out/results.jsonl")) << "no record for a usage error";
}

// A negative or zero deadline, a negative count or size: usage errors naming the option, before anything runs (a
// --timeout of -1 was recorded as the kernel's timeout, "no result within 0 s").
TEST(Cli, NegativeDurationsAndCountsAreUsageErrorsNamingTheOption) {
  TempDir tmp;
  auto src = (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string();
  const std::vector<std::string> dirs = {"--out", (tmp.path() / "out").string(), "--cache",
                                         (tmp.path() / "cache").string()};
  const std::vector<std::string> eval = {"eval", src, "--problem", "1", "-w", "2", "--device", "cpu"};
  struct Bad {
    std::vector<std::string> args;
    std::string message;
  };
  for (const Bad& bad : std::vector<Bad>{
           {pkb::test::joined({eval, {"--timeout", "-1"}}), "--timeout: must be greater than 0, got -1"},
           {pkb::test::joined({eval, {"--timeout", "0"}}), "--timeout: must be greater than 0, got 0"},
           {pkb::test::joined({eval, {"--heap-mib", "-5"}}), "--heap-mib: must be 0 or more, got -5"},
           {pkb::test::joined({eval, {"--seed", "-1"}}), "--seed: must be 0 or more, got -1"},
           {pkb::test::joined({eval, {"--timing-budget", "-2"}}), "--timing-budget: must be greater than 0, got -2"},
           {{"run", "--problems", "1", "--device", "cpu", "--timeout", "-1"}, "--timeout: must be greater than 0"},
           {{"run", "--problems", "1", "--device", "cpu", "--compile-jobs", "-2"}, "--compile-jobs: must be 0 or more"},
           {{"run", "--problems", "1", "--device", "cpu", "--temperature", "-0.5"}, "--temperature: must be 0 or more"},
           {pkb::test::joined({eval, {"--candidate-process", "inline"}}), "--candidate-process: inline not in"},
           {{"run", "--problems", "1", "--device", "cpu", "--candidate-process", "x"},
            "--candidate-process: x not in"}}) {
    CliRun r = pkb_cli(pkb::test::joined({bad.args, dirs}));
    EXPECT_EQ(r.exit_code, 2) << bad.args[0] << " " << bad.message << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(bad.message), std::string::npos) << r.err;
  }
  CliRun validate =
      pkb_cli({"validate", "1", "--device", "cpu", "--timeout", "-3", "--out", (tmp.path() / "v").string()});
  EXPECT_EQ(validate.exit_code, 2) << validate.out << validate.err;
  EXPECT_NE(validate.err.find("--timeout: must be greater than 0, got -3"), std::string::npos) << validate.err;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "out")) << "nothing ran";
}

TEST(Cli, ForbiddenWorldSizeIsSkippedAndSaysWhy) {
  ToyRoot root("001_allreduce", [](nlohmann::json& j) { j["world_size"]["constraints"] = {"W % 2 == 0"}; });
  CliRun r =
      pkb_cli({"validate", "1", "-w", "3", "--device", "cpu", "--out", (root.path() / "out").string()}, root.path());
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("SKIP 001_allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("violates world_size constraint 'W % 2 == 0'"), std::string::npos) << r.out;
}

TEST(Cli, ValidateFailsWhenReferenceAndOracleDisagree) {
  // Zero tolerance: bf16 sums rounded at each step cannot equal the exact oracle at W = 4.
  ToyRoot root("001_allreduce", [](nlohmann::json& j) {
    j["tolerance"] = {{"atol", 0}, {"rtol", 0}, {"gamma", 0}, {"max_rel_l2", 0}};
  });
  CliRun r =
      pkb_cli({"validate", "1", "-w", "4", "--device", "cpu", "--trials", "1", "--out", (root.path() / "out").string()},
              root.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL 001_allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mismatched"), std::string::npos) << r.out;
}

TEST(Cli, ValidateFailsWhenReferenceDisagreesWithTheSpec) {
  ToyRoot root("007_reducescatter", [](nlohmann::json& j) { j["outputs"][0]["shape"] = {"M", "2 * N"}; });
  CliRun r = pkb_cli({"validate", "reducescatter", "-w", "2", "--device", "cpu", "--trials", "1", "--out",
                      (root.path() / "out").string()},
                     root.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("reference output 'out' has shape"), std::string::npos) << r.out;
}

// pkb looks for torch's files without importing it (the import costs ~1.6 s of CPU per driver); a torch that is
// there but cannot be imported makes the cross-check a skip that says why, never a failure or a silent pass.
// ... for every problem of the batch, from one launch: the first problem's skip is not the last problem's cause to
// start Python again.
TEST(Cli, AnUnimportableTorchSkipsTheCrossCheckAndSaysWhy) {
  ToyRoot root("001_allreduce", [](nlohmann::json&) {});
  root.add("006_gather");
  write_file(root.path() / "fake/torch/__init__.py", "raise ImportError('a torch broken for the test')\n");
  const std::filesystem::path launches = root.path() / "launches";  // a line per rank of reference.py's launches
  write_file(root.path() / "python", "#!/bin/sh\ncase \"$*\" in *run_reference.py*) echo rank >>" + launches.string() +
                                         ";; esac\nPYTHONPATH=" + (root.path() / "fake").string() +
                                         " exec /usr/bin/python3 \"$@\"\n");
  std::filesystem::permissions(root.path() / "python", std::filesystem::perms::owner_all);
  CliRun r = pkb_cli({"validate", "all", "--small", "-w", "2", "--device", "cpu", "--trials", "1", "--python", "on",
                      "--out", (root.path() / "out").string()},
                     root.path(), {{"PKB_PYTHON", (root.path() / "python").string()}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS 001_allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS 006_gather"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot import torch: a torch broken for the test"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 skipped"), std::string::npos) << r.out;
  EXPECT_EQ(pkb::read_text_file(launches), "rank\nrank\n");  // one launch of W = 2 ranks for both problems
}

// fp32 is IEEE fp32 in both references, never TF32 (libtorch and PyTorch let cuDNN convolutions use TF32 by default):
// every rank of reference.cpp (pkb-rank) and of reference.py (run_reference.py) reads its settings back into its
// record, and validation.json carries them. Torch's own default has cuDNN TF32 on, so `false` here is pkb's setting.
TEST(Cli, BothReferencesRunFp32AsIeeeAndRecordIt) {
  TempDir out;
  CliRun r = pkb_cli({"validate", "1", "--small", "-w", "2", "--device", "cpu", "--dtype", "fp32", "--trials", "1",
                      "--python", "on", "--out", out.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("agrees"), std::string::npos) << r.out;  // reference.py ran
  const nlohmann::json ieee = {
      {"ieee", true}, {"tf32_cudnn", false}, {"tf32_cublas", false}, {"float32_matmul_precision", "highest"}};
  const std::filesystem::path dir = out.path() / "001_allreduce/w2_cpu_fp32";
  auto record = [&](const std::string& name) { return nlohmann::json::parse(pkb::read_text_file(dir / name)); };
  for (const std::string rank : {"0", "1"}) {
    EXPECT_EQ(record("rank" + rank + ".json")["fp32_math"], ieee) << "reference.cpp, rank " << rank;
    EXPECT_EQ(record("py.rank" + rank + ".json")["fp32_math"], ieee) << "reference.py, rank " << rank;
  }
  EXPECT_EQ(record("validation.json")["fp32_math"], ieee);
  EXPECT_EQ(record("validation.json")["python_fp32_math"], ieee);
}

// validate runs several problems per launch (pkb-rank --batch, one Python launch); a problem that ends a launch
// fails alone, with its own error, and the problems after it still run and pass.
TEST(Cli, ValidateBatchesAndABrokenProblemFailsAlone) {
  ToyRoot root("001_allreduce", [](nlohmann::json&) {});
  root.add("006_gather");
  write_file(root.path() / "problems/006_gather/reference.py",
             "def solution(*args):\n    raise RuntimeError('deliberately broken reference.py')\n");
  root.add("007_reducescatter", [](nlohmann::json& j) { j["outputs"][0]["shape"] = {"M", "2 * N"}; });
  root.add("008_alltoall");
  CliRun r = pkb_cli({"validate", "all", "--small", "-w", "2", "--device", "cpu", "--dtype", "fp32", "--python", "on",
                      "--out", (root.path() / "out").string()},
                     root.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS 001_allreduce"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL 006_gather"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deliberately broken reference.py"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("FAIL 007_reducescatter"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reference output 'out' has shape"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS 008_alltoall"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validate: 2 passed, 2 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 agrees"), std::string::npos) << r.out;  // 001 and 008 cross-checked after the failures
  // One reference launch covered 001, 006 and 007 (ended by 007's error); 008 ran in the next.
  auto record = [&](const std::string& folder) {
    std::ifstream in(root.path() / "out" / folder / "w2_cpu_fp32/validation.json");
    return nlohmann::json::parse(in);
  };
  EXPECT_EQ(record("001_allreduce")["reference_launch_problems"], 4);
  EXPECT_EQ(record("008_alltoall")["reference_launch_problems"], 1);
}

// pkb links no libtorch: the commands that never touch a tensor run in it, and every other command line (a global
// --root before the command included) runs pkb-full, which has every command, with the same arguments.
TEST(Cli, TheFrontLinksNoLibtorchAndHandsTheOtherCommandsOn) {
  auto needed = [](const std::filesystem::path& program) {
    TempDir tmp;
    pkb::ProcessOptions o;
    o.stdout_path = tmp.path() / "out";
    EXPECT_TRUE(pkb::run_process({"ldd", program.string()}, o).ok());
    return pkb::file_tail(tmp.path() / "out", 1 << 20);
  };
  const std::filesystem::path front = PKB_BINARY;
  EXPECT_EQ(needed(front).find("libtorch"), std::string::npos) << needed(front);
  EXPECT_NE(needed(front.parent_path() / "pkb-full").find("libtorch"), std::string::npos);
  const std::string root = pkb::repo_root().string();
  CliRun listed = pkb_cli({"--root", root, "problems", "list"});  // pkb-full's
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("1    allreduce"), std::string::npos) << listed.out;
  CliRun shown = pkb_cli({"--root=" + root, "topology", "show", "h100_8"});  // the front's own
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(nlohmann::json::parse(shown.out, nullptr, false).value("name", ""), "h100_8") << shown.out;
  CliRun help = pkb_cli({"--help"});  // every command, from pkb-full
  EXPECT_EQ(help.exit_code, 0);
  for (const char* command : {"eval", "run", "validate", "report", "leaderboard", "topology"})
    EXPECT_NE(help.out.find(std::string("\n  ") + command + " "), std::string::npos) << command << help.out;
  EXPECT_EQ(pkb_cli({"nonsense"}).exit_code, 2);
  EXPECT_EQ(pkb_cli({"report"}).exit_code, 2);  // a usage error of the front's own
}

// `pkb eval` runs in the front, without libtorch: pkb-full is asked only for a new reference entry's oracle (once),
// and an evaluation against a cached entry starts no pkb-full at all. The programs are copies beside a pkb-full that
// logs each start before running the real one.
TEST(Cli, EvalRunsInTheFrontAndAsksPkbFullOnlyForANewEntrysOracle) {
  TempDir tmp;
  const std::filesystem::path build = std::filesystem::path(PKB_BINARY).parent_path(), bin = tmp.path() / "bin";
  std::filesystem::create_directories(bin);
  for (const char* program : {"pkb", "pkb-rank", "pkb-candidate", "pkb-runner"})
    std::filesystem::copy_file(build / program, bin / program);
  const std::filesystem::path log = tmp.path() / "pkb-full.log";
  write_file(bin / "pkb-full",
             "#!/bin/sh\necho \"$1\" >> '" + log.string() + "'\nexec '" + (build / "pkb-full").string() + "' \"$@\"\n");
  std::filesystem::permissions(bin / "pkb-full", std::filesystem::perms::owner_exec,
                               std::filesystem::perm_options::add);
  auto eval = [&] {
    return pkb::test::run_cli(
        (bin / "pkb").string(),
        pkb::test::joined(
            {{"eval", (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string(), "--problem", "1", "-w", "2",
              "--device", "cpu", "--param", "M=64", "--param", "N=48", "--trials", "1"},
             pkb::test::kShortTiming,
             {"--cache", (tmp.path() / "cache").string(), "--out", (tmp.path() / "out").string(), "--json"}}),
        {}, 300);
  };
  auto status = [](const CliRun& r) {
    return nlohmann::json::parse(r.out, nullptr, false).value("status", std::string("no record: ") + r.err);
  };
  CliRun first = eval();
  EXPECT_EQ(status(first), "correct") << first.out << first.err;
  EXPECT_EQ(pkb::read_text_file(log), "oracle\n") << "the first evaluation builds the entry: one oracle";
  CliRun cached = eval();
  EXPECT_EQ(status(cached), "correct") << cached.out << cached.err;
  EXPECT_EQ(pkb::read_text_file(log), "oracle\n") << "a cached entry needs no pkb-full";
}

// The headline's baseline by the names the reports use (eager, libtorch), the earlier names (auto, cpp) still taken.
TEST(Cli, TheHeadlineBaselineIsEagerOrLibtorch) {
  CliRun bad = pkb_cli({"eval", "x.cpp", "--problem", "1", "--baseline", "python"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("{eager,libtorch,auto,cpp}"), std::string::npos) << bad.err;
  CliRun help = pkb_cli({"eval", "--help"});
  EXPECT_NE(help.out.find("eager->auto,libtorch->cpp"), std::string::npos) << help.out;
}

// The evaluating commands list their options in groups, each option once; the HTTP deadline has one name everywhere.
TEST(Cli, OptionsComeInGroupsWithOneMeaningPerName) {
  std::string run_help;
  for (const char* command : {"eval", "run"}) {
    CliRun help = pkb_cli({command, "--help"});
    if (std::string(command) == "run") run_help = help.out;
    ASSERT_EQ(help.exit_code, 0) << help.err;
    size_t last = 0;
    for (const char* group : {"Selection:", "Evaluation:", "Timing:", "Isolation:", "Output:"}) {
      size_t at = help.out.find(std::string("\n") + group + "\n");
      EXPECT_NE(at, std::string::npos) << command << " has no group " << group << "\n" << help.out;
      EXPECT_GT(at, last) << command << ": " << group << " out of order";
      last = at == std::string::npos ? last : at;
    }
    for (const char* option : {"--timeout ", "--trials ", "--no-sandbox ", "--cache "}) {
      size_t first = help.out.find(std::string("  ") + option);
      EXPECT_NE(first, std::string::npos) << command << " " << option;
      EXPECT_EQ(help.out.find(std::string("  ") + option, first + 1), std::string::npos)
          << command << " declares " << option << "twice";
    }
  }
  EXPECT_NE(run_help.find("\nModel service:\n"), std::string::npos);
  CliRun generate = pkb_cli({"generate", "--help"});
  EXPECT_NE(generate.out.find("--http-timeout"), std::string::npos) << generate.out;
  EXPECT_EQ(generate.out.find("  --timeout "), std::string::npos) << "generate's --timeout meant an HTTP deadline";
}

TEST(Cli, TopologyListAndShow) {
  CliRun r = pkb_cli({"topology", "list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("h200_2"), std::string::npos);
  CliRun s = pkb_cli({"topology", "show", "h100_8"});
  EXPECT_EQ(nlohmann::json::parse(s.out)["interconnect"]["per_gpu_link_GBps"], 450);
  EXPECT_EQ(pkb_cli({"topology", "show", "nope"}).exit_code, 2);
}
