// The queue's rules without a server (serve/store.h): round robin between clients then priority, claims and
// finishes as the crash-safety argument needs them (docs/serve.md, "Invariant").
#include "serve/store.h"

#include <gtest/gtest.h>

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
  std::string cursor;
  std::vector<std::string> order;
  while (auto c = s.claim_next(&cursor)) order.push_back(c->id);
  // alice's priority-5 item first, then alternating; within a client, submission order.
  EXPECT_EQ(order, (std::vector<std::string>{a[1].id, b[0].id, a[0].id, b[1].id, a[2].id}));
}

TEST(Store, AFinishLandsOnlyOnTheCurrentClaim) {
  test::TempDir tmp;
  Store s(tmp.path() / "serve.db");
  auto ids = s.insert("alice", "b", {item(0), item(0)});
  std::string cursor;
  Claim first = *s.claim_next(&cursor), second = *s.claim_next(&cursor);
  EXPECT_EQ(s.cancel("bob", first.id), CancelOutcome::not_found) << "another client's";
  EXPECT_EQ(s.cancel("alice", first.id), CancelOutcome::cancelled);
  EXPECT_FALSE(s.finish(first, EvalState::done, "correct", "{}", "", 1)) << "cancelled meanwhile";
  EXPECT_EQ(s.requeue_in_flight(), 1) << "a restart: the one still in flight";
  EXPECT_FALSE(s.finish(second, EvalState::done, "correct", "{}", "", 1)) << "a stale attempt";
  Claim again = *s.claim_next(&cursor);
  EXPECT_EQ(again.id, second.id);
  EXPECT_EQ(again.attempt, 2);
  EXPECT_TRUE(s.finish(again, EvalState::done, "correct", "{}", "", 1));
  EXPECT_FALSE(s.claim_next(&cursor)) << "finished and cancelled evaluations are never claimed";
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

}  // namespace
}  // namespace pkb::serve
