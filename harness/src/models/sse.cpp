#include "models/sse.h"

namespace pkb::models {

void SseParser::feed(std::string_view bytes, const Handler& on_event) {
  if (!started_) {
    // A BOM may itself be split across chunks: hold bytes back while they could still be one.
    static constexpr std::string_view kBom = "\xEF\xBB\xBF";
    head_.append(bytes);
    if (head_.size() < kBom.size() && kBom.substr(0, head_.size()) == head_) return;
    started_ = true;
    std::string rest = std::move(head_);
    if (rest.rfind(kBom, 0) == 0) rest.erase(0, kBom.size());
    feed(rest, on_event);
    return;
  }
  for (char c : bytes) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\r' || c == '\n') {
      skip_lf_ = c == '\r';
      end_line(on_event);
    } else {
      line_ += c;
    }
  }
}

void SseParser::end_line(const Handler& on_event) {
  std::string line = std::move(line_);
  line_.clear();
  if (line.empty()) {  // dispatch
    if (has_data_) {
      ++events_;
      on_event(pending_);
    }
    std::string id = std::move(pending_.id);  // the id persists across events; the rest does not
    pending_ = SseEvent{};
    pending_.id = std::move(id);
    has_data_ = has_fields_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment
  size_t colon = line.find(':');
  std::string_view field = std::string_view(line).substr(0, colon);
  std::string_view value;
  if (colon != std::string::npos) {
    value = std::string_view(line).substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  has_fields_ = true;
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = value;
  } else if (field == "id") {
    pending_.id = value;
  }
}

}  // namespace pkb::models
