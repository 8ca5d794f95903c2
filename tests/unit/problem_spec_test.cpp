#include "spec/problem_spec.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "spec/catalog.h"
#include "test_util.h"

using json = nlohmann::json;
using pkb::test::TempDir;
using pkb::test::write_file;

namespace {

json valid_spec() {
  return json::parse(R"({
    "id": 42, "slug": "toy", "title": "Toy", "category": "tensor_parallel", "source": "tests",
    "description": "A valid spec that the tests break one field at a time.",
    "world_size": {"min": 1, "max": 16, "constraints": ["N % W == 0"]},
    "parameters": {"M": 64, "N": 32},
    "groups": [{"name": "pairs", "color": "r / 2", "key": "r % 2"}],
    "inputs": [
      {"name": "x", "shape": ["M", "N / W"], "init": {"dist": "normal"}},
      {"name": "idx", "shape": ["M"], "dtype": "int64", "init": {"dist": "randint", "low": 0, "high": "N"}},
      {"name": "root", "value": 0}
    ],
    "outputs": [{"name": "y", "shape_cases": [{"when": "r == 0", "shape": ["W", "M"]}], "shape": ["M"]}],
    "tolerance": {"atol": 0.01, "rtol": 0.01},
    "roofline": {"link_bytes": "M * N * E", "hbm_bytes": "2 * M * N * E", "flops": "M * N"}
  })");
}

// Writes spec into <tmp>/042_toy/problem.json and returns the loader's error ("" if it loaded).
std::string load_error(const json& spec, const std::string& folder = "042_toy") {
  TempDir tmp;
  write_file(tmp.path() / folder / "problem.json", spec.dump());
  try {
    pkb::load_problem(tmp.path() / folder);
  } catch (const pkb::Error& e) {
    return e.what();
  }
  return "";
}

void expect_error(const std::function<void(json&)>& mutate, const std::string& field, const std::string& why) {
  json j = valid_spec();
  mutate(j);
  std::string err = load_error(j);
  ASSERT_FALSE(err.empty()) << "expected an error mentioning " << field;
  EXPECT_NE(err.find("042_toy/problem.json"), std::string::npos) << err;  // names the file
  EXPECT_NE(err.find(field), std::string::npos) << err;                   // names the field
  EXPECT_NE(err.find(why), std::string::npos) << err;                     // says why
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
}

}  // namespace

TEST(ProblemSpec, ValidSpecLoads) {
  TempDir tmp;
  write_file(tmp.path() / "042_toy/problem.json", valid_spec().dump());
  pkb::ProblemSpec s = pkb::load_problem(tmp.path() / "042_toy");
  EXPECT_EQ(s.id, 42);
  EXPECT_EQ(s.category, pkb::Category::tensor_parallel);
  ASSERT_EQ(s.inputs.size(), 3u);
  EXPECT_TRUE(s.inputs[2].scalar.has_value());
  EXPECT_EQ(s.tensor_input_count(), 2u);
  auto run = pkb::resolve_run(s, 4, pkb::DType::bf16);
  EXPECT_EQ(pkb::tensor_shape(*s.inputs[0].tensor, run, 1), (std::vector<int64_t>{64, 8}));
  EXPECT_EQ(pkb::tensor_shape(s.outputs[0], run, 0), (std::vector<int64_t>{4, 64}));  // shape case for rank 0
  EXPECT_EQ(pkb::tensor_shape(s.outputs[0], run, 3), (std::vector<int64_t>{64}));     // fallback
  EXPECT_EQ(pkb::tensor_dtype(*s.inputs[1].tensor, run), pkb::DType::i64);
  EXPECT_EQ(pkb::tensor_dtype(*s.inputs[0].tensor, run), pkb::DType::bf16);
  EXPECT_EQ(s.roofline.at("link_bytes").eval(run.vars()), 64 * 32 * 2);
}

TEST(ProblemSpec, BadJson) {
  TempDir tmp;
  write_file(tmp.path() / "042_toy/problem.json", "{\"id\": 42,");
  try {
    pkb::load_problem(tmp.path() / "042_toy");
    FAIL();
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("042_toy/problem.json"), std::string::npos);
  }
}

TEST(ProblemSpec, MissingFile) {
  TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "042_toy");
  try {
    pkb::load_problem(tmp.path() / "042_toy");
    FAIL();
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("problem.json: cannot open"), std::string::npos) << e.what();
  }
}

TEST(ProblemSpec, MissingFields) {
  for (const char* f : {"id", "slug", "title", "category", "world_size", "parameters", "inputs", "outputs", "roofline"})
    expect_error([&](json& j) { j.erase(f); }, f, "missing required field");
  expect_error([](json& j) { j["roofline"].erase("flops"); }, "roofline.flops", "missing required field");
  expect_error([](json& j) { j["inputs"][0].erase("shape"); }, "inputs[0].shape", "missing required field");
  expect_error([](json& j) { j["inputs"][0].erase("init"); }, "inputs[0].init", "missing required field");
}

TEST(ProblemSpec, UnknownDtypeAndCategory) {
  expect_error([](json& j) { j["inputs"][0]["dtype"] = "bfloat17"; }, "inputs[0].dtype", "unknown dtype 'bfloat17'");
  expect_error([](json& j) { j["outputs"][0]["dtype"] = "f8"; }, "outputs[0].dtype", "unknown dtype");
  expect_error([](json& j) { j["category"] = "magic"; }, "category", "unknown category");
  expect_error([](json& j) { j["inputs"][0]["init"]["dist"] = "constant"; }, "inputs[0].init.dist",
               "unknown distribution");
}

TEST(ProblemSpec, BadShapeExpressions) {
  expect_error([](json& j) { j["inputs"][0]["shape"][1] = "N / "; }, "inputs[0].shape[1]", "unexpected end");
  expect_error([](json& j) { j["inputs"][0]["shape"][0] = "K"; }, "inputs[0].shape[0]", "unknown name 'K'");
  expect_error([](json& j) { j["inputs"][0]["shape"][0] = "M - 64"; }, "inputs[0].shape[0]", "evaluates to 0");
  expect_error([](json& j) { j["outputs"][0]["shape_cases"][0]["shape"][1] = "M - 100"; }, "outputs[0].shape[1]",
               "evaluates to -36 on rank 0");
  expect_error([](json& j) { j["inputs"][0]["shape"][0] = 1.5; }, "inputs[0].shape[0]", "must be an expression");
  expect_error([](json& j) { j["roofline"]["flops"] = "M *"; }, "roofline.flops", "unexpected end");
}

TEST(ProblemSpec, WorldSizeConstraints) {
  // No W in range satisfies the constraints.
  expect_error([](json& j) { j["world_size"]["constraints"] = {"W % 7 == 3", "W < 3"}; }, "world_size", "no W");
  expect_error([](json& j) { j["world_size"]["min"] = 0; }, "world_size.min", "must be >= 1");
  expect_error([](json& j) { j["world_size"]["constraints"] = {"N % Q == 0"}; }, "world_size.constraints[0]",
               "unknown name 'Q'");
  TempDir tmp;
  write_file(tmp.path() / "042_toy/problem.json", valid_spec().dump());
  auto s = pkb::load_problem(tmp.path() / "042_toy");
  EXPECT_FALSE(pkb::world_size_violation(s, 4, s.parameters));
  auto why = pkb::world_size_violation(s, 3, s.parameters);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("N % W == 0"), std::string::npos);
  EXPECT_TRUE(pkb::world_size_violation(s, 32, s.parameters));  // above max
  EXPECT_THROW(pkb::resolve_run(s, 3, pkb::DType::bf16), pkb::Error);
  EXPECT_THROW(pkb::resolve_run(s, 4, pkb::DType::bf16, {{"Q", 1}}), pkb::Error);  // unknown override
  // An override can make a W legal or illegal.
  EXPECT_NO_THROW(pkb::resolve_run(s, 3, pkb::DType::bf16, {{"N", 48}}));
}

TEST(ProblemSpec, StructuralMistakes) {
  expect_error([](json& j) { j["colour"] = 1; }, "colour", "unknown field");
  expect_error([](json& j) { j["inputs"][1]["name"] = "x"; }, "inputs[1].name", "duplicate name 'x'");
  expect_error([](json& j) { j["parameters"]["W"] = 2; }, "parameters.W", "reserved");
  expect_error([](json& j) { j["parameters"]["M"] = "64"; }, "parameters.M", "must be an integer");
  expect_error([](json& j) { j["outputs"] = json::array(); }, "outputs", "at least one output");
  expect_error([](json& j) { j["groups"][0]["color"] = "r / X"; }, "groups[0].color", "unknown name 'X'");
  expect_error([](json& j) { j["inputs"][0]["init"]["std"] = -1; }, "inputs[0].init.std", "must be > 0");
  expect_error([](json& j) { j["tolerance"]["atol"] = -1; }, "tolerance.atol", "must be >= 0");
  expect_error([](json& j) { j["slug"] = "other"; }, "slug", "must be '042_other'");
  expect_error([](json& j) { j["deviations"] = {""}; }, "deviations", "must be an array of sentences");
  expect_error([](json& j) { j["deviations"] = {"TODO"}; }, "deviations", "must be an array of sentences");
  expect_error([](json& j) { j["deviations"] = {1}; }, "deviations", "must be an array of sentences");
}

TEST(Catalog, SelectionSyntax) {
  TempDir tmp;
  for (int id : {1, 2, 3, 9, 10, 30}) {
    json j = valid_spec();
    j["id"] = id;
    j["slug"] = "p" + std::to_string(id);
    char folder[32];
    std::snprintf(folder, sizeof folder, "%03d_p%d", id, id);
    write_file(tmp.path() / folder / "problem.json", j.dump());
  }
  write_file(tmp.path() / "004_broken/problem.json", "{");
  pkb::Catalog c = pkb::load_catalog(tmp.path());
  ASSERT_EQ(c.problems.size(), 6u);
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_NE(c.errors[0].find("004_broken/problem.json"), std::string::npos);
  auto ids = [&](const std::string& sel) {
    std::vector<int> out;
    for (auto* p : c.select(sel)) out.push_back(p->id);
    return out;
  };
  EXPECT_EQ(ids("all"), (std::vector<int>{1, 2, 3, 9, 10, 30}));
  EXPECT_EQ(ids("9-30"), (std::vector<int>{9, 10, 30}));
  EXPECT_EQ(ids("3,1,2"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ids("p10,001_p1,2-3,2"), (std::vector<int>{1, 2, 3, 10}));
  EXPECT_THROW(c.select("5"), pkb::Error);
  EXPECT_THROW(c.select("11-20"), pkb::Error);
  EXPECT_THROW(c.select("30-9"), pkb::Error);
  EXPECT_THROW(c.select("nope"), pkb::Error);
  EXPECT_THROW(c.select(""), pkb::Error);

  // Loading only what a selection names (pkb eval): the same problems, and a broken one elsewhere is never read.
  auto loaded = [&](const std::string& sel) {
    std::vector<int> out;
    for (const auto& p : pkb::load_catalog(tmp.path(), sel).problems) out.push_back(p.id);
    return out;
  };
  EXPECT_EQ(loaded("9-30"), (std::vector<int>{9, 10, 30}));
  EXPECT_EQ(loaded("p10,001_p1,2-3,2"), (std::vector<int>{1, 2, 3, 10}));
  EXPECT_EQ(pkb::load_catalog(tmp.path(), "p10").select("p10").at(0)->slug, "p10");
  EXPECT_THROW(pkb::load_catalog(tmp.path(), "5"), pkb::Error);
  try {
    pkb::load_catalog(tmp.path(), "4");  // selected, and its problem.json does not parse: that error, not "no problem"
    ADD_FAILURE() << "a broken problem.json loaded";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("004_broken/problem.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(pkb::load_catalog(tmp.path() / "missing", "1"), pkb::Error);
}

TEST(Catalog, ShippedProblemsAllLoad) {
  pkb::Catalog c = pkb::load_catalog(pkb::repo_root() / "problems");
  for (const auto& e : c.errors) ADD_FAILURE() << e;
  EXPECT_GE(c.problems.size(), 8u);
  for (int id = 1; id <= 8; ++id) EXPECT_NE(c.find(id), nullptr) << "problem " << id;
}

// Outside checks ran ParallelKernelBench's own references on pkb's input bytes: 039, 061 and 079 give other outputs
// (by design). Each must say so in its deviations, naming what differs, so a reader comparing with PKB knows.
TEST(Catalog, ProblemsWhoseOutputsDifferFromPkbDocumentIt) {
  pkb::Catalog c = pkb::load_catalog(pkb::repo_root() / "problems");
  const std::map<int, std::string> differs = {
      {39, "transpose"}, {61, "gaussian_ids"}, {79, "ties"}};  // a word the deviation must contain
  for (const auto& [id, word] : differs) {
    const pkb::ProblemSpec* p = c.find(id);
    ASSERT_NE(p, nullptr) << "problem " << id;
    bool named = false;
    for (const auto& d : p->deviations) named |= d.find(word) != std::string::npos;
    EXPECT_TRUE(named) << p->folder() << ": no deviation mentions '" << word << "'";
  }
}

TEST(ProblemSpec, ParamOverridesParseOrSayWhich) {
  EXPECT_EQ(pkb::parse_param_overrides({"M=64", "N=-3"}), (std::map<std::string, int64_t>{{"M", 64}, {"N", -3}}));
  for (const char* bad : {"M", "=4", "M=", "M=abc", "M=12x"}) {
    try {
      pkb::parse_param_overrides({bad});
      ADD_FAILURE() << bad;
    } catch (const pkb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}
