// The sealed channel's wire format (seal/seal.h) and its parser, a function over bytes: the driver feeds it what it
// reads from a rank's FIFO, in whatever pieces the reads return, and it hands each frame on as it arrives or says
// why the stream is not believed. Every byte it parses was written by a process that ran candidate code.
//
// Frame: "PKBSEAL1 <seq> <kind> <label> <bytes>\n" (at most kMaxFrameHeader bytes, newline included) then <bytes>
// of payload. seq counts from 0; kind is record (a rank record, JSON), outputs (a safetensors file's bytes; label
// trialT or copyK, each at most once) or end (no payload; nothing may follow it); a label is 1-64 of [A-Za-z0-9_.-].
//
// Memory: the parser holds one header (kMaxFrameHeader bytes at most) and the labels of the outputs frames seen; a
// payload passes through to the sink in the pieces it was fed, so a length field never allocates anything.
// Known limits: the header is read as sscanf's "%15s %llu %15s %79s %llu" reads it (what the driver always did): any
// whitespace separates fields, a number may carry a sign, text after the length and anything after a NUL byte are
// ignored. Only tampered streams differ from the writer's form, and a tampered stream breaks the numbering anyway.
// The byte limit applies per feed: a feed that would take the stream past it is refused whole, frames it completes
// included (the reads of one FIFO are the feeds, as they always were).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "core/enum_names.h"

namespace pkb {

inline constexpr const char* kFrameMagic = "PKBSEAL1";
inline constexpr size_t kMaxFrameHeader = 256;  // bytes, the newline included

enum class FrameKind { record, outputs, end };
template <>
struct EnumNames<FrameKind> {
  static constexpr std::pair<FrameKind, const char*> values[] = {
      {FrameKind::record, "record"}, {FrameKind::outputs, "outputs"}, {FrameKind::end, "end"}};
};

struct FrameHeader {
  uint64_t seq = 0;
  FrameKind kind = FrameKind::end;
  std::string label;
  uint64_t bytes = 0;  // the payload's length
};

// The header line as the writer sends it, newline included.
std::string frame_header(const FrameHeader& h);

// Why a stream is not believed; the first one ends the parse.
enum class FrameError {
  none,
  header_too_long,   // no newline within kMaxFrameHeader bytes
  malformed_header,  // not "PKBSEAL1 <seq> <kind> <label> <bytes>"
  out_of_sequence,   // seq is not the next number (an injected or dropped frame)
  unknown_frame,     // a kind or a label the protocol does not have
  end_with_payload,  // an end frame whose length is not 0
  after_end,         // any byte after the end frame
  repeated_outputs,  // a second outputs frame with a label already sent
  oversized,         // more bytes than the parser's limit
  truncated,         // the stream ended inside a frame (finish)
  not_stored,        // the sink could not keep a frame (its reason is the message)
};
template <>
struct EnumNames<FrameError> {
  static constexpr std::pair<FrameError, const char*> values[] = {{FrameError::none, "none"},
                                                                  {FrameError::header_too_long, "header_too_long"},
                                                                  {FrameError::malformed_header, "malformed_header"},
                                                                  {FrameError::out_of_sequence, "out_of_sequence"},
                                                                  {FrameError::unknown_frame, "unknown_frame"},
                                                                  {FrameError::end_with_payload, "end_with_payload"},
                                                                  {FrameError::after_end, "after_end"},
                                                                  {FrameError::repeated_outputs, "repeated_outputs"},
                                                                  {FrameError::oversized, "oversized"},
                                                                  {FrameError::truncated, "truncated"},
                                                                  {FrameError::not_stored, "not_stored"}};
};

// Where the parser hands frames on, in stream order: begin, the payload in pieces (none for an empty one), complete.
// Every frame accepted goes through begin; end frames too. A method returns "" to go on, else why the frame
// cannot be kept, which breaks the stream (FrameError::not_stored).
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual std::string begin(const FrameHeader& h) = 0;
  virtual void payload(const FrameHeader& h, const char* data, size_t len) = 0;
  virtual std::string complete(const FrameHeader& h) = 0;
};

// One rank's stream. Not thread-safe: one parser per stream, fed from one thread.
class FrameParser {
 public:
  // max_bytes: the most the stream may carry in all (FrameError::oversized past it).
  FrameParser(FrameSink& sink, uint64_t max_bytes);
  // The stream's next len bytes. Returns false once the stream is broken: later feeds are ignored.
  bool feed(const char* data, size_t len);
  // The stream has ended: cut off inside a frame (a header or a payload unfinished) it is broken.
  void finish();

  bool ok() const { return error_ == FrameError::none; }
  FrameError error() const { return error_; }
  // Why, without the position ("frame 3 where 2 was due"); "" while ok.
  const std::string& message() const { return message_; }
  uint64_t error_at() const { return error_at_; }  // bytes() when the error was found
  bool ended() const { return ended_; }            // an end frame arrived
  uint64_t bytes() const { return bytes_; }        // bytes parsed (those after an error are not)

 private:
  size_t take_header(const char* data, size_t len);
  void start_frame(const std::string& line);
  bool check_frame(const FrameHeader& h);
  size_t take_payload(const char* data, size_t len);
  void fail(FrameError e, const std::string& why);

  FrameSink& sink_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t next_seq_ = 0;
  std::string header_;  // the header line read so far, at most kMaxFrameHeader + 1 bytes
  bool in_payload_ = false;
  FrameHeader frame_;  // the frame whose payload is being read
  uint64_t payload_left_ = 0;
  bool ended_ = false;
  std::set<std::string> outputs_;  // labels of the outputs frames accepted
  FrameError error_ = FrameError::none;
  std::string message_;
  uint64_t error_at_ = 0;
};

}  // namespace pkb
