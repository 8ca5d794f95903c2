// The files pkb generate writes under OUT, and the stderr progress line. Writes are atomic (temporary file,
// then rename) so an interrupted run never leaves half a candidate that a later `pkb eval` would pick up.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "generate/generate.h"

namespace pkb::generate {

/// OUT/rel := content, or OUT/rel removed when content is absent. Returns rel as text when written, else "".
std::string place_file(const std::filesystem::path& out, const std::filesystem::path& rel,
                       const std::optional<std::string>& content);

/// Rewrites OUT/generations.jsonl from the records.
void write_records(const std::filesystem::path& out, const std::vector<SampleRecord>& records);

/// "openai:gpt-5" -> "openai_gpt-5": a model name as one path component.
std::string file_safe(const std::string& s);

/// "pkb generate: 5/16 done, 4 ok, 1 failed, 3 from cache, 12345 tokens, $0.0123 new, $0.0040 from cache" on
/// stderr; redrawn in place on a terminal.
class ProgressLine {
 public:
  ProgressLine(size_t total, bool enabled);
  void add(const SampleRecord& r);
  void finish();

 private:
  void print() const;
  size_t total_, done_ = 0, ok_ = 0, failed_ = 0, cached_ = 0;
  int64_t tokens_ = 0;
  double cost_ = 0, cached_cost_ = 0;  // new spend; original cost of the answers served from the cache
  bool any_cost_ = false, enabled_, tty_;
};

}  // namespace pkb::generate
