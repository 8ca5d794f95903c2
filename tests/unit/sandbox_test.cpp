// The sandbox itself, probed with a shell inside it: what it can see, write, reach and inherit.
#include "launch/sandbox.h"

#include <gtest/gtest.h>

#include <fstream>

#include "core/files.h"
#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct Inside {
  pkb::ProcessResult result;
  std::string out;
};

Inside run_inside(const pkb::Sandbox& box, const std::string& script, const pkb::SandboxLimits& limits = {}) {
  pkb::test::TempDir logs;
  pkb::ProcessOptions po;
  po.timeout_s = 30;
  po.clear_env = true;
  po.stdout_path = logs.path() / "out";
  po.stderr_path = logs.path() / "err";
  pkb::apply_limits(po, limits);
  auto r = pkb::run_sandboxed(box, {"/bin/sh", "-c", script}, po);
  return {r, pkb::file_tail(logs.path() / "out", 1 << 20) + pkb::file_tail(logs.path() / "err", 1 << 20)};
}

class Sandbox : public testing::Test {
 protected:
  void SetUp() override {
    if (!pkb::sandbox_unavailable().empty()) GTEST_SKIP() << pkb::sandbox_unavailable();
  }
};

TEST_F(Sandbox, SeesOnlyItsScratchAndTheSystem) {
  pkb::test::TempDir scratch, outside;
  pkb::test::write_file(outside.path() / "secret", "top secret");
  pkb::Sandbox box;
  box.work = scratch.path();
  auto in = run_inside(box, "echo hi > /pkb/work/ok; echo x > " + outside.path().string() + "/leak; echo x > " +
                                scratch.path().string() + "/at-its-host-path; cat " + outside.path().string() +
                                "/secret; ls /root /work 2>&1; "
                                "echo x > /usr/leak; id -u; test -e /etc/shadow && echo SHADOW; exit 0");
  EXPECT_TRUE(in.result.ok()) << in.out;
  EXPECT_EQ(pkb::read_text_file(scratch.path() / "ok"), "hi\n");
  EXPECT_FALSE(fs::exists(outside.path() / "leak"));
  EXPECT_FALSE(fs::exists(scratch.path() / "at-its-host-path")) << "the scratch is bound at /pkb/work only";
  EXPECT_FALSE(fs::exists("/usr/leak"));
  EXPECT_EQ(in.out.find("top secret"), std::string::npos) << in.out;
  EXPECT_EQ(in.out.find("SHADOW"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("65534"), std::string::npos) << "runs as nobody inside: " << in.out;
}

TEST_F(Sandbox, HasNoEnvironmentNetworkOrStdinOfItsCaller) {
  setenv("PKB_TEST_API_KEY", "sk-must-not-leak", 1);
  pkb::Sandbox box;
  auto in = run_inside(box, "env; cat /proc/1/environ; echo; cat /proc/net/dev; read line && echo STDIN:$line; exit 0");
  unsetenv("PKB_TEST_API_KEY");
  EXPECT_EQ(in.out.find("sk-must-not-leak"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("lo:"), std::string::npos) << in.out;
  for (const char* dev : {"eth", "ens", "enp", "wlan", "veth"})
    EXPECT_EQ(in.out.find(std::string(dev)), std::string::npos) << in.out;
  EXPECT_EQ(in.out.find("STDIN:"), std::string::npos);
}

TEST_F(Sandbox, FileSizeLimitCapsOutput) {
  pkb::test::TempDir scratch;
  pkb::Sandbox box;
  box.work = scratch.path();
  pkb::SandboxLimits limits;
  limits.file_size = 1 << 16;
  auto in = run_inside(box, "head -c 1000000 /dev/zero > big; exit 0", limits);
  EXPECT_EQ(fs::file_size(scratch.path() / "big"), 1u << 16);
}

// Inside, the sandbox's own paths are fixed names: its working directory, HOME and PWD are /pkb/work (a private tmpfs
// here), and files handed in are copies, so that nothing a process inside can read names where they come from on the
// host (bound directories would show their host paths in /proc/self/mountinfo).
TEST_F(Sandbox, ItsPathsAreNeutralAndItsFilesAreCopies) {
  pkb::test::TempDir host;
  pkb::Sandbox box;
  box.files = {{"/pkb/spec.json", "{\"spec\": 1}"}, {pkb::kSandboxWork / "plan.json", "the plan", false}};
  auto in = run_inside(box,
                       "echo HOME=$HOME PWD=$PWD TMPDIR=$TMPDIR; echo cwd=$(pwd); cat /pkb/spec.json; echo; "
                       "cat plan.json; echo; rm plan.json && echo plan-deleted; echo x > /pkb/spec.json || "
                       "echo spec-read-only; echo y > mine && echo wrote-work; cat /proc/self/mountinfo; exit 0");
  EXPECT_TRUE(in.result.ok()) << in.out;
  EXPECT_NE(in.out.find("HOME=/pkb/work PWD=/pkb/work TMPDIR=/tmp"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("cwd=/pkb/work"), std::string::npos) << in.out;
  EXPECT_NE(in.out.find("{\"spec\": 1}\nthe plan\nplan-deleted\nspec-read-only\nwrote-work"), std::string::npos)
      << in.out;
  EXPECT_EQ(in.out.find(host.path().parent_path().string() + "/pkb-"), std::string::npos)
      << "a host path of the temporary directory inside: " << in.out;
}

TEST_F(Sandbox, ItsProcessesDieWithIt) {
  pkb::Sandbox box;
  pkb::test::TempDir logs;
  pkb::ProcessOptions po;
  po.timeout_s = 1;
  po.clear_env = true;
  auto r = pkb::run_sandboxed(box, {"/bin/sh", "-c", "(setsid sleep 3000.424242 &); sleep 100"}, po);
  EXPECT_TRUE(r.timed_out);
  std::string found =
      pkb::capture_stdout({"sh", "-c", "sleep 0.3; cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '"});
  EXPECT_EQ(found.find("sleep 3000.424242"), std::string::npos) << "a process outlived its sandbox";
}

// A GPU job whose processes share a GPU gets an MPS daemon of the sandbox's own: started before the job with the
// pipes in the sandbox's /tmp (what its clients are told), the host's pipe directory not bound, told to quit after the
// job, whose exit status is the sandbox's. A stand-in control program (bound over PATH) records what it was asked.
TEST_F(Sandbox, ItsOwnMpsDaemonStartsBeforeTheJobAndQuitsAfter) {
  pkb::test::TempDir fake, scratch, host_pipes;
  pkb::test::write_file(fake.path() / "nvidia-cuda-mps-control",
                        "#!/bin/sh\n"
                        "if [ \"$1\" = -d ]; then echo started > \"$CUDA_MPS_PIPE_DIRECTORY/control\"; "
                        "echo \"daemon pipes=$CUDA_MPS_PIPE_DIRECTORY logs=$CUDA_MPS_LOG_DIRECTORY\" >> /pkb/work/log; "
                        "exit 0; fi\n"
                        "read cmd; echo \"asked: $cmd\" >> /pkb/work/log\n");
  fs::permissions(fake.path() / "nvidia-cuda-mps-control", fs::perms::owner_all | fs::perms::others_exec |
                                                               fs::perms::others_read | fs::perms::group_exec |
                                                               fs::perms::group_read);
  pkb::test::write_file(host_pipes.path() / "control", "the host's");
  pkb::Sandbox box;
  box.gpu = true;
  box.own_mps = true;
  box.work = scratch.path();
  box.read_only_at = {{fake.path(), "/pkb/fake"}};
  box.env = {{"PATH", "/pkb/fake:/usr/bin:/bin"}, {"CUDA_MPS_PIPE_DIRECTORY", host_pipes.path().string()}};
  auto in = run_inside(box,
                       "echo \"job sees $CUDA_MPS_PIPE_DIRECTORY: $(cat $CUDA_MPS_PIPE_DIRECTORY/control)\" >> "
                       "/pkb/work/log; test -e " +
                           host_pipes.path().string() + "/control && echo HOST-PIPES; exit 7");
  EXPECT_EQ(in.result.exit_code, 7) << in.out;
  EXPECT_EQ(in.out.find("HOST-PIPES"), std::string::npos) << "the host's pipe directory is bound in: " << in.out;
  EXPECT_EQ(pkb::read_text_file(scratch.path() / "log"),
            "daemon pipes=" + pkb::kSandboxMpsPipes.string() + " logs=" + pkb::kSandboxMpsLogs.string() +
                "\njob sees " + pkb::kSandboxMpsPipes.string() + ": started\nasked: quit\n")
      << in.out;
}

}  // namespace
