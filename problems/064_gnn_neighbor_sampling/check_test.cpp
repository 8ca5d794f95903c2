// Problem 64: the node list's order (first appearance) and its deduplication decide every local id. A sampler
// written with a hash map passes; one that deduplicates only against the nodes known before the hop (so a node
// sampled twice in one hop is appended twice), one that appends each hop's new nodes in sorted order, and one
// that takes every neighbour (no fanout) fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_064 {  // named, not anonymous: the references build as unity batches

enum class Variant { hash_map, dedup_before_hop, sorted_new_nodes, no_fanout };

pkb::Tensors sample(const pkb::Tensors& x, const std::vector<int64_t>& fanouts, int64_t node_cap, int64_t edge_cap,
                    Variant v) {
  auto seeds = x[0].accessor<int64_t, 1>();
  auto colptr = x[1].accessor<int64_t, 1>();
  auto col = x[2].accessor<int64_t, 1>();
  std::unordered_map<int64_t, int64_t> id;
  std::vector<int64_t> L, frontier, row, dst, edge, nodes_out, dst_nodes;
  for (int64_t i = 0; i < seeds.size(0); ++i) id[seeds[i]] = i, L.push_back(seeds[i]), frontier.push_back(seeds[i]);
  for (int64_t k : fanouts) {
    if (v == Variant::no_fanout) k = 1 << 30;
    std::vector<int64_t> sampled, next;
    const std::unordered_map<int64_t, int64_t> known = id;
    for (int64_t u : frontier)
      for (int64_t e = colptr[u]; e < std::min(colptr[u + 1], colptr[u] + k); ++e)
        sampled.push_back(col[e]), nodes_out.push_back(col[e]), dst_nodes.push_back(u), edge.push_back(e);
    for (int64_t w : sampled) {
      bool seen = v == Variant::dedup_before_hop ? known.count(w) > 0 : id.count(w) > 0;
      if (v == Variant::dedup_before_hop && !seen) {
        next.push_back(w);
        if (!id.count(w)) id[w] = static_cast<int64_t>(L.size());
        L.push_back(w);
        continue;
      }
      if (!seen) next.push_back(w), id[w] = static_cast<int64_t>(L.size()), L.push_back(w);
    }
    if (v == Variant::sorted_new_nodes) {
      std::sort(next.begin(), next.end());
      for (size_t i = 0; i < next.size(); ++i)
        id[next[i]] = static_cast<int64_t>(L.size() - next.size() + i), L[L.size() - next.size() + i] = next[i];
    }
    frontier = next;
  }
  for (size_t e = 0; e < nodes_out.size(); ++e) row.push_back(id[nodes_out[e]]), dst.push_back(id[dst_nodes[e]]);
  const int64_t n_nodes = static_cast<int64_t>(L.size()), n_edges = static_cast<int64_t>(row.size());
  auto pad = [](std::vector<int64_t> a, int64_t cap) {
    a.resize(std::max<int64_t>(cap, static_cast<int64_t>(a.size())), -1);
    a.resize(cap);
    return at::tensor(a, at::kLong);
  };
  return {pad(L, node_cap), pad(row, edge_cap), pad(dst, edge_cap), pad(edge, edge_cap),
          at::tensor(std::vector<int64_t>{n_nodes, n_edges}, at::kLong)};
}

TEST(Problem064, FirstAppearanceOrderPassesOthersFail) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/064_gnn_neighbor_sampling");
  for (int W : {2, 3}) {
    auto run = pkb::resolve_run(s, W, pkb::DType::bf16, s.test_parameters);
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto ctx = pkb::oracle_context(s, run);
    auto want = pkb::expected_outputs(s, run, in);
    const std::vector<int64_t> fanouts{ctx.scalar("fanout_0"), ctx.scalar("fanout_1")};
    auto passes = [&](Variant v) {
      for (int r = 0; r < W; ++r) {
        pkb::Tensors got = sample(in[r], fanouts, want[r][0].size(0), want[r][1].size(0), v);
        for (int i = 0; i < 5; ++i)
          if (!pkb::compare(pkb::Policy::robust, got[i], want[r][i], s.tolerance, at::kLong).pass) return false;
      }
      return true;
    };
    EXPECT_TRUE(passes(Variant::hash_map)) << "W=" << W;
    EXPECT_FALSE(passes(Variant::dedup_before_hop)) << "W=" << W;
    EXPECT_FALSE(passes(Variant::sorted_new_nodes)) << "W=" << W;
    EXPECT_FALSE(passes(Variant::no_fanout)) << "W=" << W;
  }
}

}  // namespace check_064
