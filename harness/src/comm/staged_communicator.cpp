// CUDA tensors through the MPI communicator, staged through host memory: for several ranks sharing one GPU,
// where NCCL refuses to run. A functional path (same semantics and reduction-order rules as the MPI
// communicator), not a fast one: every operation synchronizes the device and copies both ways.
#include "comm/communicator.h"

namespace pkb {
namespace {

class StagedCommunicator final : public Communicator {
 public:
  explicit StagedCommunicator(std::unique_ptr<Communicator> host) : host_(std::move(host)) {}
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    in_place(t, [&](at::Tensor& h) { host_->all_reduce(h, op); });
  }
  void all_gather(const at::Tensor& in, at::Tensor& out) override {
    in_place(out, [&](at::Tensor& h) { host_->all_gather(stage(in), h); });
  }
  void reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    in_place(out, [&](at::Tensor& h) { host_->reduce_scatter(stage(in), h, op); });
  }
  void broadcast(at::Tensor& t, int root) override {
    in_place(t, [&](at::Tensor& h) { host_->broadcast(h, root); });
  }
  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    in_place(t, [&](at::Tensor& h) { host_->reduce(h, root, op); });
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root) override {
    in_place(out, [&](at::Tensor& h) { host_->gather(stage(in), h, root); });
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    in_place(out, [&](at::Tensor& h) { host_->scatter(stage(in), h, root); });
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out) override {
    in_place(out, [&](at::Tensor& h) { host_->all_to_all(stage(in), h); });
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& send_rows,
                  const std::vector<int64_t>& recv_rows) override {
    in_place(out, [&](at::Tensor& h) { host_->all_to_all(stage(in), h, send_rows, recv_rows); });
  }
  void send(const at::Tensor& t, int peer) override { host_->send(stage(t), peer); }
  void recv(at::Tensor& t, int peer) override {
    in_place(t, [&](at::Tensor& h) { host_->recv(h, peer); });
  }
  void barrier() override { host_->barrier(); }
  void synchronize() override {
    if (at::hasCUDA()) at::empty({1}, at::TensorOptions().device(at::kCUDA)).cpu();  // drains the legacy stream
  }
  std::unique_ptr<Communicator> split(int color, int key) override {
    return std::make_unique<StagedCommunicator>(host_->split(color, key));
  }

 private:
  // Tensors the operation ignores on this rank (a gather's output off the root) may be undefined or empty.
  static at::Tensor stage(const at::Tensor& t) { return t.defined() && t.is_cuda() ? t.cpu() : t; }
  // Runs op on a host copy of t (its contents staged too: the MPI communicator's reduce leaves non-root buffers
  // unchanged, and so must this one), then writes the result back into t on its device.
  template <class Op>
  static void in_place(at::Tensor& t, Op op) {
    if (!t.defined() || !t.is_cuda()) return op(t);
    at::Tensor h = stage(t).contiguous();
    op(h);
    t.copy_(h);
  }
  std::unique_ptr<Communicator> host_;
};

}  // namespace

std::unique_ptr<Communicator> make_staged_world() { return std::make_unique<StagedCommunicator>(make_mpi_world()); }

}  // namespace pkb
