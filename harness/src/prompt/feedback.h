// The follow-up message of multi-turn refinement (`pkb run --turns T`): what the model is told about its last
// kernel, built from that turn's result record, framed by prompts/followup_fix.txt (the kernel failed) or
// prompts/followup_faster.txt (it was correct). The feedback is structured text, one section per status: the
// trimmed compiler errors, the lint findings, the status and message of a runtime error, timeout or crash with
// the tail of the failing rank's stderr, the mismatch summary of an incorrect result (which output, rank and
// call, how many elements, max errors, first bad index), and for a correct kernel its time, the baseline's,
// the speedup and SOL%.
// Much of it is produced by the candidate (its stderr, compiler messages on its source): it is treated as
// untrusted text that goes to the model only, as valid UTF-8 of bounded size (kMaxFeedbackBytes), never into a
// shell or a file name.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/result_record.h"

namespace pkb::prompt {

/// The feedback section is cut at this many bytes (at a character boundary), whatever the candidate printed.
inline constexpr size_t kMaxFeedbackBytes = 8192;

/// The feedback on one evaluated turn (any status a sample can have), as the model will read it.
std::string feedback_text(const ResultRecord& r);

struct FollowUpOptions {
  int turn = 1;                       ///< the turn the record is for; the model's answer will be turn + 1
  int turns = 2;                      ///< the most turns the run allows
  std::filesystem::path prompts_dir;  ///< "" = <repo>/prompts
};

/// The user message that opens turn `o.turn + 1`: followup_faster.txt for a correct record, else followup_fix.txt.
/// Throws pkb::Error for a missing template or an unknown placeholder in it.
std::string render_follow_up(const ResultRecord& r, const FollowUpOptions& o);

/// Statuses `pkb prompt --turn` can show example feedback for.
const std::vector<std::string>& example_feedback_statuses();
/// A plausible record of that status for problem `folder` (made up, for `pkb prompt --turn`); throws pkb::Error
/// naming the known statuses for another one.
ResultRecord example_record(const std::string& status, const std::string& folder);

}  // namespace pkb::prompt
