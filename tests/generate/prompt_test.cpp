// Prompt rendering: the ABI comes verbatim from the headers, shapes are concrete for the chosen W, the
// example appears only one-shot, the hardware block carries the topology's numbers, and bad input is an error.
#include "prompt/prompt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "prompt/format.h"
#include "prompt/template.h"
#include "spec/catalog.h"

namespace pkb::prompt {
namespace {

namespace fs = std::filesystem;

const Catalog& catalog() {
  static Catalog c = load_catalog(repo_root() / "problems");
  return c;
}

const ProblemSpec& problem(int id) {
  const ProblemSpec* p = catalog().find(id);
  if (!p) throw Error("test: no problem " + std::to_string(id));
  return *p;
}

Prompt build(int id, int world, Variant v = Variant::one_shot, const std::string& topology = "") {
  PromptOptions o;
  o.world = world;
  o.variant = v;
  o.topology = topology;
  return build_prompt(problem(id), o);
}

std::string without_trailing_newlines(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(Prompt, AbiTextIsTheHeaderFilesText) {
  Prompt p = build(1, 2);
  fs::path inc = repo_root() / "harness" / "include" / "pkb";
  std::string abi = without_trailing_newlines(read_text(inc / "abi.h"));
  std::string dev = without_trailing_newlines(read_text(inc / "device.cuh"));
  ASSERT_GT(abi.size(), 1000u);
  EXPECT_TRUE(contains(p.user, "```c\n" + abi + "\n```")) << "abi.h is not in the prompt verbatim";
  EXPECT_TRUE(contains(p.user, "```cuda\n" + dev + "\n```")) << "device.cuh is not in the prompt verbatim";
}

TEST(Prompt, AbiIsReadAtRenderTime) {
  // A different include directory changes the prompt: the text is never a stale copy.
  fs::path dir = fs::temp_directory_path() / ("pkb-prompt-inc-" + std::to_string(::getpid()));
  fs::create_directories(dir / "pkb");
  std::ofstream(dir / "pkb" / "abi.h") << "/* ABI MARKER 42 */\n";
  std::ofstream(dir / "pkb" / "device.cuh") << "// DEVICE MARKER 43\n";
  PromptOptions o;
  o.include_dir = dir;
  Prompt p = build_prompt(problem(1), o);
  fs::remove_all(dir);
  EXPECT_TRUE(contains(p.user, "/* ABI MARKER 42 */"));
  EXPECT_TRUE(contains(p.user, "// DEVICE MARKER 43"));
}

TEST(Prompt, RankDependentShapesAreConcreteAtW2AndW4) {
  std::string w2 = build(5, 2).user;  // scatter: rank 0 holds (W, M, N), the others (M, N)
  EXPECT_TRUE(contains(w2,
                       "in[0] `tensor`: bf16\n    rank 0: shape (2, 1024, 1024) (4 MiB)\n"
                       "    rank 1: shape (1024, 1024) (2 MiB)\n"))
      << w2;
  EXPECT_TRUE(contains(w2, "World size W = 2: ranks 0-1"));
  std::string w4 = build(5, 4).user;
  EXPECT_TRUE(contains(w4, "    rank 0: shape (4, 1024, 1024) (8 MiB)\n    ranks 1-3: shape (1024, 1024) (2 MiB)\n"))
      << w4;
  EXPECT_TRUE(contains(w4, "out[0] `out`: bf16, shape (1024, 1024) (2 MiB) on every rank"));
}

TEST(Prompt, ShapesFollowWorldSizeParametersAndDtype) {
  EXPECT_TRUE(contains(build(8, 4).user, "in[0] `tensor`: bf16, shape (4, 1024, 1024) (8 MiB) on every rank"));
  PromptOptions o;
  o.world = 4;
  o.params = {{"M", 512}};
  o.dtype = DType::f32;
  std::string u = build_prompt(problem(8), o).user;
  EXPECT_TRUE(contains(u, "in[0] `tensor`: fp32, shape (4, 512, 1024) (8 MiB) on every rank")) << u;
  EXPECT_TRUE(contains(u, "Parameters: M = 512, N = 1024"));
  o.params = {{"NOPE", 1}};
  EXPECT_THROW(build_prompt(problem(8), o), Error);
}

TEST(Prompt, ScalarArgumentsAreGivenTheirValue) {
  // A copy of the gather problem whose root is a scalar argument, dst = W - 1.
  fs::path dir = fs::temp_directory_path() / ("pkb-prompt-" + std::to_string(::getpid())) / problem(6).folder();
  fs::create_directories(dir.parent_path());
  fs::copy(problem(6).dir, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  nlohmann::json j = nlohmann::json::parse(read_text(dir / "problem.json"));
  j["inputs"].push_back({{"name", "dst"}, {"value", "W - 1"}});
  std::ofstream(dir / "problem.json") << j.dump(2);
  PromptOptions o;
  o.world = 4;
  std::string u = build_prompt(load_problem(dir), o).user;
  fs::remove_all(dir.parent_path());
  EXPECT_TRUE(contains(u, "- solution() argument dst = 3: a constant of this run, not in in[]; use this value\n")) << u;
}

TEST(Prompt, ZeroShotOmitsTheExample) {
  std::string one = build(1, 2, Variant::one_shot).user, zero = build(1, 2, Variant::zero_shot).user;
  std::string solution = read_text(repo_root() / "prompts" / "examples" / "peer_add" / "solution.cu");
  std::string reference = read_text(repo_root() / "prompts" / "examples" / "peer_add" / "reference.py");
  EXPECT_TRUE(contains(one, without_trailing_newlines(solution)));
  EXPECT_TRUE(contains(one, without_trailing_newlines(reference)));
  EXPECT_TRUE(contains(one, "## Worked example"));
  EXPECT_FALSE(contains(zero, "peer_add("));
  EXPECT_FALSE(contains(zero, "Worked example"));
  EXPECT_FALSE(contains(zero, "\n\n\n## ")) << "the dropped example left a gap";
  EXPECT_FALSE(contains(one, "\n\n\n## ")) << "the example left a gap";
  EXPECT_LT(zero.size() + solution.size(), one.size());
  // Apart from the example the two variants say the same.
  EXPECT_TRUE(contains(zero, "## The problem: All-reduce (sum)"));
  EXPECT_EQ(build(1, 2, Variant::zero_shot).system, build(1, 2, Variant::one_shot).system);
}

TEST(Prompt, ReferenceProgramIsIncludedVerbatim) {
  std::string ref = without_trailing_newlines(read_text(problem(6).dir / "reference.py"));
  EXPECT_TRUE(contains(build(6, 2).user, "```python\n" + ref + "\n```"));
}

TEST(Prompt, EveryProblemRendersWithoutLeftoverPlaceholders) {
  for (const auto& p : catalog().problems)
    for (Variant v : {Variant::zero_shot, Variant::one_shot}) {
      PromptOptions o;
      o.variant = v;
      Prompt pr = build_prompt(p, o);
      EXPECT_FALSE(std::regex_search(pr.user, std::regex(R"(\{\{[A-Za-z0-9_]+\}\})"))) << p.folder();
      EXPECT_TRUE(contains(pr.user, "exactly one ```cuda fenced block")) << p.folder();
      EXPECT_FALSE(pr.system.empty());
    }
}

TEST(Prompt, UnknownTopologyIsAnError) {
  try {
    build(1, 2, Variant::one_shot, "no_such_machine");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no_such_machine")) << e.what();
  }
  try {
    build(1, 4, Variant::one_shot, "h200_2");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "h200_2 has 2 GPUs; W=4 needs at least 4")) << e.what();
  }
}

TEST(Prompt, DefaultTopologyIsTheSmallestThatFits) {
  EXPECT_EQ(build(1, 2).topology, "h200_2");
  EXPECT_EQ(build(1, 4).topology, "h100_8");
  EXPECT_EQ(build(1, 8).topology, "h100_8");
  EXPECT_EQ(build(1, 9).topology, "b200_72");
  EXPECT_THROW(choose_topology("", 1000), Error);
  // The smallest machine that fits W, preferring this machine's GPU: 2x H100 is not described as H200.
  EXPECT_EQ(choose_topology("", 2, "").name, "h200_2");
  EXPECT_EQ(choose_topology("", 2, "NVIDIA H200").name, "h200_2");
  EXPECT_EQ(choose_topology("", 2, "NVIDIA H100 80GB HBM3").name, "h100_8");
  EXPECT_EQ(choose_topology("", 4, "NVIDIA H200").name, "h100_8");  // no H200 topology has 4 GPUs
}

TEST(Prompt, HardwareBlockCarriesTheTopologysNumbers) {
  std::string h = build(1, 2, Variant::one_shot, "h200_2").user;
  for (const char* s : {"Machine `h200_2`", "2 x NVIDIA H200 (compute capability 9.0), 132 SMs and 60 MiB of L2",
                        "140.4 GiB of HBM per GPU", "about 4200 GB/s", "about 790 TFLOP/s",
                        "nvlink4, 18 links per GPU at 26.5 GB/s per direction each: 477 GB/s",
                        "loading from one peer's memory reaches about 335 GB/s",
                        "storing into one peer's memory reaches about 365 GB/s", "reach about 374 GB/s",
                        "NVSwitch: no. NVLink multicast (multimem instructions on multicast objects): no.", "sm_90a"})
    EXPECT_TRUE(contains(h, s)) << s;
}

TEST(Prompt, HardwareBlockFollowsEachTopologyFile) {
  fs::path dir = repo_root() / "prompts";
  for (const auto& file : list_topologies(repo_root() / "topologies")) {
    Topology t = load_topology(file);
    std::string h = render_hardware(t, dir);
    SCOPED_TRACE(t.name);
    for (const std::string& s : {t.gpu_name, std::to_string(t.sm_count) + " SMs", binary_size(t.l2_bytes) + " of L2",
                                 binary_size(t.hbm_bytes) + " of HBM", num(t.hbm_GBps) + " GB/s",
                                 num(t.per_gpu_link_GBps) + " GB/s per direction per GPU",
                                 std::string("NVSwitch: ") + (t.nvswitch ? "yes" : "no"),
                                 std::string("multicast objects): ") + (t.multicast ? "yes" : "no")})
      EXPECT_TRUE(contains(h, s)) << s << "\n" << h;
    // A rate the file does not give is left out, not printed as 0.
    EXPECT_EQ(contains(h, "loading from one peer"), t.peer_read_GBps > 0);
    EXPECT_EQ(contains(h, "copy engines"), t.copy_engine_GBps > 0);
    EXPECT_FALSE(contains(h, " 0 GB/s"));
  }
}

TEST(Prompt, PrecisionNoteCarriesDtypeAndTolerance) {
  std::string u = build(1, 2).user;
  EXPECT_TRUE(contains(u, "Floating-point inputs and outputs are bf16 (unit roundoff 0.00390625)"));
  EXPECT_TRUE(contains(u, "<= 0.01 + 0.01 * |expected| + 8 * 0.00390625 * rms(expected)")) << u;
  EXPECT_TRUE(contains(u, "<= 0.01. Integer"));
  PromptOptions o;
  o.dtype = DType::f32;
  EXPECT_TRUE(contains(build_prompt(problem(1), o).user, "are fp32 (unit roundoff 5.96046e-08)"));
}

TEST(Prompt, VariantNamesRoundTrip) {
  for (Variant v : {Variant::zero_shot, Variant::one_shot}) EXPECT_EQ(variant_from_name(variant_name(v)), v);
  EXPECT_FALSE(variant_from_name("two-shot"));
}

}  // namespace
}  // namespace pkb::prompt
