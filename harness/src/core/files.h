// Whole-file reads and JSONL appends, in one place: every caller wants the same thing and the same error.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace pkb {

// The file's bytes. Throws pkb::Error "<path>: cannot open" if it cannot be opened.
std::string read_text_file(const std::filesystem::path& path);

// The file parsed as JSON, or null when it is missing or does not parse (callers treat both as "not there").
nlohmann::json read_json_or_null(const std::filesystem::path& path);

// The one checked writer: `bytes` go to a file beside path named for this process and thread, which is then
// renamed over path, so readers (and concurrent writers) never see half a file. Throws pkb::Error naming the file
// when a byte cannot be written, the close included (a full disk shows there), or the rename fails.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

// write_file_atomically of `value`, indented, and a newline.
void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& value);

// Cache entries built by concurrent processes (parallel evaluations, a run beside an eval): each builds in its
// own private directory beside the entry, then places it with one rename; the first complete one wins.
// private_work_dir: a fresh, empty "<entry>.work-<pid>-<n>".
std::filesystem::path private_work_dir(const std::filesystem::path& entry);
// Renames `work` to `entry`; if a complete entry (holding `marker`) is already there, drops `work` instead. An
// entry without the marker (left by an interrupted older pkb) is replaced. Throws pkb::Error if no complete
// entry exists afterwards.
void place_directory(const std::filesystem::path& work, const std::filesystem::path& entry, const std::string& marker);

// Appends `line` and a newline with one write(2) on an O_APPEND descriptor, so that concurrent appenders never
// interleave and a killed process leaves at most one incomplete line. Throws pkb::Error when it cannot.
void append_line(const std::filesystem::path& path, const std::string& line);

// Cuts an incomplete last line (no trailing newline: its writer was killed) off a JSONL file; returns the
// number of bytes removed (0 when the file is whole or absent).
size_t repair_jsonl_tail(const std::filesystem::path& path);

}  // namespace pkb
