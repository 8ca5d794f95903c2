// Server-sent events (the WHATWG "text/event-stream" format) decoded incrementally from body chunks as they
// arrive: a chunk may end anywhere, mid-line or between the CR and LF of a line end.
// Rules kept: lines end in LF, CRLF or CR; a blank line ends an event; "data" lines are joined with "\n";
// "event" names the event (empty = "message"); lines starting with ':' are comments (keep-alives); a field
// without ':' has an empty value; one space after the colon is dropped; unknown fields are ignored; a leading
// UTF-8 BOM is skipped; an event with no data line is not dispatched. Not kept: "retry" (we never reconnect
// with Last-Event-ID: a broken stream is re-sent from scratch).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace pkb::models {

struct SseEvent {
  std::string event;  ///< the "event:" field, "" when absent
  std::string data;   ///< "data:" lines joined with "\n"
  std::string id;     ///< the last "id:" field, "" when absent
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;

  /// Decodes `bytes`, calling `on_event` for every event they complete, in order.
  void feed(std::string_view bytes, const Handler& on_event);
  /// Bytes of an event not yet ended by a blank line: a stream that ends here was cut mid-event.
  bool mid_event() const { return !line_.empty() || has_fields_; }
  /// Events dispatched so far.
  size_t events() const { return events_; }

 private:
  void end_line(const Handler& on_event);

  std::string line_;         // the current line, without its terminator
  SseEvent pending_;         // fields of the event being built
  bool has_data_ = false;    // a data line was seen (data may still be "")
  bool has_fields_ = false;  // any field line was seen since the last blank line
  bool skip_lf_ = false;     // the last byte was a CR: an LF right after it belongs to the same line end
  bool started_ = false;     // past the optional BOM
  std::string head_;         // first bytes, held back while they may be a split BOM
  size_t events_ = 0;
};

}  // namespace pkb::models
