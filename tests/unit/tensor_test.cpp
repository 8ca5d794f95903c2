// Inputs, safetensors and comparison: the pieces that decide what a rank sees and whether its output passes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "check/compare.h"
#include "core/error.h"
#include "core/parallel.h"
#include "inputs/inputs.h"
#include "io/safetensors.h"
#include "reference/libtorch_version.h"
#include "reference/reference.h"
#include "spec/catalog.h"
#include "test_util.h"

using pkb::test::TempDir;
using pkb::test::write_file;

namespace {

pkb::ProblemSpec toy_problem(TempDir& tmp) {
  write_file(tmp.path() / "007_toy/problem.json", R"({
    "id": 7, "slug": "toy", "title": "t", "category": "other", "source": "s", "description": "d",
    "world_size": {"min": 1}, "parameters": {"M": 16, "N": 8},
    "inputs": [
      {"name": "x", "shape": ["M", "N"], "init": {"dist": "normal", "mean": 3, "std": 2}},
      {"name": "w", "shape": ["N"], "replicated": true, "init": {"dist": "uniform", "low": -1, "high": 1}},
      {"name": "i", "shape": ["M"], "dtype": "int64", "init": {"dist": "randint", "low": 5, "high": "N + 5"}},
      {"name": "p", "shape": ["M", "N"], "dtype": "int64", "init": {"dist": "randperm"}},
      {"name": "b", "shape": ["M", "N"], "dtype": "fp32", "init": {"dist": "bernoulli", "p": 0.25}}
    ],
    "outputs": [{"name": "y", "shape": ["M"]}],
    "roofline": {"link_bytes": 0, "hbm_bytes": 0, "flops": 0}
  })");
  return pkb::load_problem(tmp.path() / "007_toy");
}

}  // namespace

TEST(Inputs, DeterministicRandomAndDistributed) {
  TempDir tmp;
  auto spec = toy_problem(tmp);
  auto run = pkb::resolve_run(spec, 4, pkb::DType::bf16);
  auto a = pkb::make_inputs(spec, run, 1, 0, 7);
  auto b = pkb::make_inputs(spec, run, 1, 0, 7);
  for (size_t i = 0; i < a.tensors.size(); ++i) EXPECT_TRUE(a.tensors[i].equal(b.tensors[i])) << a.names[i];
  EXPECT_EQ(a.tensors[0].scalar_type(), at::kBFloat16);
  EXPECT_EQ(a.tensors[2].scalar_type(), at::kLong);
  EXPECT_EQ(a.tensors[4].scalar_type(), at::kFloat);

  auto other_rank = pkb::make_inputs(spec, run, 2, 0, 7);
  auto other_trial = pkb::make_inputs(spec, run, 1, 1, 7);
  auto other_seed = pkb::make_inputs(spec, run, 1, 0, 8);
  EXPECT_FALSE(a.tensors[0].equal(other_rank.tensors[0]));
  EXPECT_FALSE(a.tensors[0].equal(other_trial.tensors[0]));
  EXPECT_FALSE(a.tensors[0].equal(other_seed.tensors[0]));
  EXPECT_TRUE(a.tensors[1].equal(other_rank.tensors[1])) << "replicated inputs agree across ranks";
  EXPECT_FALSE(a.tensors[1].equal(other_trial.tensors[1])) << "but change with the trial";

  // Distributions (a larger draw so the statistics are tight).
  auto big = pkb::resolve_run(spec, 1, pkb::DType::f32, {{"M", 256}, {"N", 256}});
  auto x = pkb::make_inputs(spec, big, 0, 0, 1);
  at::Tensor normal = x.tensors[0];
  EXPECT_NEAR(normal.mean().item<double>(), 3.0, 0.05);
  EXPECT_NEAR(normal.std().item<double>(), 2.0, 0.05);
  EXPECT_GT(std::get<0>(at::_unique(normal.to(at::kFloat))).numel(), 60000) << "never a constant fill";
  EXPECT_GE(x.tensors[1].min().item<double>(), -1.0);
  EXPECT_LT(x.tensors[1].max().item<double>(), 1.0);
  EXPECT_GE(x.tensors[2].min().item<int64_t>(), 5);
  EXPECT_LE(x.tensors[2].max().item<int64_t>(), 256 + 4);
  EXPECT_GT(std::get<0>(at::_unique(x.tensors[2])).numel(), 100);
  at::Tensor perm = x.tensors[3].view(-1);
  EXPECT_TRUE(std::get<0>(perm.sort()).equal(at::arange(256 * 256, at::kLong))) << "randperm is a permutation";
  EXPECT_NEAR(x.tensors[4].mean().item<double>(), 0.25, 0.01);
}

TEST(Inputs, SameBytesWhateverTheHostThreadCount) {
  TempDir tmp;
  auto spec = toy_problem(tmp);
  auto big = pkb::resolve_run(spec, 1, pkb::DType::bf16, {{"M", 256}, {"N", 256}});  // several chunks each
  const int saved = pkb::host_threads();
  pkb::set_host_threads(1);
  auto serial = pkb::make_inputs(spec, big, 0, 3, 11);
  pkb::set_host_threads(3);
  auto threaded = pkb::make_inputs(spec, big, 0, 3, 11);
  pkb::set_host_threads(saved);
  for (size_t i = 0; i < serial.tensors.size(); ++i)
    EXPECT_TRUE(serial.tensors[i].equal(threaded.tensors[i])) << serial.names[i];
}

// Half-precision inputs are rounded inside the generator; they must be the bytes ATen's conversion of the fp32 draw
// gives (what they were when the conversion ran afterwards), or every cached reference and check would shift.
TEST(Inputs, HalfPrecisionInputsRoundLikeAtenFromTheFp32Draw) {
  TempDir tmp;
  auto spec = toy_problem(tmp);
  auto fp32 = pkb::make_inputs(spec, pkb::resolve_run(spec, 2, pkb::DType::f32, {{"M", 512}, {"N", 256}}), 1, 2, 5);
  for (auto [dtype, aten] : {std::pair{pkb::DType::bf16, at::kBFloat16}, std::pair{pkb::DType::f16, at::kHalf}}) {
    auto half = pkb::make_inputs(spec, pkb::resolve_run(spec, 2, dtype, {{"M", 512}, {"N", 256}}), 1, 2, 5);
    for (size_t i : {0, 1}) {  // the normal and the uniform input follow the run's float dtype
      ASSERT_EQ(half.tensors[i].scalar_type(), aten) << half.names[i];
      EXPECT_TRUE(half.tensors[i].equal(fp32.tensors[i].to(aten))) << half.names[i];
    }
  }
}

TEST(Inputs, ReplicatedWithinAGroup) {
  TempDir tmp;
  write_file(tmp.path() / "008_toy2/problem.json", R"({
    "id": 8, "slug": "toy2", "title": "t", "category": "other", "source": "s", "description": "d",
    "world_size": {"min": 1}, "parameters": {"M": 8}, "groups": [{"name": "pair", "color": "r / 2"}],
    "inputs": [{"name": "x", "shape": ["M"], "replicated_in": "pair", "init": {"dist": "normal"}},
               {"name": "y", "shape": ["M"], "init": {"dist": "normal"}}],
    "outputs": [{"name": "o", "shape": ["M"]}],
    "roofline": {"link_bytes": 0, "hbm_bytes": 0, "flops": 0}
  })");
  auto spec = pkb::load_problem(tmp.path() / "008_toy2");
  auto run = pkb::resolve_run(spec, 4, pkb::DType::f32);
  std::vector<at::Tensor> x, y;
  for (int r = 0; r < 4; ++r) {
    auto in = pkb::make_inputs(spec, run, r, 0, 3);
    x.push_back(in.tensors[0]);
    y.push_back(in.tensors[1]);
  }
  EXPECT_TRUE(x[0].equal(x[1]) && x[2].equal(x[3])) << "same values within a group";
  EXPECT_FALSE(x[0].equal(x[2])) << "different across groups";
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(x[r].equal(y[r])) << "never a rank's own per-rank draw";
  EXPECT_FALSE(x[0].equal(y[0]) || x[0].equal(y[1]));

  write_file(tmp.path() / "009_toy3/problem.json",
             R"({"id": 9, "slug": "toy3", "title": "t", "category": "other", "source": "s", "description": "d",
    "world_size": {}, "parameters": {"M": 8}, "inputs": [{"name": "x", "shape": ["M"], "replicated_in": "tp", "init": {"dist": "normal"}}],
    "outputs": [{"name": "o", "shape": ["M"]}], "roofline": {"link_bytes": 0, "hbm_bytes": 0, "flops": 0}})");
  EXPECT_THROW(pkb::load_problem(tmp.path() / "009_toy3"), pkb::Error) << "an unknown group is an error";
}

TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir tmp;
  pkb::NamedTensors t;
  t.names = {"bf", "f32", "i64", "b", "scalar"};
  t.tensors = {at::randn({3, 5}).to(at::kBFloat16), at::randn({2, 2, 2}), at::arange(7, at::kLong), at::rand({4}) > 0.5,
               at::ones({}, at::kFloat)};
  t.metadata["scalar.dst"] = "0";
  pkb::write_safetensors(tmp.path() / "a.safetensors", t);
  auto r = pkb::read_safetensors(tmp.path() / "a.safetensors");
  ASSERT_EQ(r.names, t.names) << "order preserved";
  for (size_t i = 0; i < t.names.size(); ++i) {
    EXPECT_EQ(r.tensors[i].scalar_type(), t.tensors[i].scalar_type());
    EXPECT_TRUE(r.tensors[i].equal(t.tensors[i])) << t.names[i];
  }
  EXPECT_EQ(r.metadata.at("scalar.dst"), "0");
  EXPECT_THROW(r.get("missing"), pkb::Error);
}

TEST(Safetensors, CorruptFilesGiveClearErrors) {
  TempDir tmp;
  pkb::NamedTensors t{{"x"}, {at::randn({64})}, {}};
  pkb::write_safetensors(tmp.path() / "ok.safetensors", t);
  std::ifstream in(tmp.path() / "ok.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto expect_error = [&](const std::string& content, const std::string& why) {
    write_file(tmp.path() / "bad.safetensors", content);
    try {
      pkb::read_safetensors(tmp.path() / "bad.safetensors");
      ADD_FAILURE() << "no error for " << why;
    } catch (const pkb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.safetensors"), std::string::npos);
    }
  };
  expect_error(bytes.substr(0, 4), "truncated");
  expect_error(bytes.substr(0, bytes.size() - 10), "data offsets");
  std::string bad_header = bytes;
  bad_header[9] = '#';
  expect_error(bad_header, "bad header JSON");
  EXPECT_THROW(pkb::read_safetensors(tmp.path() / "absent.safetensors"), pkb::Error);
}

TEST(Compare, PoliciesDifferAsDocumented) {
  pkb::Tolerance tol;  // atol = rtol = 1e-2, gamma 8, rel_l2 1e-2
  at::Tensor exp = at::full({1000}, 10.0, at::kDouble);
  // 0.15 off at 10 on a few elements: outside 0.01 + 0.01 * 10 = 0.11 (pkb); inside robust's extra
  // gamma * eps(bf16) * rms = 8 * 2^-8 * 10 slack, with a small relative L2 error.
  at::Tensor near = exp.clone();
  near.slice(0, 0, 10) += 0.15;
  EXPECT_FALSE(pkb::compare(pkb::Policy::paper_allclose, near, exp, tol, at::kBFloat16).pass);
  auto robust = pkb::compare(pkb::Policy::robust, near, exp, tol, at::kBFloat16);
  EXPECT_TRUE(robust.pass) << pkb::describe(robust);
  // The same error in fp32 has no slack: eps(fp32) is tiny.
  EXPECT_FALSE(pkb::compare(pkb::Policy::robust, near, exp, tol, at::kFloat).pass);
}

// Expected -inf (a masked log-prob) must be matched exactly and must not inflate the slack: before, rms(expected)
// was inf, so with gamma > 0 every finite element passed, and the L2 ratio was 0 / inf.
TEST(Compare, InfiniteExpectedValuesAreMatchedExactlyAndLeaveTheScaleFinite) {
  pkb::Tolerance tol;  // gamma 8
  at::Tensor exp = at::randn({1000}, at::kDouble);
  exp.slice(0, 0, 100).fill_(-INFINITY);
  EXPECT_TRUE(pkb::compare(pkb::Policy::robust, exp.clone(), exp, tol, at::kBFloat16).pass);
  at::Tensor wrong = exp.clone();
  wrong.slice(0, 500, 1000) += 1.0;  // finite elements off by 1: must fail
  auto c = pkb::compare(pkb::Policy::robust, wrong, exp, tol, at::kBFloat16);
  EXPECT_FALSE(c.pass) << pkb::describe(c);
  EXPECT_EQ(c.mismatches, 500);
  at::Tensor finite_for_inf = exp.clone();
  finite_for_inf[5] = -30.0;  // a finite value where -inf is expected
  EXPECT_FALSE(pkb::compare(pkb::Policy::robust, finite_for_inf, exp, tol, at::kBFloat16).pass);
}

TEST(Compare, CatchesWrongNanShapeAndSystematicBias) {
  pkb::Tolerance tol;
  at::Tensor exp = at::randn({4096}, at::kDouble);
  EXPECT_TRUE(pkb::compare(pkb::Policy::robust, exp.clone(), exp, tol, at::kFloat).pass);
  at::Tensor one_wrong = exp.clone();
  one_wrong[17] = 100.0;
  auto c = pkb::compare(pkb::Policy::robust, one_wrong, exp, tol, at::kFloat);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.mismatches, 1);
  EXPECT_EQ(c.first_bad, 17);
  at::Tensor nan = exp.clone();
  nan[3] = std::nan("");
  c = pkb::compare(pkb::Policy::paper_allclose, nan, exp, tol, at::kFloat);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.nan_count, 1);
  EXPECT_FALSE(pkb::compare(pkb::Policy::paper_allclose, exp.view({64, 64}), exp, tol, at::kFloat).pass);
  EXPECT_NE(pkb::compare(pkb::Policy::paper_allclose, exp.view({64, 64}), exp, tol, at::kFloat).error.find("shape"),
            std::string::npos);
  // Every element within the elementwise bound but biased: the relative L2 bound catches it under robust.
  pkb::Tolerance loose = tol;
  loose.atol = 1.0;
  at::Tensor biased = exp + 0.5;
  EXPECT_FALSE(pkb::compare(pkb::Policy::robust, biased, exp, loose, at::kFloat).pass);
  EXPECT_TRUE(pkb::compare(pkb::Policy::paper_allclose, biased, exp, loose, at::kFloat).pass);
  // Integers must match exactly under both policies.
  at::Tensor ints = at::arange(10, at::kLong);
  EXPECT_FALSE(pkb::compare(pkb::Policy::paper_allclose, ints + 1, ints, loose, at::kLong).pass);
  EXPECT_TRUE(pkb::compare(pkb::Policy::robust, ints.clone(), ints, loose, at::kLong).pass);
}

// Records name the libtorch in use: pip's version.py beside torch/lib, else the soname's version.
TEST(LibtorchVersion, ReadFromTheLibraryInUse) {
  pkb::test::TempDir tmp;
  auto pip = tmp.path() / "site-packages/torch";
  pkb::test::write_file(pip / "lib/libtorch_cpu.so", "");
  pkb::test::write_file(pip / "version.py",
                        "from typing import Optional\n__version__ = '2.11.0+cu130'\ncuda = '13.0'\n");
  EXPECT_EQ(pkb::libtorch_version_at(pip / "lib/libtorch_cpu.so", "?"), "2.11.0+cu130");
  pkb::test::write_file(pip / "version.py", "__version__: str = \"2.12.0\"\n");
  EXPECT_EQ(pkb::libtorch_version_at(pip / "lib/libtorch_cpu.so", "?"), "2.12.0") << "annotated";

  auto debian = tmp.path() / "usr/lib";
  pkb::test::write_file(debian / "libtorch_cpu.so.1.13.0", "");
  std::filesystem::create_symlink("libtorch_cpu.so.1.13.0", debian / "libtorch_cpu.so.1.13");
  EXPECT_EQ(pkb::libtorch_version_at(debian / "libtorch_cpu.so.1.13", "?"), "1.13.0") << "the real file's name";

  pkb::test::write_file(tmp.path() / "plain/libtorch_cpu.so", "");
  EXPECT_EQ(pkb::libtorch_version_at(tmp.path() / "plain/libtorch_cpu.so", "built against 9.9"), "built against 9.9");

  std::string here = pkb::loaded_libtorch_version("?");
  EXPECT_TRUE(!here.empty() && std::isdigit(static_cast<unsigned char>(here[0]))) << here;
}

TEST(Registry, EveryShippedProblemHasAReferenceAndOracle) {
  pkb::Catalog c = pkb::load_catalog(pkb::repo_root() / "problems");
  for (const auto& p : c.problems) {
    const pkb::ReferenceImpl* impl = pkb::find_reference(p.slug);
    ASSERT_NE(impl, nullptr) << p.folder() << " has no registered reference.cpp";
    EXPECT_NE(impl->reference, nullptr);
    EXPECT_NE(impl->oracle, nullptr);
    EXPECT_TRUE(std::filesystem::exists(p.dir / "reference.py")) << p.folder();
  }
}
