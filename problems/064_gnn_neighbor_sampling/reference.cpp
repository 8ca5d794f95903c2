#include "reference/reference.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace problem_064 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

using Ids = std::vector<int64_t>;

Ids host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return Ids(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

int64_t total(const Ids& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// One uneven all-to-all of int64 values through the device: send_rows[q] values to rank q.
Ids exchange(const RankContext& ctx, const Ids& send, const Ids& send_rows, const Ids& recv_rows) {
  at::Tensor in = at::tensor(send, at::kLong).to(ctx.device);
  at::Tensor out = at::empty({total(recv_rows)}, in.options());
  ctx.comm->all_to_all(in, out, send_rows, recv_rows);
  return host_vector(out);
}

Ids sum_segments(const Ids& values, const Ids& sizes) {
  Ids sums;
  size_t at = 0;
  for (int64_t n : sizes) {
    sums.push_back(std::accumulate(values.begin() + at, values.begin() + at + n, int64_t{0}));
    at += n;
  }
  return sums;
}

at::Tensor padded(const Ids& v, int64_t capacity, const at::Device& device) {
  Ids p(capacity, -1);
  std::copy(v.begin(), v.end(), p.begin());
  return at::tensor(p, at::kLong).to(device);
}

// Host-side bookkeeping as PKB's reference does (its loops run on the host too); the frontier, the requests and
// the replies travel through the communicator.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world;
  const Ids seeds = host_vector(in[0]), colptr = host_vector(in[1]), col = host_vector(in[2]);
  const Ids owner_of = host_vector(in[3]);
  std::unordered_map<int64_t, int64_t> local_id;
  Ids nodes;
  for (int64_t v : seeds) local_id.emplace(v, static_cast<int64_t>(nodes.size())), nodes.push_back(v);
  Ids frontier = seeds, all_nodes, all_dst, all_edges;
  for (int64_t fanout : {ctx.scalar("fanout_0"), ctx.scalar("fanout_1")}) {
    // Requests grouped by owner, stable.
    Ids order(frontier.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return owner_of[frontier[a]] < owner_of[frontier[b]]; });
    Ids send_rows(W, 0), sorted;
    for (int64_t i : order) ++send_rows[owner_of[frontier[i]]], sorted.push_back(frontier[i]);
    const Ids ones(W, 1);
    const Ids recv_rows = exchange(ctx, send_rows, ones, ones);
    const Ids requested = exchange(ctx, sorted, send_rows, recv_rows);

    // The owner's replies: first min(fanout, degree) neighbours and their edge ids.
    Ids take, neighbours, edges;
    for (int64_t v : requested) {
      const int64_t n = std::min(fanout, colptr[v + 1] - colptr[v]);
      take.push_back(n);
      for (int64_t j = 0; j < n; ++j) neighbours.push_back(col[colptr[v] + j]), edges.push_back(colptr[v] + j);
    }
    const Ids my_take = exchange(ctx, take, recv_rows, send_rows);
    const Ids reply_rows = sum_segments(take, recv_rows), got_rows = sum_segments(my_take, send_rows);
    const Ids got_nodes = exchange(ctx, neighbours, reply_rows, got_rows);
    const Ids got_edges = exchange(ctx, edges, reply_rows, got_rows);

    // Sorted position i holds frontier position order[i]; lay the segments out in frontier order.
    Ids start(frontier.size()), count(frontier.size());
    for (size_t i = 0, at = 0; i < order.size(); at += my_take[i], ++i)
      start[order[i]] = at, count[order[i]] = my_take[i];
    Ids next;
    for (size_t p = 0; p < frontier.size(); ++p)
      for (int64_t j = 0; j < count[p]; ++j) {
        const int64_t v = got_nodes[start[p] + j];
        all_nodes.push_back(v), all_dst.push_back(frontier[p]), all_edges.push_back(got_edges[start[p] + j]);
        if (local_id.emplace(v, static_cast<int64_t>(nodes.size())).second) nodes.push_back(v), next.push_back(v);
      }
    frontier = next;
  }
  Ids row, dst;
  for (size_t e = 0; e < all_nodes.size(); ++e)
    row.push_back(local_id[all_nodes[e]]), dst.push_back(local_id[all_dst[e]]);

  const int64_t S = ctx.param("S"), K1 = ctx.param("K1"), K2 = ctx.param("K2");
  const int64_t node_cap = std::min<int64_t>(owner_of.size(), S * (1 + K1 + K1 * K2)), edge_cap = S * (K1 + K1 * K2);
  return {
      padded(nodes, node_cap, ctx.device), padded(row, edge_cap, ctx.device), padded(dst, edge_cap, ctx.device),
      padded(all_edges, edge_cap, ctx.device),
      at::tensor(Ids{static_cast<int64_t>(nodes.size()), static_cast<int64_t>(row.size())}, at::kLong).to(ctx.device)};
}

// One process, straight from the definition: each hop walks the frontier in order and reads each node's CSC list.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t S = ctx.param("S"), K1 = ctx.param("K1"), K2 = ctx.param("K2");
  std::vector<Tensors> out;
  for (const auto& x : in) {
    auto seeds = x[0].accessor<int64_t, 1>();
    auto colptr = x[1].accessor<int64_t, 1>();
    auto col = x[2].accessor<int64_t, 1>();
    const int64_t n = x[3].size(0);
    std::vector<int64_t> label(n, -1), L;
    for (int64_t i = 0; i < seeds.size(0); ++i) label[seeds[i]] = static_cast<int64_t>(L.size()), L.push_back(seeds[i]);
    size_t frontier_begin = 0, frontier_end = L.size();
    std::vector<int64_t> row, dst, edge;
    for (int64_t k : {ctx.scalar("fanout_0"), ctx.scalar("fanout_1")}) {
      for (size_t p = frontier_begin; p < frontier_end; ++p) {
        const int64_t v = L[p];
        for (int64_t e = colptr[v]; e < colptr[v + 1] && e < colptr[v] + k; ++e) {
          const int64_t u = col[e];
          if (label[u] < 0) label[u] = static_cast<int64_t>(L.size()), L.push_back(u);
          row.push_back(label[u]), dst.push_back(label[v]), edge.push_back(e);
        }
      }
      frontier_begin = frontier_end, frontier_end = L.size();
    }
    const int64_t node_cap = std::min<int64_t>(n, S * (1 + K1 + K1 * K2)), edge_cap = S * (K1 + K1 * K2);
    auto pad = [](std::vector<int64_t> v, int64_t cap) {
      v.resize(cap, -1);
      return at::tensor(v, at::kLong);
    };
    out.push_back({pad(L, node_cap), pad(row, edge_cap), pad(dst, edge_cap), pad(edge, edge_cap),
                   at::tensor(std::vector<int64_t>{static_cast<int64_t>(L.size()), static_cast<int64_t>(row.size())},
                              at::kLong)});
  }
  return out;
}

// Seeds (r S + i) mod n as PKB; the column pointer from the sorted random cut points, 0 and DEG n at the ends.
Tensors prepare(const OracleContext&, int rank, Tensors raw) {
  const int64_t n = raw[3].size(0), S = raw[0].size(0), edges = raw[2].size(0);
  raw[0] = (at::arange(S, at::kLong) + rank * S).remainder(n);
  at::Tensor colptr = std::get<0>(raw[1].sort());
  colptr[0] = 0;
  colptr[n] = edges;
  raw[1] = colptr;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("gnn_neighbor_sampling", reference, oracle, prepare);

}  // namespace problem_064
