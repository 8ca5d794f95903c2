// The queue's rules without a server (serve/store.h): round robin between clients then priority, claims and
// finishes as the crash-safety argument needs them (docs/serve.md, "Invariant"), workers' leases, and claims
// limited to the GPUs free (a smaller W taken past a larger one).
#include "serve/store.h"

#include <gtest/gtest.h>

#include <thread>

#include "../unit/test_util.h"

namespace pkb::serve {
namespace {

Item item(int priority, const std::string& key = "") {
  Item it;
  it.problem = "001_allreduce", it.source = "x", it.priority = priority, it.idempotency_key = key;
  return it;
}

TEST(Store, ClaimsRoundRobinBetweenClientsThenByPriority) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto a = s.insert("alice", "b1", {item(0), item(5), item(0)});
  auto b = s.insert("bob", "b2", {item(0), item(0)});
  std::vector<std::string> order;
  while (auto c = s.claim_next()) order.push_back(c->id);
  // alice's priority-5 item first, then alternating; within a client, submission order.
  EXPECT_EQ(order, (std::vector<std::string>{a[1].id, b[0].id, a[0].id, b[1].id, a[2].id}));
}

TEST(Store, AFinishLandsOnlyOnTheCurrentClaim) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto ids = s.insert("alice", "b", {item(0), item(0)});
  Claim first = *s.claim_next(), second = *s.claim_next();
  EXPECT_EQ(s.cancel("bob", first.id), CancelOutcome::not_found) << "another client's";
  EXPECT_EQ(s.cancel("alice", first.id), CancelOutcome::cancelled);
  EXPECT_FALSE(s.finish(first, EvalState::done, "correct", "{}", "", 1)) << "cancelled meanwhile";
  EXPECT_EQ(s.requeue_in_flight(), 1) << "a restart: the one still in flight";
  EXPECT_FALSE(s.finish(second, EvalState::done, "correct", "{}", "", 1)) << "a stale attempt";
  Claim again = *s.claim_next();
  EXPECT_EQ(again.id, second.id);
  EXPECT_EQ(again.attempt, 2);
  EXPECT_TRUE(s.finish(again, EvalState::done, "correct", "{}", "", 1));
  EXPECT_FALSE(s.claim_next()) << "finished and cancelled evaluations are never claimed";
  EXPECT_EQ(s.requeue_in_flight(), 0);
  EXPECT_EQ(s.cancel("alice", second.id), CancelOutcome::already_finished);
  EXPECT_EQ(s.get("alice", first.id)->state, EvalState::cancelled);
}

TEST(Store, AnIdempotencyKeyNamesOneEvaluationPerClient) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto first = s.insert("alice", "b1", {item(0, "k")});
  auto again = s.insert("alice", "b2", {item(0, "k"), item(0)});
  EXPECT_EQ(again[0].id, first[0].id);
  EXPECT_TRUE(again[0].duplicate);
  EXPECT_FALSE(again[1].duplicate);
  EXPECT_NE(s.insert("bob", "b3", {item(0, "k")})[0].id, first[0].id);
  EXPECT_EQ(s.queued_count("alice"), 2);
}

Item item_of_world(int world) {
  Item it = item(0);
  it.world = world;
  return it;
}

TEST(Store, AClaimTakesOnlyWhatFitsItsGpus) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto ids = s.insert("alice", "b", {item_of_world(4), item_of_world(2), item_of_world(1)});
  ClaimOptions two;
  two.max_world = 2;
  EXPECT_EQ(s.claim_next(two)->id, ids[1].id) << "W = 4 does not fit 2 GPUs: W = 2 is taken past it";
  two.max_world = 3;
  EXPECT_EQ(s.claim_next(two)->id, ids[2].id);
  EXPECT_FALSE(s.claim_next(two)) << "only W = 4 is left";
  EXPECT_EQ(s.claim_next()->id, ids[0].id);
}

ClaimOptions by_worker(const std::string& name, double lease_s) {
  ClaimOptions o;
  o.worker = name, o.lease_s = lease_s;
  return o;
}

TEST(Store, AWorkersClaimLapsesWithoutHeartbeatsAndOnlyTheCurrentOneFinishes) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto ids = s.insert("alice", "b", {item(0)});
  Claim a = *s.claim_next(by_worker("w/a", 0.3));
  EXPECT_EQ(a.worker, "w/a");
  EXPECT_EQ(s.requeue_in_flight(), 0) << "a restart leaves workers' claims to their leases";
  EXPECT_EQ(s.requeue_expired(), 0) << "not lapsed yet";
  EXPECT_TRUE(s.renew(a, 0.3, true));
  EXPECT_EQ(s.state_of(a.id), EvalState::running);
  Claim impostor = a;
  impostor.worker = "w/b";
  EXPECT_FALSE(s.renew(impostor, 10, false)) << "another worker's claim";
  EXPECT_FALSE(s.finish(impostor, EvalState::done, "correct", "{}", "", 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(s.requeue_expired(), 1);
  EXPECT_EQ(s.state_of(a.id), EvalState::queued);
  EXPECT_FALSE(s.renew(a, 10, true)) << "lapsed: the heartbeat is refused";
  Claim b = *s.claim_next(by_worker("w/b", 10));
  EXPECT_EQ(b.attempt, 2);
  EXPECT_FALSE(s.finish(a, EvalState::done, "correct", "{}", "", 1)) << "the lapsed claim's record";
  EXPECT_TRUE(s.finish(b, EvalState::done, "incorrect", "{}", "", 1));
  EXPECT_FALSE(s.finish(b, EvalState::done, "incorrect", "{}", "", 1)) << "exactly once";
  auto row = s.get("alice", ids[0].id);
  EXPECT_EQ(row->status, "incorrect");
  EXPECT_EQ(row->worker, "w/b");
  EXPECT_EQ(row->attempts, 2);
}

}  // namespace
}  // namespace pkb::serve
