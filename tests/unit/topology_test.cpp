#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "spec/catalog.h"
#include "spec/topology.h"
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

TEST(Topology, RoundTripsThroughJson) {
  pkb::Topology t = pkb::find_topology("h200_2");
  pkb::Topology back = pkb::Topology::from_json(t.to_json(), "roundtrip");
  EXPECT_EQ(back.to_json(), t.to_json());
}
