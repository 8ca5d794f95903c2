#include "runtime/runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>

#include "core/error.h"

namespace pkb {

void* Runtime::alloc(size_t bytes, bool require_equal) {
  uint64_t mine = bytes;
  std::vector<uint64_t> all(world_);
  MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_);
  uint64_t biggest = 0;
  for (int q = 0; q < world_; ++q) {
    if (require_equal && all[q] != all[0])
      throw Error("symm_alloc is collective and needs equal sizes: rank 0 asked for " + std::to_string(all[0]) +
                  " bytes, rank " + std::to_string(q) + " for " + std::to_string(all[q]));
    biggest = std::max(biggest, all[q]);
  }
  size_t offset = align_to_heap(used_);
  if (offset + biggest > heap_size_)
    throw Error("symmetric heap exhausted: " + std::to_string(biggest) + " bytes requested, " +
                std::to_string(heap_size_ - std::min(offset, heap_size_)) + " left of " + std::to_string(heap_size_));
  used_ = offset + biggest;
  return heap_base(rank_) + offset;
}

bool Runtime::same_bytes(const void* a, const void* b, size_t bytes) {
  const auto *x = static_cast<const unsigned char*>(a), *y = static_cast<const unsigned char*>(b);
  uint64_t differ = 0;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t u, v;
    std::memcpy(&u, x + i, 8), std::memcpy(&v, y + i, 8);
    differ |= u ^ v;
  }
  for (; i < bytes; ++i) differ |= x[i] ^ y[i];
  return differ == 0;
}

double Runtime::host_now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void* Runtime::map_host_memory(void*, size_t) { throw Error("the call gate needs a GPU"); }
void Runtime::gate_hold(const uint32_t*, uint32_t, double) { throw Error("the call gate needs a GPU"); }
void Runtime::flag_write(uint32_t*, uint32_t) { throw Error("the call gate needs a GPU"); }
void Runtime::flag_wait(const uint32_t*, const uint32_t*, uint32_t, double) {
  throw Error("the call gate needs a GPU");
}
Runtime::GateTrace Runtime::gate_trace() { return {}; }

void* Runtime::peer(const void* p, int peer) const {
  auto* c = static_cast<const char*>(p);
  if (peer < 0 || peer >= world_ || c < heap_base(rank_) || c >= heap_base(rank_) + heap_size_) return nullptr;
  return heap_base(peer) + (c - heap_base(rank_));
}

namespace {

// Timers on the host's steady clock, no holds, and a barrier that is MPI's on a communicator of its own (so that a
// candidate's barriers can never pair up with the harness's own MPI_Barrier calls on the world): what CPU ranks use.
class HostTimedRuntime : public Runtime {
 public:
  explicit HostTimedRuntime(MPI_Comm comm) : Runtime(comm) { MPI_Comm_dup(comm, &barrier_comm_); }
  ~HostTimedRuntime() override { MPI_Comm_free(&barrier_comm_); }
  void timers_reserve(int n) override { marks_.assign(n, 0); }
  void record(int i) override {
    marks_[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  double elapsed_ms(int i, int j) override { return marks_[j] - marks_[i]; }
  bool reached(int) override { return true; }
  void hold(double, int) override {}
  void barrier() override { MPI_Barrier(barrier_comm_); }

 private:
  MPI_Comm barrier_comm_ = MPI_COMM_NULL;
  std::vector<double> marks_;
};

class CpuRuntime final : public HostTimedRuntime {
 public:
  CpuRuntime(MPI_Comm comm, size_t bytes, const std::string& tag) : HostTimedRuntime(comm) {
    heap_size_ = bytes;
    long job = getpid();  // rank 0's pid makes the names unique to this job on this machine
    MPI_Bcast(&job, 1, MPI_LONG, 0, comm_);
    auto name = [&](int q) { return "/pkb-" + std::to_string(job) + "-" + tag + "-" + std::to_string(q); };
    int fd = shm_open(name(rank_).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) throw Error("shm_open " + name(rank_) + ": " + strerror(errno));
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) throw Error(std::string("ftruncate shm: ") + strerror(errno));
    close(fd);
    MPI_Barrier(comm_);
    bases_.resize(world_);
    for (int q = 0; q < world_; ++q) {
      int pfd = shm_open(name(q).c_str(), O_RDWR, 0600);
      if (pfd < 0) throw Error("shm_open peer " + name(q) + ": " + strerror(errno));
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, pfd, 0);
      if (p == MAP_FAILED) throw Error(std::string("mmap shm: ") + strerror(errno));
      bases_[q] = p;
      fds_.push_back(pfd);  // kept for a runner process (heap_fds); close-on-exec, as shm_open opens it
    }
    MPI_Barrier(comm_);
    shm_unlink(name(rank_).c_str());  // mappings stay valid; nothing is left behind if a rank crashes later
  }
  ~CpuRuntime() override {
    for (void* p : bases_) munmap(p, heap_size_);
    for (int fd : fds_) close(fd);
  }
  bool is_cuda() const override { return false; }
  int device() const override { return -1; }
  void* stream() const override { return nullptr; }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void fill(void* dst, uint8_t byte, size_t bytes) override { std::memset(dst, byte, bytes); }
  void copy_async(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void* private_alloc(size_t bytes) override {
    private_.emplace_back(bytes ? bytes : 1);
    return private_.back().data();
  }
  std::string synchronize() override { return ""; }
  std::string stream_synchronize() override { return ""; }
  void* const* heap_bases_device() const override { return bases_.data(); }
  std::vector<int> heap_fds() const override { return fds_; }

 private:
  std::vector<int> fds_;
  std::deque<std::vector<char>> private_;  // deque: earlier blocks never move
};

}  // namespace

std::unique_ptr<Runtime> make_cpu_runtime(MPI_Comm comm, size_t heap_bytes, const std::string& job_tag) {
  return std::make_unique<CpuRuntime>(comm, heap_bytes, job_tag);
}

}  // namespace pkb
