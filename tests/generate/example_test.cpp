// The in-context example (prompts/examples/peer_add) must be a candidate pkb would accept: it passes the lint,
// defines the ABI's entry points, uses the device-side primitives it is there to teach, and compiles with the
// very command pkb eval uses against harness/include.
#include <gtest/gtest.h>

#include <cstdlib>

#include "../unit/test_util.h"
#include "compile/compiler.h"
#include "models/extract.h"
#include "prompt/template.h"
#include "spec/catalog.h"

namespace pkb {
namespace {

std::filesystem::path example_dir() { return repo_root() / "prompts" / "examples" / "peer_add"; }

TEST(PromptExample, SolutionPassesTheLint) {
  auto findings = lint_source(prompt::read_text(example_dir() / "solution.cu"), false);
  for (const auto& f : findings) ADD_FAILURE() << f.rule << " at line " << f.line << ": " << f.text;
}

TEST(PromptExample, SolutionDefinesTheEntryPointsAndUsesThePrimitives) {
  std::string code = prompt::read_text(example_dir() / "solution.cu");
  for (const char* fn : {"pkb_setup", "pkb_run", "pkb_teardown"}) EXPECT_TRUE(models::defines_function(code, fn)) << fn;
  for (const char* use : {"ctx->heap_bases_device", "pkb_peer_ptr(", "pkb_barrier(", "ctx->symm_alloc(", "ctx->stream"})
    EXPECT_NE(code.find(use), std::string::npos) << use;
  // What the model is told to extract from its own answer must be extractable from ours.
  auto ex = models::extract_code("Design first.\n\n```cuda\n" + code + "```\n", models::FinishReason::stop);
  EXPECT_EQ(ex.status, models::CodeStatus::ok);
}

TEST(PromptExample, SolutionCompilesAgainstTheAbi) {
  if (std::system("nvcc --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "nvcc is not on PATH";
  CompileOptions o;
  o.cuda = true;
  o.cache_dir =
      std::filesystem::path(PKB_TEST_CACHE) / "compile";  // shared with the CLI tests: keyed by source and flags
  o.include_dir = repo_root() / "harness" / "include";
  o.timeout_s = 600;
  CompileResult r = compile_candidate(example_dir() / "solution.cu", o);
  EXPECT_EQ(r.status, CompileStatus::ok) << r.log;
}

}  // namespace
}  // namespace pkb
