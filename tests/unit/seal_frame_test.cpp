// seal/frame: the sealed channel's parser over bytes. Every frame kind, frames in any pieces, and every way a stream
// written by candidate code can be wrong; then random mutations of valid streams, fed in random pieces, against a
// plain one-pass split of the whole buffer (deterministic seeds: a failure names the seed that reproduces it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "seal/frame.h"

#if defined(__has_feature)
#define PKB_HAS_FEATURE(f) __has_feature(f)
#else
#define PKB_HAS_FEATURE(f) 0
#endif
#if defined(__SANITIZE_THREAD__) || PKB_HAS_FEATURE(thread_sanitizer)
#define PKB_TSAN 1
#endif
#if PKB_TSAN || defined(__SANITIZE_ADDRESS__) || PKB_HAS_FEATURE(address_sanitizer) || PKB_HAS_FEATURE(memory_sanitizer)
#define PKB_SANITIZED 1
#endif

// The largest single allocation made on this thread while tracking is on: what a parser fed a frame claiming
// 2^64 - 1 bytes asks for. Replaces the global operator new for the whole test binary (a counter, nothing else), in
// plain builds only: a sanitizer runtime defines operator new itself (clang's, linked in whole, clashes with a second
// definition), and there an allocation of 2^64 - 1 bytes fails the test anyway. Sanitized, largest stays 0.
namespace {
thread_local bool g_tracking = false;
thread_local size_t g_largest = 0;

class Tracking {
 public:
  explicit Tracking(bool on) : was_(g_tracking) { g_tracking = on; }
  ~Tracking() { g_tracking = was_; }

 private:
  bool was_;
};
}  // namespace

#if !PKB_SANITIZED
// Every form of new and delete but the aligned ones (libstdc++'s use aligned_alloc and free).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_tracking) g_largest = std::max(g_largest, n);
  return std::malloc(n ? n : 1);
}
void* operator new(size_t n) {
  if (void* p = operator new(n, std::nothrow)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return operator new(n, std::nothrow); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace {

using pkb::FrameError;
using pkb::FrameHeader;
using pkb::FrameKind;
using pkb::FrameParser;
using pkb::FrameSink;
using pkb::kMaxFrameHeader;

struct Frame {
  FrameHeader h;
  std::string payload;
  bool operator==(const Frame& o) const {
    return h.seq == o.h.seq && h.kind == o.h.kind && h.label == o.h.label && h.bytes == o.h.bytes &&
           payload == o.payload;
  }
};

std::ostream& operator<<(std::ostream& os, const Frame& f) {
  return os << pkb::frame_header(f.h) << "+ " << f.payload.size() << " bytes";
}

std::string wire(const std::vector<Frame>& frames) {
  std::string s;
  for (const Frame& f : frames) s += pkb::frame_header(f.h) + f.payload;
  return s;
}

Frame frame(uint64_t seq, FrameKind kind, const std::string& label, const std::string& payload) {
  return {{seq, kind, label, payload.size()}, payload};
}

// Keeps every frame completed, and fails the test if the parser breaks its sink's contract (begin, payload pieces
// adding up to the header's length, complete). Its own allocations are not the parser's: not tracked.
class Collect : public FrameSink {
 public:
  std::vector<Frame> frames;
  std::string fail_begin, fail_complete;  // labels whose begin or complete the sink refuses

  std::string begin(const FrameHeader& h) override {
    Tracking off(false);
    EXPECT_FALSE(open_) << "begin inside a frame";
    open_ = true, current_ = {h, ""};
    return h.label == fail_begin ? "cannot store " + h.label : "";
  }
  void payload(const FrameHeader& h, const char* data, size_t len) override {
    Tracking off(false);
    EXPECT_TRUE(open_ && h.label == current_.h.label) << "payload outside its frame";
    EXPECT_GT(len, 0u);
    EXPECT_LE(current_.payload.size() + len, h.bytes) << "payload past the frame's length";
    current_.payload.append(data, len);
  }
  std::string complete(const FrameHeader& h) override {
    Tracking off(false);
    EXPECT_TRUE(open_ && current_.payload.size() == h.bytes) << "complete before the payload's end";
    open_ = false;
    frames.push_back(current_);
    return h.label == fail_complete ? "cannot close " + h.label : "";
  }

 private:
  bool open_ = false;
  Frame current_;
};

struct Parsed {
  std::vector<Frame> frames;
  FrameError error = FrameError::none;
  std::string message;
  uint64_t error_at = 0, bytes = 0;
  bool ended = false;
  size_t largest_allocation = 0;  // the parser's largest single allocation (not compared)
};

bool operator==(const Parsed& a, const Parsed& b) {
  return a.frames == b.frames && a.error == b.error && a.message == b.message && a.error_at == b.error_at &&
         a.bytes == b.bytes && a.ended == b.ended;
}

std::ostream& operator<<(std::ostream& os, const Parsed& p) {
  return os << p.frames.size() << " frames, error " << pkb::enum_name(p.error) << " '" << p.message << "' at "
            << p.error_at << ", " << p.bytes << " bytes, ended " << p.ended;
}

// Feeds s in pieces ending at the given offsets (then the rest), and finishes.
Parsed parse(const std::string& s, const std::vector<size_t>& cuts = {}, uint64_t max_bytes = UINT64_MAX,
             Collect sink = {}) {
  FrameParser p(sink, max_bytes);
  g_largest = 0;
  {
    Tracking on(true);
    size_t at = 0;
    for (size_t cut : cuts) {
      p.feed(s.data() + at, cut - at);
      at = cut;
    }
    p.feed(s.data() + at, s.size() - at);
    p.finish();
  }
  return {sink.frames, p.error(), p.message(), p.error_at(), p.bytes(), p.ended(), g_largest};
}

// A stream with every kind, payloads with newlines, NULs, bytes that are not UTF-8 and a header's text.
std::vector<Frame> every_kind() {
  return {frame(0, FrameKind::outputs, "trial0", std::string("\xff\xfe\0\n\x80z", 6)),
          frame(1, FrameKind::record, "record", "{\"status\":\"ok\"}\n"),
          frame(2, FrameKind::outputs, "copy3", "PKBSEAL1 3 end end 0\n"),
          frame(3, FrameKind::record, "record", ""),
          frame(4, FrameKind::outputs, "copy-4_b.c", ""),
          frame(5, FrameKind::end, "end", "")};
}

TEST(SealFrame, WireSpellingsAreTheNameTable) {
  EXPECT_EQ(pkb::frame_header({7, FrameKind::outputs, "copy12", 5}), "PKBSEAL1 7 outputs copy12 5\n");
  EXPECT_STREQ(pkb::enum_name(FrameKind::record), "record");
  EXPECT_STREQ(pkb::enum_name(FrameKind::end), "end");
  EXPECT_EQ(pkb::enum_from_name<FrameKind>("outputs"), FrameKind::outputs);
  EXPECT_EQ(pkb::enum_from_name<FrameKind>("Outputs"), std::nullopt);
}

TEST(SealFrame, EveryKindArrivesWhole) {
  std::vector<Frame> frames = every_kind();
  std::string s = wire(frames);
  Parsed got = parse(s);
  EXPECT_EQ(got.error, FrameError::none) << got;
  EXPECT_EQ(got.frames, frames);
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.bytes, s.size());
  // An end frame is not required until the stream ends: without one the stream is whole but not ended.
  frames.pop_back();
  Parsed open = parse(wire(frames));
  EXPECT_EQ(open.error, FrameError::none);
  EXPECT_FALSE(open.ended);
}

TEST(SealFrame, FramesSplitAtEveryByteBoundaryArriveTheSame) {
  std::string s = wire(every_kind());
  Parsed whole = parse(s);
  std::vector<size_t> each;
  for (size_t i = 1; i < s.size(); ++i) each.push_back(i);
  EXPECT_EQ(parse(s, each), whole) << "one byte at a time";
  for (size_t i = 0; i <= s.size(); ++i)
    for (size_t j = i; j <= s.size(); j += 7) ASSERT_EQ(parse(s, {i, j}), whole) << "cut at " << i << " and " << j;
}

TEST(SealFrame, EmptyFeedsChangeNothing) {
  std::string s = wire(every_kind());
  Collect sink;
  FrameParser p(sink, UINT64_MAX);
  for (char c : s) {
    EXPECT_TRUE(p.feed(nullptr, 0));
    EXPECT_TRUE(p.feed(&c, 1));
  }
  p.finish();
  EXPECT_TRUE(p.ok());
  EXPECT_EQ(sink.frames, every_kind());
}

TEST(SealFrame, InterleavedKindsAndStreamsStayApart) {
  std::vector<Frame> a, b;
  for (uint64_t i = 0; i < 40; ++i) {
    a.push_back(i % 2 ? frame(i, FrameKind::record, "record", std::string(i, 'r'))
                      : frame(i, FrameKind::outputs, "copy" + std::to_string(i), std::string(3 * i, '\n')));
    b.push_back(frame(i, FrameKind::outputs, "trial" + std::to_string(i), std::string(i, char(i))));
  }
  std::string sa = wire(a), sb = wire(b);
  EXPECT_EQ(parse(sa).frames, a);  // concatenated, in one feed
  // Two ranks' parsers fed alternately, in pieces of different sizes.
  Collect ca, cb;
  FrameParser pa(ca, UINT64_MAX), pb(cb, UINT64_MAX);
  for (size_t i = 0, j = 0; i < sa.size() || j < sb.size(); i += 13, j += 29) {
    if (i < sa.size()) pa.feed(sa.data() + i, std::min<size_t>(13, sa.size() - i));
    if (j < sb.size()) pb.feed(sb.data() + j, std::min<size_t>(29, sb.size() - j));
  }
  pa.finish(), pb.finish();
  EXPECT_TRUE(pa.ok() && pb.ok());
  EXPECT_EQ(ca.frames, a);
  EXPECT_EQ(cb.frames, b);
}

TEST(SealFrame, PayloadBytesPassThroughAsTheyAre) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::vector<Frame> frames = {frame(0, FrameKind::outputs, "trial0", all), frame(1, FrameKind::record, "record", all),
                               frame(2, FrameKind::record, "record", "\xc3\x28 \xed\xa0\x80 \xf8\x88\x80\x80\x80")};
  Parsed got = parse(wire(frames), {3, 40, 41, 300});
  EXPECT_EQ(got.error, FrameError::none) << got;
  EXPECT_EQ(got.frames, frames);
}

TEST(SealFrame, AStreamCutOffInsideAFrameIsTruncated) {
  std::vector<Frame> frames = every_kind();
  std::string s = wire(frames);
  std::set<size_t> boundaries = {0};
  for (size_t i = 0, at = 0; i < frames.size(); ++i) boundaries.insert(at += wire({frames[i]}).size());
  for (size_t n = 0; n <= s.size(); ++n) {
    Parsed got = parse(s.substr(0, n));
    if (boundaries.count(n)) {
      EXPECT_EQ(got.error, FrameError::none) << "cut at " << n;
      continue;
    }
    EXPECT_EQ(got.error, FrameError::truncated) << "cut at " << n;
    EXPECT_EQ(got.message, "stream cut off inside a frame");
    EXPECT_EQ(got.error_at, n);
  }
}

TEST(SealFrame, MoreBytesThanTheLimitAreRefusedFeedByFeed) {
  std::string s = wire(every_kind());
  EXPECT_EQ(parse(s, {}, s.size()).error, FrameError::none) << "exactly the limit";
  Parsed over = parse(s, {}, s.size() - 1);
  EXPECT_EQ(over.error, FrameError::oversized);
  EXPECT_EQ(over.message, "more than " + std::to_string(s.size() - 1) + " bytes");
  EXPECT_TRUE(over.frames.empty()) << "a feed past the limit is refused whole";
  EXPECT_EQ(over.error_at, 0u);
  // In pieces, the frames of the feeds before the one that crosses the limit are kept.
  size_t first = wire({every_kind()[0]}).size();
  Parsed pieces = parse(s, {first}, s.size() - 1);
  EXPECT_EQ(pieces.error, FrameError::oversized);
  EXPECT_EQ(pieces.frames, std::vector<Frame>{every_kind()[0]});
  EXPECT_EQ(pieces.error_at, first);
}

TEST(SealFrame, AHugeLengthFieldAllocatesNothing) {
  for (const char* length : {"18446744073709551615", "99999999999999999999999", "1000000000000000", "-1"}) {
    std::string s = std::string("PKBSEAL1 0 outputs trial0 ") + length + "\n" + std::string(100000, 'x');
    for (FrameKind kind : {FrameKind::outputs, FrameKind::record}) {
      if (kind == FrameKind::record) s.replace(11, 14, "record record");
      std::vector<size_t> cuts;
      for (size_t at = 4096; at < s.size(); at += 4096) cuts.push_back(at);
      Parsed got = parse(s, cuts);
      EXPECT_EQ(got.error, FrameError::truncated) << length;
      EXPECT_LE(got.largest_allocation, 1024u) << length << ": the parser asked for that many bytes at once";
    }
  }
}

TEST(SealFrame, MalformedHeadersAreRefused) {
  for (const std::string& line : std::vector<std::string>{
           "garbage that is no frame\n", "\n", " \n", "PKBSEAL2 0 record record 2\n", "PKBSEAL10 0 record record 2\n",
           "PKBSEAL1 x record record 2\n", "PKBSEAL1 0 record record\n", "PKBSEAL1 0 record record x\n",
           "PKBSEAL1 0 record\n", "pkbseal1 0 record record 2\n", std::string("PKBSEAL1\0 0 record record 2\n", 28),
           std::string(kMaxFrameHeader - 1, 'a') + "\n"}) {
    Parsed got = parse(line + "{}");
    EXPECT_EQ(got.error, FrameError::malformed_header) << line;
    EXPECT_EQ(got.message, "malformed frame header");
    EXPECT_EQ(got.error_at, line.size()) << "found at the header's newline";
    EXPECT_TRUE(got.frames.empty());
  }
}

TEST(SealFrame, AHeaderWithoutANewlineWithinTheLimitIsTooLong) {
  for (std::string s : {std::string(kMaxFrameHeader, 'a') + "\n", std::string(100000, 'a'),
                        "PKBSEAL1 0 record " + std::string(300, 'r') + " 2\n{}"}) {
    std::vector<size_t> each;
    for (size_t i = 1; i < std::min<size_t>(s.size(), 400); ++i) each.push_back(i);
    for (const Parsed& got : {parse(s), parse(s, each)}) {
      EXPECT_EQ(got.error, FrameError::header_too_long);
      EXPECT_EQ(got.message, "frame header too long");
      EXPECT_EQ(got.error_at, kMaxFrameHeader + 1) << "where the header passed the limit, whatever the pieces";
    }
  }
}

TEST(SealFrame, UnknownKindsAndLabelsAreRefused) {
  for (const std::string& kl :
       std::vector<std::string>{"records record", "END end", "stdout x", "outputs ../../etc", "outputs .", "outputs ..",
                                "outputs a/b", "record \xff\xfe", "outputs " + std::string(65, 'a'),
                                "outputs " + std::string(79, 'a'), "outputs trial0\xc3\xa9"}) {
    Parsed got = parse("PKBSEAL1 0 " + kl + " 0\n");
    EXPECT_EQ(got.error, FrameError::unknown_frame) << kl;
    EXPECT_EQ(got.message, "unknown frame '" + kl + "'");
  }
  // The longest label, and every character a label may have.
  EXPECT_EQ(parse("PKBSEAL1 0 outputs " + std::string(64, 'a') + " 0\n").error, FrameError::none);
  EXPECT_EQ(parse("PKBSEAL1 0 outputs aZ09_-. 0\n").error, FrameError::none);
}

TEST(SealFrame, FramesOutOfSequenceAreRefused) {
  Parsed first = parse("PKBSEAL1 1 record record 2\n{}");
  EXPECT_EQ(first.error, FrameError::out_of_sequence);
  EXPECT_EQ(first.message, "frame 1 where 0 was due");
  // A frame injected between two of the writer's: the writer's next one is refused.
  std::string s = wire({frame(0, FrameKind::record, "record", "{}"), frame(1, FrameKind::record, "record", "{}"),
                        frame(1, FrameKind::record, "record", "{\"real\":1}")});
  Parsed injected = parse(s);
  EXPECT_EQ(injected.error, FrameError::out_of_sequence);
  EXPECT_EQ(injected.message, "frame 1 where 2 was due");
  EXPECT_EQ(injected.frames.size(), 2u);
  EXPECT_EQ(parse(wire({frame(0, FrameKind::end, "end", ""), frame(0, FrameKind::end, "end", "")})).error,
            FrameError::after_end);
  EXPECT_EQ(parse(wire({frame(0, FrameKind::record, "record", ""), frame(0, FrameKind::record, "record", "")})).message,
            "frame 0 where 1 was due");
}

TEST(SealFrame, NothingFollowsTheEndFrame) {
  std::string end = wire({frame(0, FrameKind::end, "end", "")});
  for (const std::string& after : {std::string("x"), std::string("\n"), std::string(1, '\0'),
                                   pkb::frame_header({1, FrameKind::record, "record", 0})}) {
    Parsed got = parse(end + after);
    EXPECT_EQ(got.error, FrameError::after_end);
    EXPECT_EQ(got.message, "data after the end frame");
    EXPECT_EQ(got.error_at, end.size());
    EXPECT_TRUE(got.ended);
  }
  Parsed payload = parse("PKBSEAL1 0 end end 3\nabc");
  EXPECT_EQ(payload.error, FrameError::end_with_payload);
  EXPECT_TRUE(payload.ended);
}

TEST(SealFrame, OutputsComeOncePerLabel) {
  Parsed got = parse(wire({frame(0, FrameKind::outputs, "trial0", "a"), frame(1, FrameKind::record, "record", "r"),
                           frame(2, FrameKind::outputs, "trial0", "b")}));
  EXPECT_EQ(got.error, FrameError::repeated_outputs);
  EXPECT_EQ(got.message, "outputs 'trial0' sent twice");
  EXPECT_EQ(got.frames.size(), 2u);
}

TEST(SealFrame, ASinkThatCannotStoreAFrameBreaksTheStream) {
  std::string s = wire(every_kind());
  Collect refuse_begin;
  refuse_begin.fail_begin = "copy3";
  Parsed begin = parse(s, {}, UINT64_MAX, refuse_begin);
  EXPECT_EQ(begin.error, FrameError::not_stored);
  EXPECT_EQ(begin.message, "cannot store copy3");
  EXPECT_EQ(begin.frames.size(), 2u);
  Collect refuse_complete;
  refuse_complete.fail_complete = "copy3";
  Parsed complete = parse(s, {}, UINT64_MAX, refuse_complete);
  EXPECT_EQ(complete.error, FrameError::not_stored);
  EXPECT_EQ(complete.frames.size(), 3u);
  EXPECT_EQ(complete.error_at, wire({every_kind()[0], every_kind()[1], every_kind()[2]}).size());
}

TEST(SealFrame, AfterAnErrorFeedsAreIgnored) {
  Collect sink;
  FrameParser p(sink, UINT64_MAX);
  std::string bad = "garbage\n", good = wire(every_kind());
  EXPECT_FALSE(p.feed(bad.data(), bad.size()));
  EXPECT_FALSE(p.feed(good.data(), good.size()));
  p.finish();
  EXPECT_EQ(p.error(), FrameError::malformed_header);
  EXPECT_EQ(p.bytes(), bad.size());
  EXPECT_TRUE(sink.frames.empty());
}

// The fuzz test's oracle: the stream split in one pass over the whole buffer, as frame.h describes the format (the
// header's fields by the same sscanf grammar); error_at and bytes where the split stops. Messages are not compared.
struct Fields {
  unsigned long long seq = 0, bytes = 0;
  std::string kind, label;
};

std::optional<Fields> reference_fields(const std::string& line) {
  char magic[16], kind[16], label[80];
  Fields f;
  if (std::sscanf(line.c_str(), "%15s %llu %15s %79s %llu", magic, &f.seq, kind, label, &f.bytes) != 5 ||
      std::string(magic) != "PKBSEAL1")
    return std::nullopt;
  f.kind = kind, f.label = label;
  return f;
}

bool reference_label(const std::string& l) {
  static const std::string allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";
  return !l.empty() && l.size() <= 64 && l != "." && l != ".." && l.find_first_not_of(allowed) == std::string::npos;
}

// The error a well-formed header breaks the stream with, or none; records the outputs label and the end.
FrameError reference_rules(const Fields& f, uint64_t& next_seq, std::set<std::string>& outputs, bool& ended) {
  if (f.seq != next_seq++) return FrameError::out_of_sequence;
  if ((f.kind != "record" && f.kind != "outputs" && f.kind != "end") || !reference_label(f.label))
    return FrameError::unknown_frame;
  if (f.kind == "end") ended = true;
  if (f.kind == "end" && f.bytes != 0) return FrameError::end_with_payload;
  if (f.kind == "outputs" && !outputs.insert(f.label).second) return FrameError::repeated_outputs;
  return FrameError::none;
}

Parsed reference_split(const std::string& s) {
  Parsed r;
  uint64_t next_seq = 0;
  std::set<std::string> outputs;
  auto stop = [&r](FrameError e, size_t at) { r.error = e, r.error_at = at; };
  size_t pos = 0;
  while (pos < s.size() && r.error == FrameError::none) {
    size_t nl = s.find('\n', pos);
    size_t line = (nl == std::string::npos ? s.size() : nl + 1) - pos;
    if (r.ended)
      stop(FrameError::after_end, pos);
    else if (line > kMaxFrameHeader)
      stop(FrameError::header_too_long, pos + kMaxFrameHeader + 1);
    else if (nl == std::string::npos)
      stop(FrameError::truncated, s.size());
    if (r.error != FrameError::none) break;
    std::optional<Fields> f = reference_fields(s.substr(pos, nl - pos));
    pos = nl + 1;
    FrameError e = f ? reference_rules(*f, next_seq, outputs, r.ended) : FrameError::malformed_header;
    if (e != FrameError::none)
      stop(e, pos);
    else if (s.size() - pos < f->bytes)
      stop(FrameError::truncated, s.size());
    if (r.error != FrameError::none) break;
    FrameKind kind = *pkb::enum_from_name<FrameKind>(f->kind);
    r.frames.push_back({{f->seq, kind, f->label, f->bytes}, s.substr(pos, f->bytes)});
    pos += f->bytes;
  }
  r.bytes = r.error == FrameError::none ? s.size() : r.error_at;
  return r;
}

bool same_split(const Parsed& got, const Parsed& ref) {
  return got.frames == ref.frames && got.error == ref.error && got.error_at == ref.error_at && got.bytes == ref.bytes &&
         got.ended == ref.ended;
}

// Any bytes, with newlines, NULs, spaces and P more often than chance would put them.
std::string random_bytes(std::mt19937_64& g, size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = g();
    std::memcpy(&s[i], &word, std::min<size_t>(8, n - i));
  }
  for (size_t k = n / 4; k > 0; --k) s[g() % n] = "\n\0 P"[g() % 4];
  return s;
}

// The frames an honest rank writes: records and outputs (labels unique), then mostly an end frame.
std::vector<Frame> valid_frames(std::mt19937_64& g) {
  std::vector<Frame> frames;
  uint64_t n = g() % 7;
  for (uint64_t i = 0; i < n; ++i) {
    std::string payload = random_bytes(g, g() % 8 ? g() % 48 : g() % 700);
    bool record = g() % 3 == 0;
    std::string label = record ? "record" : (g() % 2 ? "trial" : "copy") + std::to_string(i);
    frames.push_back(frame(i, record ? FrameKind::record : FrameKind::outputs, label, payload));
  }
  if (g() % 4) frames.push_back(frame(n, FrameKind::end, "end", ""));
  return frames;
}

std::string valid_stream(std::mt19937_64& g) { return wire(valid_frames(g)); }

// Well-formed frames that break the protocol: one sent twice (numbered again or not), two swapped, a frame moved
// after the end frame (numbered again or not).
std::string breached_stream(std::mt19937_64& g) {
  std::vector<Frame> frames = valid_frames(g);
  if (frames.empty()) return "";
  size_t i = g() % frames.size(), j = g() % frames.size();
  uint64_t how = g() % 3;
  bool renumber = g() % 2;
  if (how == 0) frames.insert(frames.begin() + i, frames[i]);
  if (how == 1) std::swap(frames[i], frames[j]);
  if (how == 2) frames.push_back(frames[i]), frames.erase(frames.begin() + i);
  for (uint64_t k = 0; renumber && k < frames.size(); ++k) frames[k].h.seq = k;
  return wire(frames);
}

// One to three mutations: bit flips, bytes a header cares about, truncations, deletions, splices of itself and of
// another stream, a length field made huge, a run with no newline.
void mutate(std::mt19937_64& g, std::string& s, const std::string& other) {
  for (uint64_t m = 1 + g() % 3; m > 0; --m) {
    // Draws in declaration order (function arguments would take them in an order each compiler picks).
    size_t at = g() % (s.size() + 1), len = g() % (s.size() - at + 1), from = g() % (other.size() + 1);
    uint64_t r = g();
    switch (g() % 8) {
      case 0:
        if (at < s.size()) s[at] ^= static_cast<char>(1 << (g() % 8));
        break;
      case 1:
        if (at < s.size()) s[at] = " \n\t\r\0-+0123456789\xff"[g() % 18];
        break;
      case 2:
        s.resize(at);
        break;
      case 3:
        s.erase(at, len);
        break;
      case 4:
        s.insert(g() % (s.size() + 1), s.substr(at, len));
        break;
      case 5:
        s.insert(at, other.substr(from, r % 200));
        break;
      case 6: {
        size_t nl = s.find('\n', at), sp = nl == std::string::npos ? nl : s.rfind(' ', nl);
        if (sp != std::string::npos && sp >= at)
          s.replace(sp + 1, nl - sp - 1, g() % 2 ? "18446744073709551615" : "1000000000000");
        break;
      }
      case 7:
        s.insert(at, std::string(r % 600, static_cast<char>('a' + r / 600 % 26)));
        break;
    }
  }
}

// Where the feeds end: nowhere (one feed), or random pieces of at most 3, 16 or 300 bytes (empty ones included).
std::vector<size_t> random_cuts(std::mt19937_64& g, size_t size) {
  std::vector<size_t> cuts;
  uint64_t regime = g() % 4, most = regime == 1 ? 3 : regime == 2 ? 16 : 300;
  if (regime == 0) return cuts;
  for (size_t at = 0; at < size; cuts.push_back(at)) at = std::min(size, at + g() % (most + 1));
  return cuts;
}

// ThreadSanitizer runs this binary for its threads (scripts/tsan.sh); the fuzz test has none, so it runs a tenth there.
#if PKB_TSAN
constexpr uint64_t kFuzzCases = 2000;
#else
constexpr uint64_t kFuzzCases = 20000;
#endif

// 20000 streams (valid, breaking the protocol, or with mutated bytes), each parsed whole (against the reference
// split) and in random pieces, sometimes under a byte limit: the pieces give what the whole gives, or (past the limit)
// an error after a prefix of its frames.
// 0.7 s of CPU in a Test (-O0) build.
TEST(SealFrameFuzz, MutatedStreamsSplitAsTheWholeBufferDoes) {
  constexpr uint64_t kCases = kFuzzCases, kFirstSeed = 0x5ea1000;
  std::vector<std::string> others;  // what splices take from
  std::mt19937_64 pool(kFirstSeed - 1);
  for (int i = 0; i < 64; ++i) others.push_back(valid_stream(pool));
  for (uint64_t seed = kFirstSeed; seed < kFirstSeed + kCases; ++seed) {
    std::mt19937_64 g(seed);
    uint64_t kind = g() % 10;  // 1 in 10 valid, 2 breach the protocol, 7 mutated bytes
    std::string s = kind == 1 || kind == 2 ? breached_stream(g) : valid_stream(g);
    if (kind >= 3) mutate(g, s, others[g() % others.size()]);
    Parsed whole = parse(s), ref = reference_split(s);
    ASSERT_TRUE(same_split(whole, ref)) << "seed " << seed << ": " << whole << "; the reference: " << ref;
    ASSERT_LE(whole.largest_allocation, 1024u) << "seed " << seed << ": memory for a length field?";
    uint64_t max_bytes = g() % 8 ? UINT64_MAX : g() % (s.size() + 1);
    std::vector<size_t> cuts = random_cuts(g, s.size());
    if (cuts.empty() && max_bytes == UINT64_MAX) continue;  // the whole again
    Parsed pieces = parse(s, cuts, max_bytes);
    ASSERT_LE(pieces.largest_allocation, 1024u) << "seed " << seed << ": memory for a length field?";
    if (s.size() > max_bytes) ASSERT_NE(pieces.error, FrameError::none) << "seed " << seed;
    if (pieces.error != FrameError::oversized) {
      ASSERT_EQ(pieces, whole) << "seed " << seed;
      continue;
    }
    ASSERT_LE(pieces.frames.size(), whole.frames.size()) << "seed " << seed;
    ASSERT_TRUE(std::equal(pieces.frames.begin(), pieces.frames.end(), whole.frames.begin())) << "seed " << seed;
  }
}

}  // namespace
