// Every communicator operation on every rank, against values each rank can compute for all peers.
// Run under mpirun: `comm_test` (MPI on CPU tensors), `comm_test --cuda` (NCCL on the GPUs) or
// `comm_test --staged` (CUDA tensors staged through host memory over MPI, for ranks sharing a GPU; on a machine
// without CUDA the same communicator on CPU tensors).
// Exits non-zero on the first mismatch, naming the operation, dtype and rank.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/communicator.h"
#include "core/error.h"

using namespace pkb;

namespace {

int g_failures = 0;
int g_rank = 0;
at::Device g_device = at::kCPU;

// Rank q's contribution: small integers, exact in bf16 under any summation order.
at::Tensor contribution(int q, int64_t n, at::ScalarType dt) {
  return (at::arange(n, at::kLong).remainder(7) + q + 1).to(dt).to(g_device);
}

void expect_equal(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  at::Tensor g = got.to(at::kCPU).to(at::kDouble), w = want.to(at::kCPU).to(at::kDouble);
  if (g.sizes() != w.sizes() || !g.equal(w)) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
    ++g_failures;
  }
}

void test_world(Communicator& c, at::ScalarType dt, const std::string& tag) {
  const int W = c.size(), r = c.rank();
  const int64_t n = 12 * W;
  at::Tensor sum = at::zeros({n}, at::kDouble);
  for (int q = 0; q < W; ++q) sum += contribution(q, n, at::kDouble).to(at::kCPU);

  at::Tensor t = contribution(r, n, dt);
  c.all_reduce(t, ReduceOp::sum);
  expect_equal(t, sum, tag + " all_reduce sum");
  t = contribution(r, n, dt);
  c.all_reduce(t, ReduceOp::max);
  expect_equal(t, contribution(W - 1, n, at::kDouble), tag + " all_reduce max");

  at::Tensor gathered = at::empty({W * n}, contribution(0, 1, dt).options());
  c.all_gather(contribution(r, n, dt), gathered);
  for (int q = 0; q < W; ++q)
    expect_equal(gathered.slice(0, q * n, (q + 1) * n), contribution(q, n, dt), tag + " all_gather");

  at::Tensor rs_out = at::empty({n / W}, gathered.options());
  c.reduce_scatter(contribution(r, n, dt), rs_out, ReduceOp::sum);
  expect_equal(rs_out, sum.slice(0, r * (n / W), (r + 1) * (n / W)), tag + " reduce_scatter");

  int root = W - 1;
  t = contribution(r, n, dt);
  c.broadcast(t, root);
  expect_equal(t, contribution(root, n, dt), tag + " broadcast");

  t = contribution(r, n, dt);
  c.reduce(t, root, ReduceOp::sum);
  expect_equal(t, r == root ? sum : contribution(r, n, at::kDouble), tag + " reduce (non-root unchanged)");

  at::Tensor g_out = r == root ? at::empty({W * n}, gathered.options()) : at::Tensor();
  c.gather(contribution(r, n, dt), g_out, root);
  if (r == root)
    for (int q = 0; q < W; ++q)
      expect_equal(g_out.slice(0, q * n, (q + 1) * n), contribution(q, n, dt), tag + " gather");

  at::Tensor s_in;  // only the root's is read
  if (r == root) {
    std::vector<at::Tensor> parts;
    for (int q = 0; q < W; ++q) parts.push_back(contribution(100 + q, n, dt));
    s_in = at::cat(parts);
  }
  at::Tensor s_out = at::empty({n}, gathered.options());
  c.scatter(s_in, s_out, root);
  expect_equal(s_out, contribution(100 + r, n, dt), tag + " scatter");

  // Equal all-to-all: block d of rank q is contribution(10*q + d).
  std::vector<at::Tensor> blocks;
  for (int d = 0; d < W; ++d) blocks.push_back(contribution(10 * r + d, 6, dt));
  at::Tensor a2a_out = at::empty({W * 6}, gathered.options());
  c.all_to_all(at::cat(blocks), a2a_out);
  for (int q = 0; q < W; ++q)
    expect_equal(a2a_out.slice(0, q * 6, (q + 1) * 6), contribution(10 * q + r, 6, dt), tag + " all_to_all");
  // The same exchange between differently shaped tensors ((W * 6) in, (W, 2, 3) out): equal chunks of numel / W.
  at::Tensor a2a_shaped = at::empty({W, 2, 3}, gathered.options());
  c.all_to_all(at::cat(blocks), a2a_shaped);
  expect_equal(a2a_shaped.reshape({-1}), a2a_out, tag + " all_to_all into another shape");

  // Uneven all-to-all along rows of a (rows, 3) tensor: rank q sends q + d + 1 rows to rank d.
  std::vector<int64_t> send_rows, recv_rows;
  std::vector<at::Tensor> send_parts;
  for (int d = 0; d < W; ++d) {
    send_rows.push_back(r + d + 1);
    recv_rows.push_back(d + r + 1);
    send_parts.push_back(contribution(10 * r + d, (r + d + 1) * 3, dt).view({-1, 3}));
  }
  int64_t total_recv = 0;
  for (auto v : recv_rows) total_recv += v;
  at::Tensor uneven_out = at::empty({total_recv, 3}, gathered.options());
  c.all_to_all(at::cat(send_parts), uneven_out, send_rows, recv_rows);
  int64_t off = 0;
  for (int q = 0; q < W; ++q) {
    expect_equal(uneven_out.slice(0, off, off + recv_rows[q]),
                 contribution(10 * q + r, recv_rows[q] * 3, dt).view({-1, 3}),
                 tag + " all_to_all uneven from " + std::to_string(q));
    off += recv_rows[q];
  }

  // Ring send/recv: even ranks send first to avoid relying on buffering.
  if (W > 1) {
    int next = (r + 1) % W, prev = (r + W - 1) % W;
    at::Tensor recv_buf = at::empty({n}, gathered.options());
    if (r % 2 == 0) {
      c.send(contribution(r, n, dt), next);
      c.recv(recv_buf, prev);
    } else {
      c.recv(recv_buf, prev);
      c.send(contribution(r, n, dt), next);
    }
    c.synchronize();
    expect_equal(recv_buf, contribution(prev, n, dt), tag + " send/recv ring");
  }
  c.barrier();
}

void test_split(Communicator& world) {
  // Two groups by parity, ordered by descending world rank: group rank 0 is the largest world rank.
  int color = world.rank() % 2;
  auto sub = world.split(color, -world.rank());
  int members = 0;
  for (int q = 0; q < world.size(); ++q) members += (q % 2 == color);
  if (sub->size() != members) {
    std::fprintf(stderr, "rank %d: FAIL split size %d != %d\n", g_rank, sub->size(), members);
    ++g_failures;
  }
  at::Tensor t = at::full({4}, double(world.rank()), at::TensorOptions().dtype(at::kFloat).device(g_device));
  sub->all_reduce(t, ReduceOp::sum);
  double want = 0;
  for (int q = 0; q < world.size(); ++q) want += (q % 2 == color) ? q : 0;
  expect_equal(t, at::full({4}, want, at::kDouble), "split all_reduce");
  at::Tensor root_val = at::full({1}, double(world.rank()), at::TensorOptions().dtype(at::kFloat).device(g_device));
  sub->broadcast(root_val, 0);
  int largest = world.size() - 1;
  while (largest % 2 != color) --largest;
  expect_equal(root_val, at::full({1}, double(largest), at::kDouble), "split key order");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  bool cuda = argc > 1 && std::strcmp(argv[1], "--cuda") == 0;
  bool staged = argc > 1 && std::strcmp(argv[1], "--staged") == 0;
  const char* kind = cuda ? "nccl" : staged ? "staged" : "mpi";
  try {
    std::unique_ptr<Communicator> world;
    int gpus = 0;
    if (cuda || (staged && at::hasCUDA() && cudaGetDeviceCount(&gpus) == cudaSuccess && gpus > 0)) {
      const char* lr = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
      int local = lr ? std::atoi(lr) : g_rank;
      if (staged) local %= gpus;  // ranks share the GPUs
      cudaSetDevice(local);
      g_device = at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local));
      world = staged ? make_staged_world() : make_nccl_world();
    } else if (staged) {
      world = make_staged_world();
    } else {
      world = make_mpi_world();
    }
    for (auto dt : {at::kBFloat16, at::kFloat, at::kLong}) test_world(*world, dt, c10::toString(dt));
    test_split(*world);
    world->barrier();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", g_rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("comm_test (%s): %s\n", kind, total ? "FAILED" : "all operations correct");
  MPI_Finalize();
  return total ? 1 : 0;
}
