// The prompt templates' tiny language: plain text with {{name}} placeholders (name: letters, digits, '_').
// Values are inserted verbatim and never re-scanned, so code containing "{{" (aggregate initializers) is safe.
// A line containing a placeholder whose value is empty is dropped entirely: an empty value means "does not
// apply" (the in-context example in zero-shot, a measured rate a topology lacks), and its sentence goes with it.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pkb::prompt {

using Vars = std::map<std::string, std::string>;

// Throws pkb::Error "<where>: line L: ..." for an unknown placeholder (naming the known ones) or an unclosed "{{".
std::string render(std::string_view text, const Vars& vars, const std::string& where);

// The placeholder names a template uses, in order of first appearance (for checks and docs).
std::vector<std::string> placeholders(std::string_view text, const std::string& where);

// Reads a template file and renders it; `where` in errors is the file's path.
std::string render_file(const std::filesystem::path& file, const Vars& vars);

// A whole text file; throws pkb::Error naming the file if it cannot be read.
std::string read_text(const std::filesystem::path& file);

}  // namespace pkb::prompt
