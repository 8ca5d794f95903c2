// A libFuzzer target for seal/frame.h's parser: optional (clang only, off by default); CI runs the randomized gtest in
// seal_frame_test.cpp instead. Each input is a stream whose first byte picks the pieces it is fed in. Checks: no crash
// and no sanitizer report, the sink's contract (begin, payload pieces adding up to the length, complete), and the
// pieces parse exactly as the whole does; -malloc_limit_mb catches a length field that allocates. Build and run:
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Test \
//     -DPKB_FUZZ=ON && cmake --build build-fuzz --target seal_frame_fuzz
//   build-fuzz/tests/seal_frame_fuzz -dict=tests/unit/seal_frame_fuzz.dict -malloc_limit_mb=64 -max_total_time=60
// or without CMake: clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Iharness/src
//   tests/unit/seal_frame_fuzz.cpp harness/src/seal/frame.cpp -o seal_frame_fuzz
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "seal/frame.h"

namespace {

using pkb::FrameError;
using pkb::FrameHeader;

[[noreturn]] void broken(const char* why) {
  std::fprintf(stderr, "seal_frame_fuzz: %s\n", why);
  std::abort();
}

// A frame as received: its header and its payload's FNV-1a hash (payloads are not kept).
struct Received {
  FrameHeader h;
  uint64_t hash = 1469598103934665603ull;
  bool operator==(const Received& o) const {
    return h.seq == o.h.seq && h.kind == o.h.kind && h.label == o.h.label && h.bytes == o.h.bytes && hash == o.hash;
  }
};

class Check : public pkb::FrameSink {
 public:
  std::vector<Received> frames;
  std::string begin(const FrameHeader& h) override {
    if (open_) broken("begin inside a frame");
    open_ = true, got_ = 0;
    frames.push_back({h});
    return "";
  }
  void payload(const FrameHeader& h, const char* data, size_t len) override {
    if (!open_ || len == 0 || got_ + len > h.bytes) broken("payload outside its frame or past its length");
    got_ += len;
    for (size_t i = 0; i < len; ++i) frames.back().hash = (frames.back().hash ^ uint8_t(data[i])) * 1099511628211ull;
  }
  std::string complete(const FrameHeader& h) override {
    if (!open_ || got_ != h.bytes) broken("complete before the payload's end");
    open_ = false;
    return "";
  }

 private:
  bool open_ = false;
  uint64_t got_ = 0;
};

struct Result {
  std::vector<Received> frames;
  FrameError error;
  std::string message;
  uint64_t error_at, bytes;
  bool ended;
  bool operator==(const Result& o) const {
    return frames == o.frames && error == o.error && message == o.message && error_at == o.error_at &&
           bytes == o.bytes && ended == o.ended;
  }
};

// piece 0: one feed; else pieces of 0 to piece bytes, drawn by an LCG seeded with piece.
Result parse(const char* data, size_t size, uint8_t piece) {
  Check sink;
  pkb::FrameParser p(sink, UINT64_MAX);
  uint64_t x = piece;
  for (size_t at = 0, n = size; at < size; at += n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    if (piece) n = std::min<size_t>(size - at, (x >> 33) % (piece + 1u));
    p.feed(data + at, n);
  }
  p.finish();
  return {sink.frames, p.error(), p.message(), p.error_at(), p.bytes(), p.ended()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* stream = reinterpret_cast<const char*>(data + 1);
  if (!(parse(stream, size - 1, 0) == parse(stream, size - 1, data[0])))
    broken("the pieces parse differently from the whole");
  return 0;
}
