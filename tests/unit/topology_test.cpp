#include "spec/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "spec/catalog.h"
#include "spec/roofline.h"
#include "test_util.h"

TEST(Topology, ShippedFilesLoadWithSources) {
  auto files = pkb::list_topologies(pkb::repo_root() / "topologies");
  std::set<std::string> names;
  for (const auto& f : files) names.insert(pkb::load_topology(f).name);
  for (const char* required : {"h200_2", "h100_8", "b200_72"}) EXPECT_TRUE(names.count(required)) << required;
  pkb::Topology h200 = pkb::find_topology("h200_2");
  EXPECT_EQ(h200.gpu_count, 2);
  EXPECT_EQ(h200.sm_count, 132);
  EXPECT_EQ(h200.links_per_gpu, 18);
  EXPECT_DOUBLE_EQ(h200.peer_write_GBps, 365);
  EXPECT_FALSE(h200.multicast);
  EXPECT_DOUBLE_EQ(h200.roofline_link_GBps(), 365);
  EXPECT_TRUE(pkb::find_topology("h100_8").multicast);
  EXPECT_THROW(pkb::find_topology("nope"), pkb::Error);
}

TEST(Topology, NumberWithoutSourceIsRejected) {
  std::ifstream in(pkb::repo_root() / "topologies/h200_2.json");
  nlohmann::json j = nlohmann::json::parse(in);
  j["sources"].erase("gpu.l2_bytes");
  pkb::test::TempDir tmp;
  pkb::test::write_file(tmp.path() / "x.json", j.dump());
  try {
    pkb::load_topology(tmp.path() / "x.json");
    FAIL();
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no source given for gpu.l2_bytes"), std::string::npos) << e.what();
  }
}

// SOL% of an fp32 run against the bf16 tensor-core rate would put the math floor ~12x too low on H200.
TEST(Topology, RooflineUsesTheRateOfTheRunsDtype) {
  pkb::Topology h200 = pkb::find_topology("h200_2");
  EXPECT_DOUBLE_EQ(h200.math_TFLOPs(pkb::DType::bf16), 790);
  EXPECT_DOUBLE_EQ(h200.math_TFLOPs(pkb::DType::f32), 67);
  pkb::Catalog c = pkb::load_catalog(pkb::repo_root() / "problems");
  const pkb::ProblemSpec* gemm = nullptr;
  for (const auto& p : c.problems)
    if (!pkb::world_size_violation(p, 2, p.parameters) && p.roofline.count("flops") &&
        p.roofline.at("flops").eval(pkb::resolve_run(p, 2, pkb::DType::bf16).vars()) > 0)
      gemm = &p;
  ASSERT_NE(gemm, nullptr);
  auto bf16 = pkb::roofline_floor(*gemm, pkb::resolve_run(*gemm, 2, pkb::DType::bf16), "h200_2");
  auto fp32 = pkb::roofline_floor(*gemm, pkb::resolve_run(*gemm, 2, pkb::DType::f32), "h200_2");
  EXPECT_EQ(fp32["math_TFLOPs"], 67);
  EXPECT_NEAR(fp32["math_us"].get<double>() / bf16["math_us"].get<double>(),
              790.0 / 67 * fp32["flops"].get<double>() / bf16["flops"].get<double>(), 1e-9);
}

TEST(Topology, RoundTripsThroughJson) {
  pkb::Topology t = pkb::find_topology("h200_2");
  pkb::Topology back = pkb::Topology::from_json(t.to_json(), "roundtrip");
  EXPECT_EQ(back.to_json(), t.to_json());
}

// Rooflines default to this machine's GPU: an H100's SOL% against H200 rates would read ~30% low.
TEST(Topology, RooflinesDefaultToThisMachinesGpu) {
  EXPECT_EQ(pkb::default_roofline_topology("NVIDIA H100 80GB HBM3"), "h100_8");
  EXPECT_EQ(pkb::default_roofline_topology("NVIDIA H200"), "h200_2");
  EXPECT_EQ(pkb::default_roofline_topology("Tesla V100-SXM2-16GB"), "h200_2");  // no file of its own
  EXPECT_EQ(pkb::default_roofline_topology(""), "h200_2");                      // no NVIDIA driver
  EXPECT_EQ(pkb::roofline_topology("b200_72"), "b200_72");                      // a name given stands
  pkb::Catalog c = pkb::load_catalog(pkb::repo_root() / "problems");
  const pkb::ProblemSpec& allreduce = c.problems.front();
  const auto run = pkb::resolve_run(allreduce, 2, pkb::DType::bf16);
  EXPECT_EQ(pkb::roofline_floor(allreduce, run, "h100_8")["topology"], "h100_8");
  EXPECT_EQ(pkb::roofline_floor(allreduce, run, "")["topology"], pkb::default_roofline_topology());
}
