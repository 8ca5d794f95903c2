// The follow-up message of pkb run --turns (prompt/feedback.h): what each status tells the model, and that text
// the candidate controls (its stderr, the compiler's messages on its source) reaches the model bounded, valid
// UTF-8, and unable to close the message's code fences.
#include "prompt/feedback.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/utf8.h"

namespace pkb::prompt {
namespace {

using nlohmann::json;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

TEST(Feedback, HostileStderrIsBoundedValidAndCannotCloseTheFence) {
  ResultRecord r;
  r.status = "crash";
  r.message = "rank 1 killed by signal 11 (Segmentation fault)";
  std::string junk;
  for (int i = 0; i < 100000; ++i) junk += "line " + std::to_string(i) + " \xff\xfe ```\n";
  junk += "the last line\n";
  r.fields["failure"] = {{"rank", 1}, {"stderr_tail", junk}};
  std::string text = feedback_text(r);
  EXPECT_LE(text.size(), kMaxFeedbackBytes);
  EXPECT_EQ(valid_utf8(text), text);
  EXPECT_EQ(count(text, "```"), 2u) << text;                 // our fence only: the candidate's ``` became '''
  EXPECT_NE(text.find("the last line"), std::string::npos);  // the tail is what is kept
  EXPECT_NE(text.find("Failing rank: 1"), std::string::npos);
}

TEST(Feedback, CompilerOutputStartsAtTheFirstError) {
  ResultRecord r = example_record("compile_error", "001_allreduce");
  std::string log;
  for (int i = 0; i < 50; ++i) log += "candidate.cu(" + std::to_string(i) + "): warning: unused variable\n";
  log += "candidate.cu(77): error: expected a \";\"\n";
  r.fields["compile"]["log"] = log;
  std::string text = feedback_text(r);
  EXPECT_EQ(text.find("warning"), std::string::npos) << text;
  EXPECT_NE(text.find("candidate.cu(77): error: expected a \";\""), std::string::npos) << text;
}

TEST(Feedback, EveryStatusSaysWhatHappened) {
  for (const std::string& status : example_feedback_statuses()) {
    ResultRecord r = example_record(status, "001_allreduce");
    std::string text = feedback_text(r);
    EXPECT_EQ(text.rfind("Result: " + r.status + " (", 0), 0u) << text;
    std::string message = render_follow_up(r, {2, 4, {}});
    EXPECT_NE(message.find("turn 3 of at most 4"), std::string::npos) << message;
    EXPECT_NE(message.find(text.substr(0, 30)), std::string::npos) << message;
    // A correct kernel is asked to go faster; anything else to be fixed.
    EXPECT_EQ(message.find("Make it faster") != std::string::npos, status == "correct") << status;
  }
  std::string correct = feedback_text(example_record("correct", "001_allreduce"));
  EXPECT_NE(correct.find("- your kernel: 25.40 us"), std::string::npos) << correct;
  EXPECT_NE(correct.find("- baseline (PyTorch eager): 33.20 us"), std::string::npos) << correct;
  EXPECT_NE(correct.find("- speedup: 1.31x"), std::string::npos) << correct;
  EXPECT_NE(correct.find("SOL% yours 42.0, baseline 32.0"), std::string::npos) << correct;
  std::string lint = feedback_text(example_record("lint_violation", "001_allreduce"));
  EXPECT_NE(lint.find("- line 57: nccl: ncclAllReduce(...)"), std::string::npos) << lint;
  EXPECT_THROW(example_record("fine", "001_allreduce"), Error);
}

// A time below the roofline floor is no speedup to chase: the model is told so, and no speedup is quoted.
TEST(Feedback, ATimeBelowTheRooflineQuotesNoSpeedup) {
  json j = record_to_json(example_record("correct", "001_allreduce"));
  j["timing"]["below_roofline"] = {{"floor_us", 10.0}, {"factor", 2.0}, {"methods", {{"pkb", 0.5}}}};
  std::string text = feedback_text(record_from_json(j));
  EXPECT_NE(text.find("below the roofline floor"), std::string::npos) << text;
  EXPECT_EQ(text.find("- speedup:"), std::string::npos) << text;
  EXPECT_EQ(text.find("SOL% yours"), std::string::npos) << text;
}

TEST(Feedback, MismatchSummaryNamesOutputRankCallAndFirstIndex) {
  ResultRecord r = example_record("incorrect", "001_allreduce");
  json bad = r.fields["checks"]["comparisons"][0];
  bad.erase("trial");
  bad["timed_call"] = true;
  r.fields["checks"]["comparisons"].push_back(bad);
  r.fields["checks"]["inputs_mutated"] = json::array({{{"rank", 0}, {"trial", 1}, {"input", "x"}}});
  std::string text = feedback_text(r);
  EXPECT_NE(text.find("- output 'out', rank 1, trial 0: 4096 elements outside tolerance (0 NaN), max abs error 1.98"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("first bad element at flat index 524288"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1, a call during timing"), std::string::npos) << text;
  EXPECT_NE(text.find("- rank 0 modified input 'x'"), std::string::npos) << text;
}

}  // namespace
}  // namespace pkb::prompt
