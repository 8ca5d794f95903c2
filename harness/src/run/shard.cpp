#include "run/shard.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace pkb::run {

std::string Shard::text() const { return std::to_string(index) + "/" + std::to_string(count); }

std::string Shard::dir_name() const { return "shard-" + std::to_string(index) + "-of-" + std::to_string(count); }

Shard parse_shard(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Error("--shard " + text + ": " + why + " (expected I/N, 0 <= I < N)");
  };
  size_t slash = text.find('/');
  if (slash == std::string::npos) throw bad("no '/'");
  auto number = [&](const std::string& s, const char* what) {
    if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw bad(std::string(what) + " '" + s + "' is not a non-negative integer");
    return std::stoi(s);
  };
  Shard s;
  s.index = number(text.substr(0, slash), "index");
  s.count = number(text.substr(slash + 1), "count");
  if (s.count < 1) throw bad("the count must be at least 1");
  if (s.index >= s.count) throw bad("the index must be below the count");
  return s;
}

bool in_shard(const Shard& s, long item, long total) {
  // floor(I*T/N) <= item < floor((I+1)*T/N): blocks differ in size by at most one and cover [0, T) once.
  long begin = s.index * total / s.count, end = (s.index + 1L) * total / s.count;
  return item >= begin && item < end;
}

nlohmann::json shard_json(const Shard& s, int samples) {
  if (!s.sharded()) return nullptr;
  return {{"index", s.index}, {"count", s.count}, {"samples", samples}};
}

}  // namespace pkb::run
