// The event-stream decoder on its own: the format's rules and chunk boundaries anywhere.
#include "models/sse.h"

#include <gtest/gtest.h>

#include <vector>

namespace pkb::models {
namespace {

std::vector<SseEvent> decode(const std::vector<std::string>& chunks, SseParser* keep = nullptr) {
  SseParser local;
  SseParser& p = keep ? *keep : local;
  std::vector<SseEvent> out;
  for (const auto& c : chunks) p.feed(c, [&](const SseEvent& e) { out.push_back(e); });
  return out;
}

// Every way of cutting `stream` into two chunks, and byte by byte, decodes like the whole.
void expect_split_invariant(const std::string& stream) {
  std::vector<SseEvent> whole = decode({stream});
  auto same = [&](const std::vector<SseEvent>& got, const std::string& how) {
    ASSERT_EQ(got.size(), whole.size()) << how;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].event, whole[i].event) << how << " event " << i;
      EXPECT_EQ(got[i].data, whole[i].data) << how << " event " << i;
    }
  };
  for (size_t cut = 0; cut <= stream.size(); ++cut)
    same(decode({stream.substr(0, cut), stream.substr(cut)}), "cut at " + std::to_string(cut));
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  same(decode(bytes), "byte by byte");
}

TEST(Sse, FieldsDataLinesAndComments) {
  auto events =
      decode({": keep-alive\n\nevent: message_start\ndata: {\"a\":1}\n\n"
              "data: line one\ndata: line two\n\n"
              "data:no space\n\n"
              "data\n\n"
              "event: ping\nid: 7\nretry: 10\nunknown: x\ndata:  two spaces\n\n"});
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].event, "");
  EXPECT_EQ(events[1].data, "line one\nline two");
  EXPECT_EQ(events[2].data, "no space");
  EXPECT_EQ(events[3].data, "");  // a field without a colon has an empty value, and the event still counts
  EXPECT_EQ(events[4].event, "ping");
  EXPECT_EQ(events[4].id, "7");
  EXPECT_EQ(events[4].data, " two spaces");  // only one space is dropped
}

TEST(Sse, EventWithoutDataIsNotDispatchedAndDoesNotLeak) {
  auto events = decode({"event: lonely\n\ndata: x\n\n"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "") << "the event name of an event without data must not carry over";
  EXPECT_EQ(events[0].data, "x");
}

TEST(Sse, CrlfAndLoneCrEndLines) {
  auto events = decode({"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n"});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event, "a");
  EXPECT_EQ(events[0].data, "1");
  EXPECT_EQ(events[1].event, "b");
  EXPECT_EQ(events[1].data, "2");
  EXPECT_EQ(events[2].data, "3");
}

TEST(Sse, ChunkBoundariesAnywhere) {
  expect_split_invariant(
      "\xEF\xBB\xBF"
      "event: x\r\ndata: {\"t\":\"h\\u00e9\"}\r\n\r\n: c\r\rdata: a\rdata: b\r\r"
      "data: [DONE]\n\n");
}

TEST(Sse, LeadingBomIsSkipped) {
  auto events = decode({"\xEF", "\xBB",
                        "\xBF"
                        "data: x\n\n"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x");
}

TEST(Sse, AnUnfinishedEventIsReportedNotDispatched) {
  SseParser p;
  auto events = decode({"data: whole\n\n", "data: {\"cut\":"}, &p);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_EQ(p.events(), 1u);
  EXPECT_TRUE(p.mid_event());
  SseParser q;
  decode({"data: a\n"}, &q);  // a complete line but no blank line yet
  EXPECT_TRUE(q.mid_event());
  SseParser r;
  decode({"data: a\n\n: trailing comment\n"}, &r);
  EXPECT_FALSE(r.mid_event());
}

}  // namespace
}  // namespace pkb::models
