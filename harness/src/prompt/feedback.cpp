#include "prompt/feedback.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "core/files.h"
#include "core/utf8.h"
#include "prompt/template.h"
#include "spec/catalog.h"

namespace pkb::prompt {
namespace {

using json = nlohmann::json;

constexpr size_t kLogLines = 40, kLogBytes = 3000;    // compiler output
constexpr size_t kTailLines = 25, kTailBytes = 2000;  // a failing rank's stderr
constexpr size_t kMessageBytes = 600;                 // the record's one-line message
constexpr size_t kComparisons = 6;                    // failed comparisons listed

const json* at(const json& j, std::initializer_list<const char*> keys) {
  const json* v = &j;
  for (const char* k : keys) {
    if (!v->is_object() || !v->contains(k)) return nullptr;
    v = &(*v)[k];
  }
  return v;
}

std::string text_at(const json& j, std::initializer_list<const char*> keys) {
  const json* v = at(j, keys);
  return v && v->is_string() ? v->get<std::string>() : "";
}

std::optional<double> number_at(const json& j, std::initializer_list<const char*> keys) {
  const json* v = at(j, keys);
  return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
}

std::string num(double x, const char* fmt = "%.3g") {
  char b[64];
  std::snprintf(b, sizeof b, fmt, x);
  return b;
}

// Untrusted text made safe to quote: valid UTF-8, and no ``` that would close our fence early.
std::string quotable(const std::string& s) {
  std::string out = valid_utf8(s);
  for (size_t at = 0; (at = out.find("```", at)) != std::string::npos;) out.replace(at, 3, "'''");
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) v.push_back(line);
  return v;
}

std::string fenced(const std::string& body) {
  return "```\n" + body + (body.empty() || body.back() == '\n' ? "" : "\n") + "```\n";
}

// The compiler's output from just before its first error (warnings before it are noise), at most kLogLines
// lines and kLogBytes bytes.
std::string compiler_errors(const std::string& log) {
  std::vector<std::string> lines = lines_of(log);
  size_t first = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("error") != std::string::npos) {
      first = i > 0 && lines[i - 1].find("In function") != std::string::npos ? i - 1 : i;
      break;
    }
  std::string out;
  size_t kept = 0;
  for (size_t i = first; i < lines.size() && kept < kLogLines; ++i, ++kept) out += lines[i] + "\n";
  if (first + kept < lines.size()) out += "[... " + std::to_string(lines.size() - first - kept) + " more lines]\n";
  return utf8_prefix(out, kLogBytes);
}

// The last kTailLines lines of a rank's stderr, at most kTailBytes.
std::string stderr_tail(const std::string& tail) {
  std::vector<std::string> lines = lines_of(tail);
  size_t from = lines.size() > kTailLines ? lines.size() - kTailLines : 0;
  std::string out;
  for (size_t i = from; i < lines.size(); ++i) out += lines[i] + "\n";
  if (out.size() > kTailBytes) out = out.substr(out.size() - kTailBytes);  // valid_utf8 mends a cut character
  return out;
}

std::string status_line(const ResultRecord& r) {
  std::string what;
  if (r.status == "compile_error")
    what = "the compiler rejected the kernel";
  else if (r.status == "lint_violation")
    what = "the source check rejected the kernel before compiling it";
  else if (r.status == "load_error")
    what = "the compiled library could not be loaded or lacks the entry points";
  else if (r.status == "runtime_error")
    what = "the kernel failed while running";
  else if (r.status == "timeout")
    what = "the kernel did not finish before the deadline (every rank was killed)";
  else if (r.status == "crash")
    what = "a rank crashed";
  else if (r.status == "incorrect")
    what = "the kernel ran, but its outputs are wrong";
  else if (r.status == "correct")
    what = "every check passed";
  else if (r.status == "generation_failed")
    what = "there was no kernel to evaluate";
  else
    what = "not evaluated";
  return "Result: " + r.status + " (" + what + ").\n";
}

void message_section(std::ostringstream& o, const ResultRecord& r) {
  if (!r.message.empty() && r.message != "correct")
    o << "Message: " << quotable(utf8_prefix(r.message, kMessageBytes)) << "\n";
}

void compile_section(std::ostringstream& o, const json& f) {
  std::string log = text_at(f, {"compile", "log"});
  if (!log.empty()) o << "\nCompiler output (trimmed):\n" << fenced(quotable(compiler_errors(log)));
}

void lint_section(std::ostringstream& o, const json& f) {
  const json* lint = at(f, {"compile", "lint"});
  if (!lint || !lint->is_array() || lint->empty()) return;
  o << "\nFindings:\n";
  size_t shown = 0;
  for (const auto& x : *lint) {
    if (shown++ == 8) break;
    o << "- line " << x.value("line", 0) << ": " << quotable(utf8_prefix(x.value("rule", ""), 200)) << ": "
      << quotable(utf8_prefix(x.value("text", ""), 300)) << "\n";
  }
}

void failure_section(std::ostringstream& o, const json& f) {
  if (auto rank = number_at(f, {"failure", "rank"})) o << "Failing rank: " << num(*rank, "%.0f") << "\n";
  std::string tail = text_at(f, {"failure", "stderr_tail"});
  if (!tail.empty()) o << "\nEnd of that rank's stderr:\n" << fenced(quotable(stderr_tail(tail)));
}

// One line per failed comparison (robust policy, the one that decides), at most kComparisons.
void mismatch_section(std::ostringstream& o, const json& f) {
  const json* mutated = at(f, {"checks", "inputs_mutated"});
  if (mutated && mutated->is_array())
    for (const auto& m : *mutated)
      o << "- rank " << m.value("rank", 0) << " modified input '" << quotable(utf8_prefix(m.value("input", ""), 100))
        << "': inputs are read-only\n";
  const json* comparisons = at(f, {"checks", "comparisons"});
  if (!comparisons || !comparisons->is_array()) return;
  size_t failed = 0;
  for (const auto& c : *comparisons) {
    const json* rob = at(c, {"robust"});
    if (!rob || rob->value("pass", true)) continue;
    if (failed++ >= kComparisons) continue;
    std::string call = c.value("timed_call", false) ? "a call during timing"
                       : c.contains("trial")        ? "trial " + c["trial"].dump()
                                                    : "a check";
    o << "- output '" << quotable(utf8_prefix(c.value("output", ""), 100)) << "', rank " << c.value("rank", 0) << ", "
      << call << ": ";
    std::string error = rob->value("error", "");
    if (!error.empty()) {
      o << quotable(utf8_prefix(error, 300)) << "\n";
      continue;
    }
    o << rob->value("mismatches", 0) << " elements outside tolerance (" << rob->value("nan_count", 0)
      << " NaN), max abs error " << num(rob->value("max_abs_err", 0.0)) << ", max rel error "
      << num(rob->value("max_rel_err", 0.0)) << ", relative L2 error " << num(rob->value("rel_l2", 0.0));
    int64_t first = rob->value("first_bad", int64_t{-1});
    if (first >= 0) o << ", first bad element at flat index " << first << " (row-major, this rank's tensor)";
    o << "\n";
  }
  if (failed > kComparisons) o << "- ... and " << failed - kComparisons << " more failed comparisons\n";
  if (failed == 0 && (!mutated || !mutated->is_array() || mutated->empty()))
    o << "- (no per-output comparison failed; the message above says which check did)\n";
}

void timing_section(std::ostringstream& o, const ResultRecord& r) {
  const json& f = r.fields;
  auto mine = number_at(f, {"timing", "candidate", "median_us"});
  std::string base_kind = r.baseline.empty() ? "libtorch_nccl" : r.baseline;
  std::string base_field = "baseline_" + base_kind;
  auto base = number_at(f, {"timing", base_field.c_str(), "median_us"});
  const char* base_name = base_kind == "pytorch_eager" ? "PyTorch eager" : "libtorch + NCCL";
  o << "\nTiming (median over the timed iterations, slowest rank per iteration):\n";
  if (mine) o << "- your kernel: " << num(*mine, "%.2f") << " us\n";
  if (base) o << "- baseline (" << base_name << "): " << num(*base, "%.2f") << " us\n";
  if (const json* c = at(f, {"timing", "contended"}); c && c->is_boolean() && c->get<bool>())
    o << "- ranks shared a GPU: the times measure contention, so no speedup is claimed\n";
  else if (r.below_roofline)
    o << "- your time is below the roofline floor, faster than the hardware allows: a timing bug or a forgery, so "
         "no speedup is claimed\n";
  else if (r.speedup)
    o << "- speedup: " << num(*r.speedup, "%.2f") << "x (baseline time / your time; above 1 is faster)\n";
  if (auto floor = number_at(f, {"roofline", "floor_us"})) {
    std::string bound = text_at(f, {"roofline", "bound"});
    o << "- roofline floor: " << num(*floor, "%.3g") << " us" << (bound.empty() ? "" : " (bound by " + bound + ")");
    if (r.sol_candidate) o << "; SOL% yours " << num(100 * *r.sol_candidate, "%.1f");
    if (r.sol_baseline) o << ", baseline " << num(100 * *r.sol_baseline, "%.1f");
    o << "\n";
  }
  if (const json* e = at(f, {"timing", "stream_escape"}); e && e->is_boolean() && e->get<bool>())
    o << "- work escaped the timed stream: keep every kernel on the stream pkb_run is given\n";
}

void generation_section(std::ostringstream& o, const ResultRecord& r) {
  if (r.generation_status == "no_code")
    o << "Your answer held no ```cuda code block, so there was nothing to compile.\n";
  else if (r.generation_status == "truncated")
    o << "Your answer was cut off at the output token limit before its code block was complete; keep the answer "
         "shorter.\n";
  else if (r.generation_status == "refused")
    o << "The provider stopped your answer before it was complete.\n";
  else
    message_section(o, r);
}

}  // namespace

std::string feedback_text(const ResultRecord& r) {
  std::ostringstream o;
  o << status_line(r);
  const json& f = r.fields;
  if (r.status == "generation_failed") {
    generation_section(o, r);
  } else if (r.status == "compile_error") {
    message_section(o, r);
    compile_section(o, f);
  } else if (r.status == "lint_violation") {
    message_section(o, r);
    lint_section(o, f);
  } else if (r.status == "load_error" || r.status == "runtime_error" || r.status == "timeout" || r.status == "crash") {
    message_section(o, r);
    failure_section(o, f);
  } else if (r.status == "incorrect") {
    message_section(o, r);
    o << "\nFailed checks:\n";
    mismatch_section(o, f);
  } else if (r.status == "correct") {
    message_section(o, r);
    timing_section(o, r);
  } else {
    message_section(o, r);
  }
  std::string text = o.str();
  if (text.size() > kMaxFeedbackBytes) text = utf8_prefix(text, kMaxFeedbackBytes - 40) + "\n[feedback cut]\n";
  return valid_utf8(text);
}

std::string render_follow_up(const ResultRecord& r, const FollowUpOptions& o) {
  std::filesystem::path dir = o.prompts_dir.empty() ? repo_root() / "prompts" : o.prompts_dir;
  std::string feedback = feedback_text(r);
  while (!feedback.empty() && feedback.back() == '\n') feedback.pop_back();
  Vars vars = {{"feedback", feedback},
               {"turn", std::to_string(o.turn)},
               {"next_turn", std::to_string(o.turn + 1)},
               {"turns", std::to_string(o.turns)},
               {"problem_folder", r.problem_folder}};
  return render_file(dir / (r.correct() ? "followup_faster.txt" : "followup_fix.txt"), vars);
}

const std::vector<std::string>& example_feedback_statuses() {
  static const std::vector<std::string> kStatuses = {"compile_error", "lint_violation", "runtime_error", "timeout",
                                                     "crash",         "incorrect",      "correct",       "no_code"};
  return kStatuses;
}

ResultRecord example_record(const std::string& status, const std::string& folder) {
  const auto& known = example_feedback_statuses();
  if (std::find(known.begin(), known.end(), status) == known.end()) {
    std::string names;
    for (const auto& s : known) names += (names.empty() ? "" : ", ") + s;
    throw Error("no example feedback for '" + status + "' (known: " + names + ")");
  }
  ResultRecord r;
  r.problem_folder = folder;
  r.status = status;
  json& f = r.fields;
  if (status == "compile_error") {
    r.message = "candidate.cu(42): error: identifier \"peer_ptr\" is undefined";
    f["compile"] = {{"status", "compile_error"},
                    {"log",
                     "candidate.cu(42): error: identifier \"peer_ptr\" is undefined\n"
                     "      float* dst = peer_ptr(ctx, out, peer);\n                   ^\n\n"
                     "1 error detected in the compilation of \"candidate.cu\".\n"}};
  } else if (status == "lint_violation") {
    r.message = "lint: ncclAllReduce: NCCL calls are not allowed";
    f["compile"] = {{"status", "lint_violation"},
                    {"lint", json::array({{{"rule", "nccl"}, {"line", 57}, {"text", "ncclAllReduce(...)"}}})}};
  } else if (status == "runtime_error") {
    r.message = "rank 1: CUDA error in trial 0: an illegal memory access was encountered";
    f["failure"] = {{"rank", 1}, {"stderr_tail", "pkb-rank: CUDA error: an illegal memory access was encountered\n"}};
  } else if (status == "timeout") {
    r.message = "timed out after 60 s in trial 0 (every rank was killed)";
    f["failure"] = {{"rank", 0}, {"stderr_tail", ""}};
  } else if (status == "crash") {
    r.message = "rank 0 killed by signal 11 (Segmentation fault)";
    f["failure"] = {{"rank", 0},
                    {"signal", 11},
                    {"stderr_tail", "*** Process received signal ***\nSignal: Segmentation fault (11)\n"}};
  } else if (status == "incorrect") {
    r.message = "trial 0 rank 1 output 'out': 4096 of 1048576 mismatched (0 NaN), first at 524288; max_abs=1.98";
    json bad = {{"pass", false},       {"error", ""},        {"mismatches", 4096}, {"nan_count", 0},
                {"max_abs_err", 1.98}, {"max_rel_err", 2.0}, {"rel_l2", 0.062},    {"first_bad", 524288}};
    f["checks"] = {{"robust_pass", false},
                   {"pkb_pass", false},
                   {"inputs_mutated", json::array()},
                   {"comparisons", json::array({{{"trial", 0}, {"rank", 1}, {"output", "out"}, {"robust", bad}}})}};
  } else if (status == "correct") {
    r.message = "correct";
    r.speedup = 1.31, r.baseline = "pytorch_eager", r.sol_candidate = 0.42, r.sol_baseline = 0.32;
    f["timing"] = {{"candidate", {{"median_us", 25.4}}}, {"baseline_pytorch_eager", {{"median_us", 33.2}}}};
    f["roofline"] = {{"floor_us", 10.7}, {"bound", "link"}};
  } else {  // no_code
    r.status = "generation_failed";
    r.generation_status = "no_code";
    r.message = "no kernel to evaluate: no_code: the answer holds no fenced CUDA block";
  }
  return r;
}

}  // namespace pkb::prompt
