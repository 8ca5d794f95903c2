// Communicator over NCCL for CUDA tensors. Bootstrap (the unique id) goes through MPI. All work is enqueued on
// the legacy default stream, the one ATen uses by default, so NCCL calls are ordered with the reference's ops.
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <string>

#include "comm/communicator.h"
#include "core/error.h"

namespace pkb {
namespace {

void nccl_check(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw Error(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(rc));
}
void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error(std::string("CUDA ") + what + " failed: " + cudaGetErrorString(rc));
}

ncclDataType_t nccl_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kHalf:
      return ncclFloat16;
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kLong:
      return ncclInt64;
    case at::kInt:
      return ncclInt32;
    case at::kChar:
      return ncclInt8;
    case at::kByte:
    case at::kBool:
      return ncclUint8;
    default:
      throw Error(std::string("NCCL communicator: unsupported dtype ") + c10::toString(t.scalar_type()));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::prod:
      return ncclProd;
    case ReduceOp::max:
      return ncclMax;
    case ReduceOp::min:
      return ncclMin;
    case ReduceOp::avg:
      return ncclAvg;
  }
  return ncclSum;
}

void require_cuda_contiguous(const at::Tensor& t, const char* what) {
  if (!t.device().is_cuda())
    throw Error(std::string("NCCL communicator: ") + what + ": tensor is not on a CUDA device");
  if (!t.is_contiguous()) throw Error(std::string("NCCL communicator: ") + what + ": tensor is not contiguous");
}

class NcclGroup {
 public:
  NcclGroup() { nccl_check(ncclGroupStart(), "GroupStart"); }
  ~NcclGroup() noexcept(false) { nccl_check(ncclGroupEnd(), "GroupEnd"); }
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(ncclComm_t comm) : comm_(comm) {
    nccl_check(ncclCommUserRank(comm_, &rank_), "CommUserRank");
    nccl_check(ncclCommCount(comm_, &size_), "CommCount");
  }
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    require_cuda_contiguous(t, "all_reduce");
    nccl_check(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), nccl_op(op), comm_, stream_),
               "AllReduce");
  }
  void all_gather(const at::Tensor& in, at::Tensor& out) override {
    require_cuda_contiguous(in, "all_gather");
    require_cuda_contiguous(out, "all_gather");
    check_numel(out, in.numel() * size_, "all_gather output");
    nccl_check(ncclAllGather(in.data_ptr(), out.data_ptr(), in.numel(), nccl_type(in), comm_, stream_), "AllGather");
  }
  void reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    require_cuda_contiguous(in, "reduce_scatter");
    require_cuda_contiguous(out, "reduce_scatter");
    check_numel(in, out.numel() * size_, "reduce_scatter input");
    nccl_check(
        ncclReduceScatter(in.data_ptr(), out.data_ptr(), out.numel(), nccl_type(in), nccl_op(op), comm_, stream_),
        "ReduceScatter");
  }
  void broadcast(at::Tensor& t, int root) override {
    require_cuda_contiguous(t, "broadcast");
    nccl_check(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), root, comm_, stream_), "Broadcast");
  }
  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    require_cuda_contiguous(t, "reduce");
    nccl_check(ncclReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), nccl_op(op), root, comm_, stream_),
               "Reduce");
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root) override {
    require_cuda_contiguous(in, "gather");
    if (rank_ == root) {
      require_cuda_contiguous(out, "gather");
      check_numel(out, in.numel() * size_, "gather output");
    }
    size_t bytes = in.numel() * in.element_size();
    NcclGroup group;
    if (rank_ == root) {
      for (int q = 0; q < size_; ++q) {
        char* dst = static_cast<char*>(out.data_ptr()) + q * bytes;
        if (q == rank_)
          cuda_check(cudaMemcpyAsync(dst, in.data_ptr(), bytes, cudaMemcpyDeviceToDevice, stream_), "MemcpyAsync");
        else
          nccl_check(ncclRecv(dst, in.numel(), nccl_type(in), q, comm_, stream_), "Recv");
      }
    } else {
      nccl_check(ncclSend(in.data_ptr(), in.numel(), nccl_type(in), root, comm_, stream_), "Send");
    }
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    require_cuda_contiguous(out, "scatter");
    if (rank_ == root) {
      require_cuda_contiguous(in, "scatter");
      check_numel(in, out.numel() * size_, "scatter input");
    }
    size_t bytes = out.numel() * out.element_size();
    NcclGroup group;
    if (rank_ == root) {
      for (int q = 0; q < size_; ++q) {
        const char* src = static_cast<const char*>(in.data_ptr()) + q * bytes;
        if (q == rank_)
          cuda_check(cudaMemcpyAsync(out.data_ptr(), src, bytes, cudaMemcpyDeviceToDevice, stream_), "MemcpyAsync");
        else
          nccl_check(ncclSend(src, out.numel(), nccl_type(out), q, comm_, stream_), "Send");
      }
    } else {
      nccl_check(ncclRecv(out.data_ptr(), out.numel(), nccl_type(out), root, comm_, stream_), "Recv");
    }
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out) override {
    if (in.numel() % size_ != 0 || out.numel() != in.numel())
      throw Error("all_to_all: input and output must have equal numel divisible by the group size");
    // Equal chunks of numel / W, whatever the shapes (e.g. (n, v) in, (W, n / W, v) out): one row each of the
    // flat (W, numel / W) views.
    auto flat_in = in.view({size_, -1});
    auto flat_out = out.view({size_, -1});
    std::vector<int64_t> split(size_, 1);
    all_to_all(flat_in, flat_out, split, split);
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& send_rows,
                  const std::vector<int64_t>& recv_rows) override {
    require_cuda_contiguous(in, "all_to_all");
    require_cuda_contiguous(out, "all_to_all");
    if (static_cast<int>(send_rows.size()) != size_ || static_cast<int>(recv_rows.size()) != size_)
      throw Error("all_to_all: splits need one entry per rank");
    // Elements per row from the trailing dims, so a rank that sends no rows still knows the row size.
    int64_t row = 1;
    for (int64_t d = 1; d < in.dim(); ++d) row *= in.size(d);
    size_t esize = in.element_size();
    int64_t so = 0, ro = 0;
    for (int q = 0; q < size_; ++q) so += send_rows[q], ro += recv_rows[q];
    if (so > (in.dim() ? in.size(0) : 1) || ro > (out.dim() ? out.size(0) : 1))
      throw Error("all_to_all: splits exceed the tensors' rows");
    so = ro = 0;
    NcclGroup group;
    for (int q = 0; q < size_; ++q) {
      const char* src = static_cast<const char*>(in.data_ptr()) + so * row * esize;
      char* dst = static_cast<char*>(out.data_ptr()) + ro * row * esize;
      if (q == rank_) {
        if (send_rows[q] != recv_rows[q]) throw Error("all_to_all: self split sizes disagree");
        cuda_check(cudaMemcpyAsync(dst, src, send_rows[q] * row * esize, cudaMemcpyDeviceToDevice, stream_),
                   "MemcpyAsync");
      } else {
        if (send_rows[q]) nccl_check(ncclSend(src, send_rows[q] * row, nccl_type(in), q, comm_, stream_), "Send");
        if (recv_rows[q]) nccl_check(ncclRecv(dst, recv_rows[q] * row, nccl_type(out), q, comm_, stream_), "Recv");
      }
      so += send_rows[q], ro += recv_rows[q];
    }
  }
  void send(const at::Tensor& t, int peer) override {
    require_cuda_contiguous(t, "send");
    nccl_check(ncclSend(t.data_ptr(), t.numel(), nccl_type(t), peer, comm_, stream_), "Send");
  }
  void recv(at::Tensor& t, int peer) override {
    require_cuda_contiguous(t, "recv");
    nccl_check(ncclRecv(t.data_ptr(), t.numel(), nccl_type(t), peer, comm_, stream_), "Recv");
  }
  void barrier() override {
    if (!token_.defined()) token_ = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(at::kCUDA));
    all_reduce(token_, ReduceOp::sum);
    synchronize();
  }
  void synchronize() override { cuda_check(cudaStreamSynchronize(stream_), "StreamSynchronize"); }

  std::unique_ptr<Communicator> split(int color, int key) override {
    ncclComm_t sub = nullptr;
    nccl_check(ncclCommSplit(comm_, color, key, &sub, nullptr), "CommSplit");
    if (!sub) throw Error("NCCL CommSplit returned no communicator");
    return std::make_unique<NcclCommunicator>(sub);
  }

 private:
  void check_numel(const at::Tensor& t, int64_t want, const char* what) const {
    if (t.numel() != want)
      throw Error(std::string(what) + " has " + std::to_string(t.numel()) + " elements, expected " +
                  std::to_string(want));
  }

  ncclComm_t comm_;
  cudaStream_t stream_ = nullptr;  // legacy default stream: ATen's default
  int rank_ = 0, size_ = 1;
  at::Tensor token_;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_world() {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ncclUniqueId id;
  if (rank == 0) nccl_check(ncclGetUniqueId(&id), "GetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  nccl_check(ncclCommInitRank(&comm, size, id, rank), "CommInitRank");
  return std::make_unique<NcclCommunicator>(comm);
}

}  // namespace pkb
