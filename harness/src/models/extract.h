// Pulling the kernel source out of a model's answer. Rules, in order:
//  1. Fenced blocks (``` or ~~~, any indent, CRLF tolerated) labelled cuda/cu/cuh/cpp/c++/cxx/cc/c or
//     unlabelled are candidates; other languages (python, bash, text, ...) are ignored.
//  2. Among candidates, those that define pkb_run win, and of those the last complete (closed) block: an answer
//     that revises its kernel presents the final version last. Without any pkb_run definition, the largest.
//  3. A final fence left open is a block running to the end of the text.
//  4. finish == length  -> truncated (code still recorded if a block exists): a cut-off kernel is not a kernel.
//     no candidate      -> no_code, unless the whole answer is bare code defining pkb_run.
// Reasoning (<think>...</think>) must already be split off: see split_think, applied by every provider.
#pragma once

#include <string>
#include <string_view>

#include "models/types.h"

namespace pkb::models {

enum class CodeStatus { ok, no_code, truncated };
const char* code_status_name(CodeStatus s);

struct Extraction {
  CodeStatus status = CodeStatus::no_code;
  std::string code;      ///< chosen block's content, LF line endings, without fences
  std::string language;  ///< fence label as written, lowercased ("" if unlabelled or bare code)
};

Extraction extract_code(std::string_view answer, FinishReason finish);

/// True if `code` contains a definition (not a call or declaration) of function `name`.
bool defines_function(std::string_view code, std::string_view name);

struct ThinkSplit {
  std::string answer;
  std::string reasoning;
};

/// Separates inline reasoning, which comes first: a "<think>" opening the text runs to the first "</think>" (to
/// the end when unclosed); without an opening tag (DeepSeek-R1 style), text up to a "</think>" that precedes
/// every code fence. A literal tag later in the answer (prose or code about tags) is answer text.
ThinkSplit split_think(std::string_view text);

}  // namespace pkb::models
