// pkb serve's remote workers over real HTTP on loopback: a server with no slots of its own (--slots 0) and
// `pkb worker` processes, or the test itself speaking the workers' protocol. Worker and client tokens are not
// interchangeable; a claim lapses without heartbeats and goes back to the queue; only the current claim's record
// is stored, once; a worker killed mid-evaluation loses its claim, its children die with it, and another worker
// finishes the evaluation once. The Slurm side is tests/slurm/slurm_workers.sh.
#include <gtest/gtest.h>

#include "serve_support.h"

namespace pkb::test {
namespace {

class Workers : public testing::Test {
 protected:
  void SetUp() override {
    client_token_ = add_client(tmp_.path(), "alice");
    worker_token_ = add_client(tmp_.path(), "pool", true);
  }
  void start(const std::string& lease_s) {
    server_.start({"--slots", "0", "--lease", lease_s});
    client_ = std::make_unique<Client>(server_.port(), client_token_);
    worker_ = std::make_unique<Client>(server_.port(), worker_token_);
  }
  std::string submit_one(const json& item) {
    Reply r = client_->post("/v1/evaluations", item.dump());
    EXPECT_EQ(r.status, 202) << r.text;
    return r.body.value("id", "");
  }
  // The test as a worker named `name`: one claim (wait_s 0), its answer.
  Reply claim(const std::string& name, int max_world = 64) {
    return worker_->post("/v1/work/claim", json{{"worker", name}, {"device", "cpu"}, {"max_world", max_world}}.dump());
  }
  Reply post_result(const std::string& id, const std::string& name, int attempt, const std::string& status) {
    json record = {{"schema", "pkb.result/1"}, {"status", status}};
    return worker_->post(
        "/v1/work/" + id + "/result",
        json{{"worker", name}, {"attempt", attempt}, {"record", record}, {"child_wall_s", 1.5}}.dump());
  }

  TempDir tmp_;
  ServeProcess server_{tmp_.path()};
  std::string client_token_, worker_token_;
  std::unique_ptr<Client> client_, worker_;
};

TEST_F(Workers, WorkerAndClientTokensAreNotInterchangeable) {
  start("60");
  EXPECT_EQ(worker_->post("/v1/evaluations", fixture_item("correct").dump()).status, 401);
  EXPECT_EQ(worker_->get("/v1/evaluations?ids=x").status, 401);
  Client as_client(server_.port(), client_token_);
  EXPECT_EQ(as_client.post("/v1/work/claim", json{{"worker", "a"}}.dump()).status, 401);
  EXPECT_EQ(as_client.post("/v1/work/hello", json{{"worker", "a"}}.dump()).status, 401);
  Reply hello = worker_->post("/v1/work/hello", json{{"worker", "a"}, {"device", "cpu"}}.dump());
  ASSERT_EQ(hello.status, 200) << hello.text;
  EXPECT_EQ(hello.body["device"], "cpu");
  EXPECT_EQ(hello.body["timeout_s"], 20.0) << "the server's --timeout, for its workers to use";
  EXPECT_EQ(hello.body["lease_s"], 60.0);
  Reply gpu = worker_->post("/v1/work/hello", json{{"worker", "a"}, {"device", "cuda"}}.dump());
  EXPECT_EQ(gpu.status, 422);
  EXPECT_EQ(gpu.body["error"]["field"], "device");
  CliRun list = run_cli(PKB_BINARY, {"serve", "token", "list", "--data", tmp_.path().string()});
  EXPECT_EQ(list.out, "alice\npool (worker)\n");
}

TEST_F(Workers, ALapsedClaimIsQueuedAgainAndOnlyTheCurrentClaimFinishesOnce) {
  start("1");
  const std::string id = submit_one(fixture_item("compile_error"));
  EXPECT_EQ(claim("a", 1).status, 204) << "max_world 1: W = 2 is not taken";
  Reply first = claim("a");
  ASSERT_EQ(first.status, 200) << first.text;
  EXPECT_EQ(first.body["id"], id);
  EXPECT_EQ(first.body["attempt"], 1);
  EXPECT_EQ(first.body["source"], cpu_fixture("compile_error"));
  EXPECT_EQ(first.body["params"], (json{{"M", 64}, {"N", 48}}));
  EXPECT_EQ(client_->get("/v1/evaluations/" + id).body["worker"], "pool/a");
  EXPECT_EQ(claim("b").status, 204) << "claimed already";
  json requeued = wait_for(
      *client_, id, [](const json& r) { return r["state"] == "queued"; }, 10);
  ASSERT_EQ(requeued["state"], "queued") << "no heartbeat for the lease (1 s): back in the queue";
  Reply late_beat = worker_->post("/v1/work/" + id + "/heartbeat", json{{"worker", "a"}, {"attempt", 1}}.dump());
  EXPECT_EQ(late_beat.status, 409) << late_beat.text;
  Reply second = claim("b");
  ASSERT_EQ(second.status, 200) << second.text;
  EXPECT_EQ(second.body["attempt"], 2);
  Reply beat =
      worker_->post("/v1/work/" + id + "/heartbeat", json{{"worker", "b"}, {"attempt", 2}, {"running", true}}.dump());
  EXPECT_EQ(beat.status, 200) << beat.text;
  EXPECT_EQ(client_->get("/v1/evaluations/" + id).body["state"], "running");
  EXPECT_EQ(post_result(id, "a", 1, "correct").status, 409) << "the lapsed claim's record";
  EXPECT_EQ(post_result(id, "a", 2, "correct").status, 409) << "another worker's claim";
  Reply ok = post_result(id, "b", 2, "compile_error");
  ASSERT_EQ(ok.status, 200) << ok.text;
  EXPECT_EQ(ok.body["state"], "done");
  EXPECT_EQ(post_result(id, "b", 2, "correct").status, 409) << "exactly once";
  json row = client_->get("/v1/evaluations/" + id).body;
  EXPECT_EQ(row["state"], "done");
  EXPECT_EQ(row["status"], "compile_error");
  EXPECT_EQ(row["attempts"], 2);
  EXPECT_EQ(row["worker"], "pool/b");
  EXPECT_EQ(row["child_wall_s"], 1.5);
}

// The correct fixture, each rank napping 2 s when the candidate is loaded: its evaluation runs long enough to kill
// its worker mid-way.
std::string slow_correct() {
  return cpu_fixture("correct") + "\n#include <unistd.h>\nstatic int nap = (sleep(2), 0);\n";
}

TEST_F(Workers, AWorkerKilledMidEvaluationLosesItsClaimAndAnotherFinishesItOnce) {
  start("5");  // b heartbeats every 1.7 s: a loaded machine must stall it 3 s for its own claim to lapse
  WorkerProcess a(tmp_.path() / "a"), b(tmp_.path() / "b");
  a.start(server_.port(), worker_token_, "a");
  json item = fixture_item("correct");
  item["source"] = slow_correct();
  const std::string id = submit_one(item);
  json running = wait_for(*client_, id, [](const json& r) { return r["state"] == "running" || finished(r); });
  ASSERT_EQ(running["state"], "running") << running.dump() << a.output();
  EXPECT_EQ(running["worker"], "pool/a");
  const std::string a_work = (a.dir() / "work").string();
  EXPECT_GT(processes_mentioning(a_work), 0) << "worker a's pkb eval and ranks";
  a.kill9();
  for (int i = 0; i < 100 && processes_mentioning(a_work) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(processes_mentioning(a_work), 0) << "a pkb eval child or rank outlived its worker";
  b.start(server_.port(), worker_token_, "b", {"--idle-exit", "5"});
  json row = wait_for(*client_, id, finished);
  EXPECT_EQ(row["state"], "done") << row.dump() << b.output();
  EXPECT_EQ(row["status"], "correct");
  EXPECT_EQ(row["attempts"], 2) << "a's claim lapsed, b's is the second";
  EXPECT_EQ(row["worker"], "pool/b");
  EXPECT_EQ(row["record"]["schema"], "pkb.result/1");
  EXPECT_EQ(b.wait(60), 0) << "idle for 5 s after its evaluation: exits 0\n" << b.output();
  EXPECT_NE(b.output().find("exiting after 1 evaluation(s)"), std::string::npos) << b.output();
  EXPECT_EQ(client_->get("/v1/evaluations/" + id).body["finished"], row["finished"]) << "finished once";
}

}  // namespace
}  // namespace pkb::test
