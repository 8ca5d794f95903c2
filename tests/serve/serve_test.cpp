// pkb serve over real HTTP on loopback: a batch submitted, streamed and finished; kill -9 mid-batch and a restart
// (every item finishes once); two clients' isolation; bad input; auth and limits; cancel; idempotent
// resubmission; /metrics as Prometheus text; problems and prompts. Evaluations are problem 1 at M=64, N=48,
// W = 2 on CPU ranks with the quick timing preset, sharing the CLI tests' cache.
#include <gtest/gtest.h>

#include "serve_support.h"

namespace pkb::test {
namespace {

class Serve : public testing::Test {
 protected:
  void SetUp() override {
    alice_token_ = add_client(tmp_.path(), "alice");
    bob_token_ = add_client(tmp_.path(), "bob");
  }
  void start(std::vector<std::string> flags = {"--slots", "2"}) {
    server_.start(flags);
    alice_ = std::make_unique<Client>(server_.port(), alice_token_);
    bob_ = std::make_unique<Client>(server_.port(), bob_token_);
  }
  Reply submit(Client& c, const json& body) { return c.post("/v1/evaluations", body.dump()); }
  std::string submit_one(Client& c, const json& item) {
    Reply r = submit(c, item);
    EXPECT_EQ(r.status, 202) << r.text;
    return r.body.value("id", "");
  }

  TempDir tmp_;
  ServeProcess server_{tmp_.path()};
  std::string alice_token_, bob_token_;
  std::unique_ptr<Client> alice_, bob_;
};

TEST_F(Serve, BatchIsStreamedToTheEndWithRecordsAndRewards) {
  start();
  json batch = {{"items",
                 {fixture_item("correct"), fixture_item("wrong_value"), fixture_item("compile_error"),
                  json{{"problem", 999}, {"source", "x"}}}}};
  Reply r = submit(*alice_, batch);
  ASSERT_EQ(r.status, 202) << r.text;
  const auto& items = r.body["items"];
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[3]["error"]["field"], "items[3].problem");  // one bad item fails alone
  auto events = alice_->events("/v1/events?batch=" + r.body["batch"].get<std::string>());
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().first, "end");
  std::map<std::string, std::vector<std::string>> states;  // id -> the states streamed, in order
  for (const auto& [event, data] : events)
    if (event == "state") states[data["id"]].push_back(data["state"]);
  ASSERT_EQ(states.size(), 3u);
  std::map<std::string, double> reward;
  for (int i = 0; i < 3; ++i) {
    const std::string id = items[i]["id"];
    EXPECT_EQ(states[id].back(), "done") << id;
    json row = alice_->get("/v1/evaluations/" + id).body;
    EXPECT_EQ(row["record"]["schema"], "pkb.result/1");
    EXPECT_EQ(row["attempts"], 1);
    reward[row["status"]] = row["reward"]["value"].get<double>();
  }
  EXPECT_EQ(states[items[0]["id"]].front() == "queued" || states[items[0]["id"]].front() == "compiling", true);
  ASSERT_EQ(reward.size(), 3u) << "statuses: correct, incorrect, compile_error";
  EXPECT_GT(reward["correct"], reward["incorrect"]);
  EXPECT_GT(reward["incorrect"], reward["compile_error"]);
  Reply binary = alice_->get("/v1/evaluations/" + items[0]["id"].get<std::string>() + "?shaping=binary-v1");
  EXPECT_EQ(binary.body["reward"]["value"], 1.0);
  EXPECT_EQ(alice_->get("/v1/evaluations/" + items[0]["id"].get<std::string>() + "?shaping=nope").status, 400);
}

TEST_F(Serve, KillNineMidBatchThenRestartFinishesEveryItemOnce) {
  start({"--slots", "1"});
  json batch = {{"items", {fixture_item("compile_error"), fixture_item("correct")}}};
  Reply r = submit(*alice_, batch);
  ASSERT_EQ(r.status, 202) << r.text;
  std::vector<std::string> ids;
  for (const auto& it : r.body["items"]) ids.push_back(it["id"]);
  json first = wait_for(*alice_, ids[0], finished);
  ASSERT_EQ(first["state"], "done");
  json second = wait_for(*alice_, ids[1], [](const json& row) { return row["state"] == "running"; });
  ASSERT_EQ(second["state"], "running") << second.dump();
  const std::string work = (tmp_.path() / "work").string();
  EXPECT_GT(processes_mentioning(work), 0) << "the running evaluation's pkb eval and ranks";
  server_.kill9();
  // The evaluation's children die with the server.
  for (int i = 0; i < 100 && processes_mentioning(work) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(processes_mentioning(work), 0) << "a pkb eval child or rank outlived the server";
  start({"--slots", "1"});
  for (const auto& id : ids) EXPECT_EQ(wait_for(*alice_, id, finished)["state"], "done") << id;
  json after_first = alice_->get("/v1/evaluations/" + ids[0]).body;
  EXPECT_EQ(after_first["attempts"], 1) << "a finished evaluation never runs again";
  EXPECT_EQ(after_first["finished"], first["finished"]);
  EXPECT_EQ(after_first["record"]["time"], first["record"]["time"]);
  json after_second = alice_->get("/v1/evaluations/" + ids[1]).body;
  EXPECT_EQ(after_second["attempts"], 2) << "the one in flight ran again";
  EXPECT_EQ(after_second["status"], "correct");
}

TEST_F(Serve, ClientsSeeAndCancelOnlyTheirOwn) {
  start();
  const std::string id = submit_one(*alice_, fixture_item("compile_error"));
  EXPECT_EQ(bob_->get("/v1/evaluations/" + id).status, 404);
  EXPECT_EQ(bob_->del("/v1/evaluations/" + id).status, 404);
  Reply listed = bob_->get("/v1/evaluations?ids=" + id);
  EXPECT_EQ(listed.body["items"].size(), 0u);
  EXPECT_EQ(listed.body["not_found"][0], id);
  EXPECT_EQ(alice_->get("/v1/evaluations/" + id).status, 200);
  EXPECT_EQ(alice_->get("/v1/evaluations?ids=" + id).body["items"].size(), 1u);
}

TEST_F(Serve, AuthenticationFailuresAre401) {
  start();
  Client nobody(server_.port(), ""), stranger(server_.port(), "pkb_0123");
  for (Client* c : {&nobody, &stranger}) {
    Reply r = c->post("/v1/evaluations", fixture_item("correct").dump());
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(r.body["error"]["field"], "Authorization");
    EXPECT_EQ(c->get("/v1/evaluations/ev_0").status, 401);
  }
  ASSERT_EQ(run_cli(PKB_BINARY, {"serve", "token", "revoke", "bob", "--data", tmp_.path().string()}).exit_code, 0);
  EXPECT_EQ(bob_->get("/v1/evaluations?ids=x").status, 401) << "a revoked token";
  EXPECT_EQ(alice_->get("/v1/evaluations?ids=x").status, 200);
  EXPECT_EQ(nobody.get("/v1/health").status, 200);  // health, metrics and problems are public
}

TEST_F(Serve, BadInputNamesTheField) {
  start({"--max-source-bytes", "20000", "--max-body-bytes", "200000"});
  auto expect = [&](const std::string& body, int status, const std::string& field) {
    Reply r = alice_->post("/v1/evaluations", body);
    EXPECT_EQ(r.status, status) << body.substr(0, 200) << " -> " << r.text;
    EXPECT_EQ(r.body["error"]["field"], field) << r.text;
  };
  auto with = [](const std::string& key, const json& value) {
    json j = fixture_item("correct");
    j[key] = value;
    return j.dump();
  };
  expect("{\"problem\": 1, \"source\": ", 400, "body");
  expect("[1, 2]", 400, "body");
  expect(with("problem", "no_such_problem"), 422, "problem");
  expect(with("params", {{"Q", 1}}), 422, "params.Q");  // problem 1 has M and N only
  expect(with("params", {{"M", -4}}), 422, "params");
  json w7 = {{"problem", 14}, {"world", 7}, {"source", "x"}};
  expect(w7.dump(), 422, "world");
  expect(with("dtype", "fp8"), 422, "dtype");
  expect(with("timing", "fastest"), 422, "timing");
  expect(with("world", "two"), 422, "world");
  expect(with("colour", "blue"), 422, "colour");
  json no_source = fixture_item("correct");
  no_source.erase("source");
  expect(no_source.dump(), 422, "source");
  std::string bad_utf8 = fixture_item("correct").dump();
  bad_utf8.replace(bad_utf8.find("pkb_run"), 3, "\xff\xfe\xfd");
  expect(bad_utf8, 400, "source");
  expect(with("source", std::string(30000, 'x')), 413, "source");
  Reply big = alice_->post("/v1/evaluations", with("source", std::string(300000, 'x')));
  EXPECT_EQ(big.status, 413);
  // In a batch, the bad item fails and the good one is accepted.
  json w7_item = fixture_item("compile_error");
  w7_item["problem"] = 14, w7_item["world"] = 7, w7_item.erase("params");
  Reply mixed = alice_->post("/v1/evaluations", json{{"items", {fixture_item("compile_error"), w7_item}}}.dump());
  EXPECT_EQ(mixed.status, 202) << mixed.text;
  EXPECT_TRUE(mixed.body["items"][0].contains("id"));
  EXPECT_EQ(mixed.body["items"][1]["error"]["field"], "items[1].world");
  EXPECT_EQ(mixed.body["items"][1]["error"]["status"], 422);
  Reply none = alice_->post("/v1/evaluations", json{{"items", {w7_item}}}.dump());
  EXPECT_EQ(none.status, 422);
}

TEST_F(Serve, RateAndQueueLimitsAnswer429WithRetryAfter) {
  start({"--slots", "1", "--rate", "1", "--burst", "4", "--max-queued", "2"});
  Reply over =
      submit(*alice_,
             {{"items", {fixture_item("spin_forever"), fixture_item("compile_error"), fixture_item("compile_error")}}});
  EXPECT_EQ(over.status, 429) << over.text;
  EXPECT_EQ(over.body["error"]["field"], "items");
  EXPECT_FALSE(over.retry_after.empty());
  int limited = 0;
  for (int i = 0; i < 6; ++i) {
    Reply r = alice_->get("/v1/evaluations?ids=x");
    if (r.status == 429) {
      ++limited;
      EXPECT_GE(std::stoi(r.retry_after), 1);
    }
  }
  EXPECT_GE(limited, 2) << "4 at once, then 1 a second";
  EXPECT_EQ(bob_->get("/v1/evaluations?ids=x").status, 200) << "limits are per client";
}

TEST_F(Serve, CancelStopsQueuedAndRunningEvaluations) {
  start({"--slots", "1"});
  const std::string spinning = submit_one(*alice_, fixture_item("spin_forever"));
  const std::string queued = submit_one(*alice_, fixture_item("compile_error"));
  ASSERT_EQ(wait_for(*alice_, spinning, [](const json& r) { return r["state"] == "running"; })["state"], "running");
  const std::string work = (tmp_.path() / "work").string();
  EXPECT_GT(processes_mentioning(work), 0) << "the spinning evaluation's pkb eval and ranks";
  EXPECT_EQ(alice_->del("/v1/evaluations/" + queued).status, 200);
  EXPECT_EQ(alice_->del("/v1/evaluations/" + spinning).status, 200);
  for (int i = 0; i < 100 && processes_mentioning(work) > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(processes_mentioning(work), 0) << "the cancelled evaluation's processes were killed";
  json q = alice_->get("/v1/evaluations/" + queued).body, s = alice_->get("/v1/evaluations/" + spinning).body;
  EXPECT_EQ(q["state"], "cancelled");
  EXPECT_EQ(q["attempts"], 0) << "a cancelled queued evaluation never runs";
  EXPECT_EQ(s["state"], "cancelled");
  EXPECT_FALSE(s.contains("record"));
  EXPECT_EQ(alice_->del("/v1/evaluations/" + spinning).status, 409);
}

TEST_F(Serve, ResubmissionWithTheSameKeyIsTheSameEvaluation) {
  start();
  Reply a = submit(*alice_, fixture_item("compile_error", "k1"));
  Reply b = submit(*alice_, fixture_item("compile_error", "k1"));
  ASSERT_EQ(a.status, 202);
  ASSERT_EQ(b.status, 202);
  EXPECT_EQ(a.body["id"], b.body["id"]);
  EXPECT_FALSE(a.body["duplicate"].get<bool>());
  EXPECT_TRUE(b.body["duplicate"].get<bool>());
  Reply other = submit(*bob_, fixture_item("compile_error", "k1"));  // keys are per client
  EXPECT_NE(other.body["id"], a.body["id"]);
  EXPECT_FALSE(other.body["duplicate"].get<bool>());
  // The duplicate's batch holds nothing: no second evaluation exists.
  EXPECT_EQ(alice_->get("/v1/evaluations?batch=" + b.body["batch"].get<std::string>()).body["items"].size(), 0u);
  EXPECT_EQ(alice_->get("/v1/evaluations?batch=" + a.body["batch"].get<std::string>()).body["items"].size(), 1u);
}

TEST_F(Serve, MetricsAreParsablePrometheusText) {
  start();
  submit_one(*alice_, fixture_item("compile_error"));
  Reply m = alice_->get("/metrics");
  ASSERT_EQ(m.status, 200);
  const std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? [-+]?([0-9.]+([eE][-+]?[0-9]+)?|NaN|Inf)$)");
  const std::regex type(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$)");
  std::set<std::string> typed, seen;
  std::stringstream lines(m.text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch g;
    if (std::regex_match(line, g, type))
      typed.insert(g[1]);
    else if (line.rfind("# HELP ", 0) == 0)
      continue;
    else {
      ASSERT_TRUE(std::regex_match(line, g, sample)) << "not a Prometheus sample: " << line;
      std::string name = std::regex_replace(std::string(g[1]), std::regex("_(sum|count)$"), "");
      EXPECT_TRUE(typed.count(name) || typed.count(g[1])) << "no TYPE before " << line;
      seen.insert(g[1]);
    }
  }
  for (const char* name : {"pkb_serve_queue_depth", "pkb_serve_busy_fraction", "pkb_serve_queue_seconds",
                           "pkb_serve_evaluation_seconds", "pkb_serve_evaluations_finished_total"})
    EXPECT_TRUE(seen.count(name)) << name;
}

TEST_F(Serve, ProblemsAndTheExactPrompt) {
  start();
  Reply p = alice_->get("/v1/problems");
  ASSERT_EQ(p.status, 200);
  EXPECT_EQ(p.body["problems"].size(), load_catalog(repo_root() / "problems").problems.size());
  Reply prompt = alice_->get("/v1/problems/1/prompt?world=2");
  ASSERT_EQ(prompt.status, 200) << prompt.text;
  CliRun cli = run_cli(PKB_BINARY, {"prompt", "1", "-w", "2"});
  EXPECT_EQ(cli.out, "===== system =====\n" + prompt.body["system"].get<std::string>() + "\n===== user =====\n" +
                         prompt.body["user"].get<std::string>() + "\n");
  EXPECT_EQ(alice_->get("/v1/problems/14/prompt?world=7").body["error"]["field"], "world");
  EXPECT_EQ(alice_->get("/v1/problems/nope/prompt").status, 404);
}

// scripts/pkb_client.py's reward_fn: the code extracted from each completion, the batch submitted and awaited on
// the event stream; a completion without code gets the no-code reward without a request.
TEST_F(Serve, PythonClientRewardFunction) {
  start();
  const auto script = tmp_.path() / "reward.py", source = tmp_.path() / "correct.cpp";
  write_file(source, cpu_fixture("correct"));
  write_file(script, R"(import json, sys
sys.path.insert(0, sys.argv[1])
from pkb_client import Client, reward_fn
client = Client(sys.argv[2], sys.argv[3])
completions = ["Here it is:\n```cpp\n" + open(sys.argv[4]).read() + "```\n", "I cannot do that."]
print(json.dumps(reward_fn(["p", "p"], completions, problem=1, world=2, params={"M": 64, "N": 48},
                           timing="quick", client=client)))
)");
  CliRun r = run_cli("python3", {script.string(), (repo_root() / "scripts").string(),
                                 "http://127.0.0.1:" + std::to_string(server_.port()), alice_token_, source.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json rewards = json::parse(r.out);
  ASSERT_EQ(rewards.size(), 2u) << r.out;
  EXPECT_GE(rewards[0].get<double>(), 0.5) << "correct: 1 + 0.25 * clipped log2 speedup";
  EXPECT_EQ(rewards[1].get<double>(), -1.0);
}

}  // namespace
}  // namespace pkb::test
