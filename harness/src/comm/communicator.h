// The communicator references use: NCCL on CUDA tensors, MPI on CPU tensors, same interface and semantics.
// Ranks passed to and returned by a communicator are ranks *within it* (a sub-group has its own 0..size-1).
// All tensors must be contiguous. Collectives are in the style of torch.distributed, which the references mirror.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace pkb {

enum class ReduceOp { sum, prod, max, min, avg };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place on every rank.
  virtual void all_reduce(at::Tensor& t, ReduceOp op = ReduceOp::sum) = 0;
  // out holds size() * in.numel() elements, rank q's block at offset q * in.numel().
  virtual void all_gather(const at::Tensor& in, at::Tensor& out) = 0;
  // in holds size() * out.numel() elements; out = reduction over ranks of block rank() of in.
  virtual void reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op = ReduceOp::sum) = 0;
  virtual void broadcast(at::Tensor& t, int root) = 0;
  // The reduction lands in t on root; other ranks' t are left unchanged (as NCCL leaves them).
  virtual void reduce(at::Tensor& t, int root, ReduceOp op = ReduceOp::sum) = 0;
  // On root, out holds size() * in.numel() elements in rank order; out is ignored elsewhere.
  virtual void gather(const at::Tensor& in, at::Tensor& out, int root) = 0;
  // On root, in holds size() * out.numel() elements; block q goes to rank q. in is ignored elsewhere.
  virtual void scatter(const at::Tensor& in, at::Tensor& out, int root) = 0;
  // Equal splits: block q of in (in.numel() / size() elements) goes to rank q; out block q comes from rank q.
  virtual void all_to_all(const at::Tensor& in, at::Tensor& out) = 0;
  // Uneven splits along dim 0: send_rows[q] rows of in go to rank q, recv_rows[q] rows of out come from q.
  virtual void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& send_rows,
                          const std::vector<int64_t>& recv_rows) = 0;
  virtual void send(const at::Tensor& t, int peer) = 0;
  virtual void recv(at::Tensor& t, int peer) = 0;
  virtual void barrier() = 0;
  // Waits until all work this communicator enqueued is complete (device sync for NCCL, no-op for MPI).
  virtual void synchronize() = 0;

  // Collective over this communicator: ranks with equal color form a new communicator, ordered by key.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
};

// MPI_COMM_WORLD over CPU tensors. bf16/fp16 sums round each pairwise step like NCCL does.
std::unique_ptr<Communicator> make_mpi_world();
// NCCL over the current CUDA device, bootstrapped through MPI. Work goes on the legacy default stream, which is
// the stream ATen uses unless told otherwise, so references need no extra synchronization.
std::unique_ptr<Communicator> make_nccl_world();
// CUDA tensors over MPI, staged through host memory: for ranks sharing a GPU (NCCL refuses two ranks on one GPU).
std::unique_ptr<Communicator> make_staged_world();

}  // namespace pkb
