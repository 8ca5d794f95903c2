#include "models/extract.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace pkb::models {
namespace {

struct Block {
  std::string lang;
  std::string code;
  bool closed = false;  // its closing fence was seen (an open one runs to the end of the text)
};

struct Fence {
  char ch;
  size_t len;
  std::string info;  // text after the fence run, trimmed
};

bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<Fence> parse_fence(std::string_view line) {
  line = trim(line);
  if (line.size() < 3 || (line[0] != '`' && line[0] != '~')) return std::nullopt;
  char ch = line[0];
  size_t n = 0;
  while (n < line.size() && line[n] == ch) ++n;
  if (n < 3) return std::nullopt;
  std::string_view info = trim(line.substr(n));
  if (ch == '`' && info.find('`') != std::string_view::npos) return std::nullopt;  // inline code, not a fence
  return Fence{ch, n, std::string(info)};
}

std::string first_word_lower(std::string_view info) {
  std::string w;
  for (char c : info) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == '{') break;
    w += char(std::tolower(static_cast<unsigned char>(c)));
  }
  return w;
}

std::string normalize_newlines(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {  // a final '\n' ends the last line, it does not start an empty one
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

// All fenced blocks; a fence still open at the end of the text yields a block running to the end.
std::vector<Block> find_blocks(std::string_view text) {
  std::vector<Block> blocks;
  std::optional<Fence> open;
  for (std::string_view line : split_lines(text)) {
    auto fence = parse_fence(line);
    if (!open) {
      if (fence) open = fence, blocks.push_back({first_word_lower(fence->info), ""});
      continue;
    }
    if (fence && fence->ch == open->ch && fence->len >= open->len && fence->info.empty()) {
      open.reset();
      blocks.back().closed = true;
      continue;
    }
    blocks.back().code.append(line).append("\n");
  }
  return blocks;
}

bool is_code_language(const std::string& lang) {
  static const std::array<const char*, 11> kLangs = {"",    "cuda", "cu", "cuh", "cpp", "c++",
                                                     "cxx", "cc",   "c",  "hpp", "h"};
  return std::find(kLangs.begin(), kLangs.end(), lang) != kLangs.end();
}

// Index just past the ')' matching the '(' at `open`, or npos.
size_t skip_parens(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// After a parameter list: qualifiers (const, noexcept, __attribute__...) and a trailing return type may sit
// before the body; a ';' or anything else first means declaration or call.
bool body_follows(std::string_view s, size_t pos) {
  for (size_t i = pos; i < s.size(); ++i) {
    char c = s[i];
    if (c == '{') return true;
    if (c == ';' || c == '=' || c == ',' || c == ')') return false;
  }
  return false;
}

// The token before the name must be a type (identifier, '*', '&', '>'), and not a statement keyword.
bool preceded_by_type(std::string_view s, size_t name_pos) {
  size_t i = name_pos;
  while (i > 0 && std::isspace(static_cast<unsigned char>(s[i - 1]))) --i;
  if (i == 0) return false;
  char c = s[i - 1];
  if (c == '*' || c == '&' || c == '>') return true;
  if (!is_ident(c)) return false;
  size_t end = i;
  while (i > 0 && is_ident(s[i - 1])) --i;
  std::string_view word = s.substr(i, end - i);
  return word != "return" && word != "else" && word != "case" && word != "new" && word != "throw";
}

bool defines_pkb_run(const Block& b) { return defines_function(b.code, "pkb_run"); }

}  // namespace

const char* code_status_name(CodeStatus s) {
  switch (s) {
    case CodeStatus::ok:
      return "ok";
    case CodeStatus::no_code:
      return "no_code";
    case CodeStatus::truncated:
      return "truncated";
  }
  return "?";
}

bool defines_function(std::string_view code, std::string_view name) {
  for (size_t pos = code.find(name); pos != std::string_view::npos; pos = code.find(name, pos + 1)) {
    size_t after = pos + name.size();
    if ((pos > 0 && is_ident(code[pos - 1])) || (after < code.size() && is_ident(code[after]))) continue;
    size_t paren = after;
    while (paren < code.size() && std::isspace(static_cast<unsigned char>(code[paren]))) ++paren;
    if (paren >= code.size() || code[paren] != '(' || !preceded_by_type(code, pos)) continue;
    size_t close = skip_parens(code, paren);
    if (close != std::string_view::npos && body_follows(code, close)) return true;
  }
  return false;
}

Extraction extract_code(std::string_view answer, FinishReason finish) {
  std::string text = normalize_newlines(answer);
  std::vector<Block> blocks = find_blocks(text);
  std::vector<const Block*> candidates;
  for (const auto& b : blocks)
    if (is_code_language(b.lang) && !trim(b.code).empty()) candidates.push_back(&b);
  if (std::any_of(candidates.begin(), candidates.end(), [](const Block* b) { return defines_pkb_run(*b); }))
    std::erase_if(candidates, [](const Block* b) { return !defines_pkb_run(*b); });

  Extraction out;
  if (!candidates.empty()) {
    const Block* best = nullptr;
    if (defines_pkb_run(*candidates.front())) {
      // An answer that revises its kernel presents the final one last; a cut-off last block is not it.
      for (const Block* b : candidates)
        if (b->closed || !best) best = b;
    } else {
      auto larger = [](const Block* a, const Block* b) { return a->code.size() < b->code.size(); };
      best = *std::max_element(candidates.begin(), candidates.end(), larger);
    }
    out = {CodeStatus::ok, best->code, best->lang};
  } else if (blocks.empty() && defines_function(text, "pkb_run")) {
    out = {CodeStatus::ok, std::string(trim(text)) + "\n", ""};  // bare code, no fences at all
  }
  if (finish == FinishReason::length) out.status = CodeStatus::truncated;
  return out;
}

ThinkSplit split_think(std::string_view text) {
  static constexpr std::string_view kOpen = "<think>", kClose = "</think>";
  ThinkSplit out;
  std::string thoughts;
  bool split = false;
  std::string_view rest = text;
  // Reasoning comes first. Without an opening tag (DeepSeek-R1 style), text up to a </think> that precedes every
  // code fence and every <think>; then any number of <think> blocks opening what is left. A tag anywhere else
  // is the answer talking about tags, and must not hide the code after it.
  size_t close = rest.find(kClose);
  std::string_view before = close == std::string_view::npos ? rest : rest.substr(0, close);
  if (close != std::string_view::npos && before.find("```") == std::string_view::npos &&
      before.find(kOpen) == std::string_view::npos) {
    thoughts += before;
    rest = rest.substr(close + kClose.size());
    split = true;
  }
  while (trim(rest).substr(0, kOpen.size()) == kOpen) {
    rest = trim(rest).substr(kOpen.size());
    size_t end = rest.find(kClose);
    thoughts += std::string(rest.substr(0, end)) + "\n";
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + kClose.size());  // unclosed: cut off
    split = true;
  }
  if (!split) {
    out.answer = std::string(text);
    return out;
  }
  out.answer = std::string(trim(rest));
  out.reasoning = std::string(trim(thoughts));
  return out;
}

}  // namespace pkb::models
