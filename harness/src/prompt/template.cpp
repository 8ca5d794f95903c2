#include "prompt/template.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/files.h"

namespace pkb::prompt {
namespace {

struct Token {
  size_t begin, end;  // [begin, end) covers "{{name}}"
  std::string name;
};

std::string line_of(std::string_view text, size_t pos) {
  return "line " + std::to_string(1 + std::count(text.begin(), text.begin() + pos, '\n'));
}

bool valid_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::vector<Token> tokens(std::string_view text, const std::string& where) {
  std::vector<Token> out;
  for (size_t pos = 0; (pos = text.find("{{", pos)) != std::string_view::npos;) {
    size_t close = text.find("}}", pos + 2);
    if (close == std::string_view::npos) throw Error(where + ": " + line_of(text, pos) + ": '{{' without '}}'");
    std::string_view name = text.substr(pos + 2, close - pos - 2);
    if (!valid_name(name))
      throw Error(where + ": " + line_of(text, pos) + ": '{{" + std::string(name) +
                  "}}' is not a placeholder (names are letters, digits and '_')");
    out.push_back({pos, close + 2, std::string(name)});
    pos = close + 2;
  }
  return out;
}

std::string known_names(const Vars& vars) {
  std::string s;
  for (const auto& [k, v] : vars) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace

std::string render(std::string_view text, const Vars& vars, const std::string& where) {
  std::vector<Token> toks = tokens(text, where);
  std::vector<const std::string*> values;
  for (const Token& t : toks) {
    auto it = vars.find(t.name);
    if (it == vars.end())
      throw Error(where + ": " + line_of(text, t.begin) + ": unknown placeholder {{" + t.name +
                  "}} (known: " + known_names(vars) + ")");
    values.push_back(&it->second);
  }
  std::string out;
  size_t k = 0;
  for (size_t line = 0; line < text.size();) {
    size_t nl = text.find('\n', line);
    size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    size_t first = k;
    while (k < toks.size() && toks[k].begin < next) ++k;
    bool drop =
        std::any_of(values.begin() + first, values.begin() + k, [](const std::string* v) { return v->empty(); });
    if (!drop) {
      size_t copied = line;
      for (size_t i = first; i < k; ++i) {
        out.append(text.substr(copied, toks[i].begin - copied));
        out += *values[i];
        copied = toks[i].end;
      }
      out.append(text.substr(copied, next - copied));
    }
    line = next;
  }
  return out;
}

std::vector<std::string> placeholders(std::string_view text, const std::string& where) {
  std::vector<std::string> names;
  for (const Token& t : tokens(text, where))
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  return names;
}

std::string read_text(const std::filesystem::path& file) { return read_text_file(file); }

std::string render_file(const std::filesystem::path& file, const Vars& vars) {
  return render(read_text(file), vars, file.string());
}

}  // namespace pkb::prompt
