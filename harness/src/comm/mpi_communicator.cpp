// Communicator over MPI for CPU tensors (CI and --device cpu). bf16/fp16 have no MPI type: they travel as
// 16-bit words and reduce through user-defined ops that add in fp32 and round each step, like NCCL.
#include <mpi.h>

#include <climits>
#include <string>

#include "comm/communicator.h"
#include "comm/half_reduce.h"
#include "core/error.h"

namespace pkb {
namespace {

void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(std::string("MPI ") + what + " failed: " + std::string(msg, len));
}

// One MPI_Op per 16-bit type and reduction, made on first use (comm/half_reduce.h: optimized in every build).
MPI_Op make_half_op(HalfKind kind, ReduceOp op) {
  static MPI_Op ops[2][4] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                             {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
  const HalfReduction r = op == ReduceOp::prod  ? HalfReduction::prod
                          : op == ReduceOp::max ? HalfReduction::max
                          : op == ReduceOp::min ? HalfReduction::min
                                                : HalfReduction::sum;  // avg: a sum, divided after
  MPI_Op& made = ops[static_cast<int>(kind)][static_cast<int>(r)];
  if (made == MPI_OP_NULL) mpi_check(MPI_Op_create(half_reduce_function(kind, r), 1, &made), "Op_create");
  return made;
}

MPI_Datatype mpi_type(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kLong:
      return MPI_INT64_T;
    case at::kInt:
      return MPI_INT32_T;
    case at::kShort:
      return MPI_INT16_T;
    case at::kChar:
      return MPI_INT8_T;
    case at::kByte:
      return MPI_UINT8_T;
    case at::kBool:
      return MPI_C_BOOL;
    case at::kBFloat16:
    case at::kHalf:
      return MPI_UINT16_T;
    default:
      throw Error(std::string("MPI communicator: unsupported dtype ") + c10::toString(t.scalar_type()));
  }
}

MPI_Op mpi_op(const at::Tensor& t, ReduceOp op) {
  if (t.scalar_type() == at::kBFloat16) return make_half_op(HalfKind::bf16, op);
  if (t.scalar_type() == at::kHalf) return make_half_op(HalfKind::fp16, op);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg:
      return MPI_SUM;
    case ReduceOp::prod:
      return MPI_PROD;
    case ReduceOp::max:
      return MPI_MAX;
    case ReduceOp::min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

int count_of(int64_t n) {
  if (n > INT_MAX) throw Error("MPI communicator: message of " + std::to_string(n) + " elements exceeds INT_MAX");
  return static_cast<int>(n);
}

void require_cpu_contiguous(const at::Tensor& t, const char* what) {
  if (!t.device().is_cpu()) throw Error(std::string("MPI communicator: ") + what + ": tensor is not on the CPU");
  if (!t.is_contiguous()) throw Error(std::string("MPI communicator: ") + what + ": tensor is not contiguous");
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    if (owned_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce(at::Tensor& t, ReduceOp op) override {
    require_cpu_contiguous(t, "all_reduce");
    mpi_check(MPI_Allreduce(MPI_IN_PLACE, t.data_ptr(), count_of(t.numel()), mpi_type(t), mpi_op(t, op), comm_),
              "Allreduce");
    if (op == ReduceOp::avg) t.div_(size_);
  }
  void all_gather(const at::Tensor& in, at::Tensor& out) override {
    require_cpu_contiguous(in, "all_gather");
    require_cpu_contiguous(out, "all_gather");
    check_numel(out, in.numel() * size_, "all_gather output");
    mpi_check(MPI_Allgather(in.data_ptr(), count_of(in.numel()), mpi_type(in), out.data_ptr(), count_of(in.numel()),
                            mpi_type(out), comm_),
              "Allgather");
  }
  void reduce_scatter(const at::Tensor& in, at::Tensor& out, ReduceOp op) override {
    require_cpu_contiguous(in, "reduce_scatter");
    require_cpu_contiguous(out, "reduce_scatter");
    check_numel(in, out.numel() * size_, "reduce_scatter input");
    mpi_check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count_of(out.numel()), mpi_type(in),
                                       mpi_op(in, op), comm_),
              "Reduce_scatter_block");
    if (op == ReduceOp::avg) out.div_(size_);
  }
  void broadcast(at::Tensor& t, int root) override {
    require_cpu_contiguous(t, "broadcast");
    mpi_check(MPI_Bcast(t.data_ptr(), count_of(t.numel()), mpi_type(t), root, comm_), "Bcast");
  }
  void reduce(at::Tensor& t, int root, ReduceOp op) override {
    require_cpu_contiguous(t, "reduce");
    void* send = rank_ == root ? MPI_IN_PLACE : t.data_ptr();
    mpi_check(MPI_Reduce(send, t.data_ptr(), count_of(t.numel()), mpi_type(t), mpi_op(t, op), root, comm_), "Reduce");
    if (op == ReduceOp::avg && rank_ == root) t.div_(size_);
  }
  void gather(const at::Tensor& in, at::Tensor& out, int root) override {
    require_cpu_contiguous(in, "gather");
    void* recv = nullptr;
    if (rank_ == root) {
      require_cpu_contiguous(out, "gather");
      check_numel(out, in.numel() * size_, "gather output");
      recv = out.data_ptr();
    }
    mpi_check(MPI_Gather(in.data_ptr(), count_of(in.numel()), mpi_type(in), recv, count_of(in.numel()), mpi_type(in),
                         root, comm_),
              "Gather");
  }
  void scatter(const at::Tensor& in, at::Tensor& out, int root) override {
    require_cpu_contiguous(out, "scatter");
    const void* send = nullptr;
    if (rank_ == root) {
      require_cpu_contiguous(in, "scatter");
      check_numel(in, out.numel() * size_, "scatter input");
      send = in.data_ptr();
    }
    mpi_check(MPI_Scatter(send, count_of(out.numel()), mpi_type(out), out.data_ptr(), count_of(out.numel()),
                          mpi_type(out), root, comm_),
              "Scatter");
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out) override {
    require_cpu_contiguous(in, "all_to_all");
    require_cpu_contiguous(out, "all_to_all");
    if (in.numel() % size_ != 0 || out.numel() != in.numel())
      throw Error("all_to_all: input and output must have equal numel divisible by the group size");
    int block = count_of(in.numel() / size_);
    mpi_check(MPI_Alltoall(in.data_ptr(), block, mpi_type(in), out.data_ptr(), block, mpi_type(out), comm_),
              "Alltoall");
  }
  void all_to_all(const at::Tensor& in, at::Tensor& out, const std::vector<int64_t>& send_rows,
                  const std::vector<int64_t>& recv_rows) override {
    require_cpu_contiguous(in, "all_to_all");
    require_cpu_contiguous(out, "all_to_all");
    // Elements per row from the trailing dims, so a rank that sends no rows still knows the row size.
    int64_t row = 1;
    for (int64_t d = 1; d < in.dim(); ++d) row *= in.size(d);
    std::vector<int> sc(size_), sd(size_), rc(size_), rd(size_);
    check_splits(send_rows, in, "send");
    check_splits(recv_rows, out, "recv");
    int64_t so = 0, ro = 0;
    for (int q = 0; q < size_; ++q) {
      sc[q] = count_of(send_rows[q] * row), sd[q] = count_of(so), so += send_rows[q] * row;
      rc[q] = count_of(recv_rows[q] * row), rd[q] = count_of(ro), ro += recv_rows[q] * row;
    }
    mpi_check(MPI_Alltoallv(in.data_ptr(), sc.data(), sd.data(), mpi_type(in), out.data_ptr(), rc.data(), rd.data(),
                            mpi_type(out), comm_),
              "Alltoallv");
  }
  void send(const at::Tensor& t, int peer) override {
    require_cpu_contiguous(t, "send");
    mpi_check(MPI_Send(t.data_ptr(), count_of(t.numel()), mpi_type(t), peer, 0, comm_), "Send");
  }
  void recv(at::Tensor& t, int peer) override {
    require_cpu_contiguous(t, "recv");
    mpi_check(MPI_Recv(t.data_ptr(), count_of(t.numel()), mpi_type(t), peer, 0, comm_, MPI_STATUS_IGNORE), "Recv");
  }
  void barrier() override { mpi_check(MPI_Barrier(comm_), "Barrier"); }
  void synchronize() override {}

  std::unique_ptr<Communicator> split(int color, int key) override {
    MPI_Comm sub;
    mpi_check(MPI_Comm_split(comm_, color, key, &sub), "Comm_split");
    return std::make_unique<MpiCommunicator>(sub, true);
  }

 private:
  void check_numel(const at::Tensor& t, int64_t want, const char* what) const {
    if (t.numel() != want)
      throw Error(std::string(what) + " has " + std::to_string(t.numel()) + " elements, expected " +
                  std::to_string(want));
  }
  void check_splits(const std::vector<int64_t>& rows, const at::Tensor& t, const char* what) const {
    if (static_cast<int>(rows.size()) != size_)
      throw Error(std::string("all_to_all: ") + what + " splits need one entry per rank");
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    if (total > (t.dim() == 0 ? 1 : t.size(0)))
      throw Error(std::string("all_to_all: ") + what + " splits exceed the tensor's rows");
  }

  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_world() { return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false); }

}  // namespace pkb
