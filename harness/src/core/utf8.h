// Text that came from outside (compiler messages, a rank's stderr, a candidate's file names and source) may
// hold any bytes. These make it safe for JSON records and for terminals.
#pragma once

#include <string>

namespace pkb {

// `s` with every byte sequence that is not UTF-8 replaced by U+FFFD.
std::string valid_utf8(const std::string& s);

// At most `max_bytes` of `s`, cut at a character boundary (never inside a multi-byte character), made valid.
std::string utf8_prefix(const std::string& s, size_t max_bytes);

}  // namespace pkb
