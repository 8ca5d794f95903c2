#include "generate/output.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/files.h"

namespace pkb::generate {

namespace fs = std::filesystem;

std::string place_file(const fs::path& out, const fs::path& rel, const std::optional<std::string>& content) {
  fs::path file = out / rel;
  if (!content) {
    std::error_code ec;
    fs::remove(file, ec);
    return "";
  }
  fs::create_directories(file.parent_path());
  write_file_atomically(file, *content);
  return rel.generic_string();
}

void write_records(const fs::path& out, const std::vector<SampleRecord>& records) {
  std::string text;
  // Replies and messages are the server's bytes: anything not UTF-8 becomes U+FFFD rather than ending the run.
  for (const auto& r : records)
    text += r.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  place_file(out, "generations.jsonl", text);
}

std::string file_safe(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return r;
}

ProgressLine::ProgressLine(size_t total, bool enabled) : total_(total), enabled_(enabled), tty_(::isatty(2) != 0) {}

void ProgressLine::add(const SampleRecord& r) {
  ++done_;
  if (r.status == SampleStatus::ok) ++ok_;
  // Failed: a model was asked and gave no usable kernel. Skips and offline gaps are not the model's doing.
  if (model_failed(r.status) || r.status == SampleStatus::error) ++failed_;
  bool cached = r.reply && r.reply->from_cache;
  if (r.reply) {
    cached_ += cached;
    tokens_ += r.reply->usage.input_tokens + r.reply->usage.output_tokens;
  }
  // New spend and what the cached answers cost when they were bought, apart: a rerun pays nothing.
  if (r.cost_usd) (cached ? cached_cost_ : cost_) += *r.cost_usd, any_cost_ = true;
  print();
}

void ProgressLine::print() const {
  if (!enabled_) return;
  char cost[96] = "cost unknown";
  if (any_cost_) std::snprintf(cost, sizeof cost, "$%.4f new, $%.4f from cache", cost_, cached_cost_);
  // On a terminal the line is redrawn in place; in a log every update is its own line.
  std::fprintf(stderr, "%spkb generate: %zu/%zu done, %zu ok, %zu failed, %zu from cache, %lld tokens, %s%s",
               tty_ ? "\r" : "", done_, total_, ok_, failed_, cached_, static_cast<long long>(tokens_), cost,
               tty_ ? "" : "\n");
}

void ProgressLine::finish() {
  if (enabled_ && tty_) std::fprintf(stderr, "\n");
}

}  // namespace pkb::generate
