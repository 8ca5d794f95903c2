// Whole-file reads, in one place: every caller wants the same thing and the same error.
#pragma once

#include <filesystem>
#include <string>

namespace pkb {

// The file's bytes. Throws pkb::Error "<path>: cannot open" if it cannot be opened.
std::string read_text_file(const std::filesystem::path& path);

}  // namespace pkb
