#include "models/extract.h"

#include <gtest/gtest.h>

namespace pkb::models {
namespace {

constexpr const char* kKernel = "extern \"C\" int pkb_run(void** b, int n) {\n  return 0;\n}\n";

std::string fence(const std::string& label, const std::string& code, const std::string& f = "```") {
  return f + label + "\n" + code + f + "\n";
}

TEST(ExtractCode, TakesTheCudaBlock) {
  auto e = extract_code("Sure:\n\n" + fence("cuda", kKernel) + "\nDone.", FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, kKernel);
  EXPECT_EQ(e.language, "cuda");
}

TEST(ExtractCode, AcceptsEveryCppLabelAndUnlabelled) {
  for (std::string label : {"cu", "cpp", "c++", "c", "CUDA", ""}) {
    auto e = extract_code(fence(label, kKernel), FinishReason::stop);
    EXPECT_EQ(e.status, CodeStatus::ok) << label;
    EXPECT_EQ(e.code, kKernel) << label;
  }
}

TEST(ExtractCode, IgnoresOtherLanguages) {
  auto e =
      extract_code(fence("python", "def pkb_run():\n    pass\n") + fence("bash", "nvcc x.cu\n"), FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::no_code);
  EXPECT_TRUE(e.code.empty());
}

TEST(ExtractCode, PrefersTheBlockDefiningPkbRunOverALargerOne) {
  std::string helper = "// helper\n" + std::string(500, '/') + "\n__global__ void k(float* x) { x[0] = 1; }\n";
  std::string usage = "int main() { pkb_run(nullptr, 0); return 0; }\n";  // a call, not a definition
  auto e = extract_code(fence("cuda", helper) + fence("cpp", kKernel) + fence("cpp", usage), FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, kKernel);
  EXPECT_EQ(e.language, "cpp");
}

// "Here is a first version ... and here is the optimized final kernel": the last complete block defining
// pkb_run is the answer, even when an earlier draft is larger.
TEST(ExtractCode, PrefersTheLastCompleteBlockDefiningPkbRun) {
  std::string draft = "// draft with a long comment explaining a slow first attempt at length\n" + std::string(kKernel);
  std::string final_kernel = "extern \"C\" int pkb_run(void** b, int n) { return 1; }\n";
  auto e =
      extract_code("First:\n" + fence("cuda", draft) + "Final:\n" + fence("cuda", final_kernel), FinishReason::stop);
  EXPECT_EQ(e.code, final_kernel);
  // A last block left open (the text ends inside it) is not the final kernel when a complete one exists.
  auto open = extract_code(fence("cuda", final_kernel) + "Variant:\n```cuda\n" + kKernel, FinishReason::stop);
  EXPECT_EQ(open.code, final_kernel);
}

TEST(ExtractCode, FallsBackToTheLargestBlock) {
  std::string small = "int a;\n", large = "__global__ void k(float* x) { x[0] = 1; }\n";
  auto e = extract_code(fence("cuda", small) + fence("cuda", large), FinishReason::stop);
  EXPECT_EQ(e.code, large);
}

TEST(ExtractCode, GeminiCookbookAnswerTakesTheUnlabelledBlockNotPython) {
  // Two blocks: python code, then its unlabelled output. Only the unlabelled one is a candidate.
  auto e = extract_code("```python\nprint(1)\n```\n\nOutput:\n\n```\n[1, 2, 3, 4, 5]\n```", FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, "[1, 2, 3, 4, 5]\n");
}

TEST(ExtractCode, TildeFences) {
  auto e = extract_code(fence("cuda", kKernel, "~~~"), FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, kKernel);
}

TEST(ExtractCode, BacktickFenceInsideTildeBlockDoesNotCloseIt) {
  std::string code = "```\nint pkb_run(void** b, int n) { return 0; }\n```\n";
  auto e = extract_code("~~~cuda\n" + code + "~~~\n", FinishReason::stop);
  EXPECT_EQ(e.code, code);
}

TEST(ExtractCode, LongerClosingFenceAndIndentedFences) {
  auto e = extract_code("  ````cuda\n" + std::string(kKernel) + "  `````\n", FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, kKernel);
}

TEST(ExtractCode, CrlfLineEndings) {
  auto e = extract_code("Text\r\n```cuda\r\nint pkb_run(void** b, int n) {\r\n  return 0;\r\n}\r\n```\r\n",
                        FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, "int pkb_run(void** b, int n) {\n  return 0;\n}\n");
}

TEST(ExtractCode, UnterminatedFinalFenceIsTakenWhenNotTruncated) {
  auto e = extract_code("```cuda\n" + std::string(kKernel), FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code, kKernel);
}

TEST(ExtractCode, UnterminatedFinalFenceWithLengthIsTruncated) {
  auto e = extract_code("```cuda\nextern \"C\" int pkb_run(void** b, int n) {\n  for (", FinishReason::length);
  EXPECT_EQ(e.status, CodeStatus::truncated);
  EXPECT_NE(e.code.find("for ("), std::string::npos);  // partial code is still recorded
}

TEST(ExtractCode, LengthIsTruncatedEvenWithACompleteBlock) {
  auto e = extract_code(fence("cuda", kKernel) + "Now let me explain", FinishReason::length);
  EXPECT_EQ(e.status, CodeStatus::truncated);
  EXPECT_EQ(e.code, kKernel);
}

TEST(ExtractCode, NothingIsNoCode) {
  auto e = extract_code("I cannot help with that.", FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::no_code);
  EXPECT_EQ(extract_code("", FinishReason::other).status, CodeStatus::no_code);
  EXPECT_EQ(extract_code("```cuda\n\n```\n", FinishReason::stop).status, CodeStatus::no_code);  // empty block
}

TEST(ExtractCode, NoCodeAndLengthIsTruncated) {
  EXPECT_EQ(extract_code("Let me think about tiling", FinishReason::length).status, CodeStatus::truncated);
}

TEST(ExtractCode, BareCodeDefiningPkbRun) {
  auto e = extract_code(std::string("#include <cuda.h>\n") + kKernel, FinishReason::stop);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_NE(e.code.find("pkb_run"), std::string::npos);
}

TEST(ExtractCode, InlineTripleBackticksAreNotFences) {
  auto e = extract_code("Use ```cuda``` fences.\n" + fence("cuda", kKernel), FinishReason::stop);
  EXPECT_EQ(e.code, kKernel);
}

TEST(DefinesFunction, DefinitionsVersusCallsAndDeclarations) {
  EXPECT_TRUE(defines_function("int pkb_run(int a) { return a; }", "pkb_run"));
  EXPECT_TRUE(defines_function("extern \"C\"\nint\npkb_run(void** b,\n int n)\n{\n}", "pkb_run"));
  EXPECT_TRUE(defines_function("void* pkb_run(int (*f)(int)) noexcept {}", "pkb_run"));
  EXPECT_TRUE(defines_function("auto pkb_run(int a) -> int { return a; }", "pkb_run"));
  EXPECT_FALSE(defines_function("int pkb_run(int a);", "pkb_run"));
  EXPECT_FALSE(defines_function("return pkb_run(x);", "pkb_run"));
  EXPECT_FALSE(defines_function("if (pkb_run(x)) { }", "pkb_run"));
  EXPECT_FALSE(defines_function("int r = pkb_run(x); { }", "pkb_run"));
  EXPECT_FALSE(defines_function("int my_pkb_run(int a) { }", "pkb_run"));
  EXPECT_FALSE(defines_function("int pkb_run_impl(int a) { }", "pkb_run"));
}

TEST(SplitThink, BlockBeforeAnswer) {
  auto s = split_think("<think>draft: ```cuda\nint pkb_run() {}\n```</think>\n\nFinal answer");
  EXPECT_EQ(s.answer, "Final answer");
  EXPECT_NE(s.reasoning.find("draft"), std::string::npos);
  EXPECT_EQ(s.reasoning.find("<think>"), std::string::npos);
}

TEST(SplitThink, MissingOpeningTagDeepSeekR1Style) {
  auto s = split_think("reasoning here\n</think>\nanswer");
  EXPECT_EQ(s.answer, "answer");
  EXPECT_EQ(s.reasoning, "reasoning here");
}

TEST(SplitThink, SeveralBlocksUseTheLastClose) {
  auto s = split_think("<think>a</think> <think>b</think>answer");
  EXPECT_EQ(s.answer, "answer");
  EXPECT_NE(s.reasoning.find('a'), std::string::npos);
  EXPECT_NE(s.reasoning.find('b'), std::string::npos);
}

// A model that writes about tags ("no <think> output") must not lose the kernel that follows.
TEST(SplitThink, LiteralTagsInTheAnswerAreAnswerText) {
  std::string answer = "Here is the kernel (I print no <think> tags):\n" + fence("cuda", kKernel);
  auto s = split_think(answer);
  EXPECT_EQ(s.answer, answer);
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(extract_code(s.answer, FinishReason::stop).code, kKernel);
  std::string closing = fence("cuda", std::string(kKernel) + "// strips </think> from logs\n") + "done";
  EXPECT_EQ(split_think(closing).answer, closing);  // a </think> after a fence is code, not the end of reasoning
}

TEST(SplitThink, UnclosedThinkIsAllReasoning) {
  auto s = split_think("<think>still thinking when cut off");
  EXPECT_EQ(s.answer, "");
  EXPECT_EQ(s.reasoning, "still thinking when cut off");
}

TEST(SplitThink, NoTagsLeavesTextAlone) {
  auto s = split_think("  plain\n");
  EXPECT_EQ(s.answer, "  plain\n");
  EXPECT_EQ(s.reasoning, "");
}

}  // namespace
}  // namespace pkb::models
