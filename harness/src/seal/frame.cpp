#include "seal/frame.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>

namespace pkb {
namespace {

bool label_ok(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return s != "." && s != "..";
}

// A header's fields as they were written; kind still a word, since an unknown one is named in the error.
struct HeaderFields {
  uint64_t seq = 0, bytes = 0;
  std::string kind, label;
};

// line: the header without its newline. Read by sscanf, as the driver always read it (frame.h's known limits);
// glibc's %llu gives ULLONG_MAX for a number too large.
std::optional<HeaderFields> read_fields(const std::string& line) {
  char magic[16], kind[16], label[80];
  unsigned long long seq = 0, bytes = 0;
  if (std::sscanf(line.c_str(), "%15s %llu %15s %79s %llu", magic, &seq, kind, label, &bytes) != 5 ||
      std::strcmp(magic, kFrameMagic) != 0)
    return std::nullopt;
  return HeaderFields{seq, bytes, kind, label};
}

}  // namespace

std::string frame_header(const FrameHeader& h) {
  return std::string(kFrameMagic) + " " + std::to_string(h.seq) + " " + enum_name(h.kind) + " " + h.label + " " +
         std::to_string(h.bytes) + "\n";
}

FrameParser::FrameParser(FrameSink& sink, uint64_t max_bytes) : sink_(sink), max_bytes_(max_bytes) {}

bool FrameParser::feed(const char* data, size_t len) {
  if (!ok()) return false;
  if (len > max_bytes_ - bytes_) {
    fail(FrameError::oversized, "more than " + std::to_string(max_bytes_) + " bytes");
    return false;
  }
  while (len > 0 && ok()) {
    if (!in_payload_ && ended_) {
      fail(FrameError::after_end, "data after the end frame");
      break;
    }
    size_t took = in_payload_ ? take_payload(data, len) : take_header(data, len);
    data += took, len -= took;
  }
  return ok();
}

void FrameParser::finish() {
  if (ok() && (in_payload_ || !header_.empty())) fail(FrameError::truncated, "stream cut off inside a frame");
}

// Appends to the header up to its newline, never past kMaxFrameHeader + 1 bytes; a whole line starts its frame.
size_t FrameParser::take_header(const char* data, size_t len) {
  size_t room = kMaxFrameHeader + 1 - header_.size();
  const char* nl = static_cast<const char*>(std::memchr(data, '\n', std::min(len, room)));
  size_t take = nl ? static_cast<size_t>(nl - data) + 1 : std::min(len, room);
  header_.append(data, take);
  bytes_ += take;
  if (header_.size() > kMaxFrameHeader) {
    fail(FrameError::header_too_long, "frame header too long");
  } else if (nl) {
    std::string line = header_.substr(0, header_.size() - 1);
    header_.clear();
    start_frame(line);
  }
  return take;
}

// A whole header line: the frame's checks, then its begin (and its completion where it carries no payload).
void FrameParser::start_frame(const std::string& line) {
  std::optional<HeaderFields> f = read_fields(line);
  if (!f) return fail(FrameError::malformed_header, "malformed frame header");
  if (f->seq != next_seq_)
    return fail(FrameError::out_of_sequence,
                "frame " + std::to_string(f->seq) + " where " + std::to_string(next_seq_) + " was due");
  ++next_seq_;
  std::optional<FrameKind> kind = enum_from_name<FrameKind>(f->kind);
  FrameHeader h{f->seq, kind.value_or(FrameKind::end), f->label, f->bytes};
  if (!kind || !label_ok(h.label))
    return fail(FrameError::unknown_frame, "unknown frame '" + f->kind + " " + f->label + "'");
  if (h.kind == FrameKind::end) ended_ = true;
  if (!check_frame(h)) return;
  if (std::string why = sink_.begin(h); !why.empty()) return fail(FrameError::not_stored, why);
  frame_ = std::move(h);
  payload_left_ = frame_.bytes;
  in_payload_ = true;
  if (payload_left_ == 0) take_payload(nullptr, 0);
}

// The protocol's rules on a well-formed header of a known kind: an end frame carries nothing, an outputs label
// comes once.
bool FrameParser::check_frame(const FrameHeader& h) {
  if (h.kind == FrameKind::end && h.bytes != 0) {
    fail(FrameError::end_with_payload, "end frame with a payload");
    return false;
  }
  if (h.kind == FrameKind::outputs && !outputs_.insert(h.label).second) {
    fail(FrameError::repeated_outputs, "outputs '" + h.label + "' sent twice");
    return false;
  }
  return true;
}

// Passes the payload's next bytes on to the sink; completes the frame at its last byte.
size_t FrameParser::take_payload(const char* data, size_t len) {
  size_t take = static_cast<size_t>(std::min<uint64_t>(len, payload_left_));
  if (take > 0) sink_.payload(frame_, data, take);
  payload_left_ -= take;
  bytes_ += take;
  if (payload_left_ == 0) {
    in_payload_ = false;
    if (std::string why = sink_.complete(frame_); !why.empty()) fail(FrameError::not_stored, why);
  }
  return take;
}

void FrameParser::fail(FrameError e, const std::string& why) {
  if (!ok()) return;
  error_ = e;
  message_ = why;
  error_at_ = bytes_;
}

}  // namespace pkb
