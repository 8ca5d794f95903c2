// The in-context example (prompts/examples/peer_add/solution.cu) run for real on two GPUs: one process, one
// thread per rank, each rank's heap a cudaMalloc mapped into the peer by peer access, the pkb_context filled
// the way pkb's worker fills it. Checks three checked calls (outputs poisoned, inputs rotated between two
// copies) and 200 back-to-back calls (the timing loop, which stresses the barrier epochs) bit for bit against
// bf16(float(x) + float(peer x)). Exits 77 (skipped) without two peer-capable GPUs.
#include PKB_PEER_ADD_SOLUTION

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr int W = 2;
constexpr size_t kHeapBytes = size_t{64} << 20;

#define CHECK_CUDA(x)                                                              \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::printf("CUDA error %s at line %d\n", cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

struct Rank {
  char* heap = nullptr;
  size_t used = 0;
  void** bases_device = nullptr;
  cudaStream_t stream = nullptr;
  pkb_context ctx{};
  std::vector<pkb_tensor> in[2], out;  // two rotated input copies, like the timing loop
};

Rank ranks[W];
void* host_bases[W];

void* symm_alloc(pkb_context* c, size_t bytes) {  // ranks allocate in the same order: offsets agree
  Rank& r = ranks[c->rank];
  size_t off = (r.used + 255) / 256 * 256;
  if (off + bytes > kHeapBytes) return nullptr;
  r.used = off + bytes;
  CHECK_CUDA(cudaMemset(r.heap + off, 0, bytes));
  return r.heap + off;
}
void* symm_peer(pkb_context* c, const void* p, int peer) {
  return static_cast<char*>(host_bases[peer]) + (static_cast<const char*>(p) - static_cast<char*>(host_bases[c->rank]));
}
int no_barrier(pkb_context*) { return -1; }  // the example does not use the host-side barrier
int64_t no_param(pkb_context*, const char*) { return -1; }

uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

pkb_tensor tensor(void* data, int64_t n, const char* name) {
  pkb_tensor t{};
  t.data = data;
  t.dtype = PKB_BF16;
  t.ndim = 1;
  t.shape[0] = n;
  t.strides[0] = 1;
  t.name = name;
  return t;
}

void setup_rank(int r, int64_t n, const std::vector<uint16_t>* x) {
  Rank& R = ranks[r];
  CHECK_CUDA(cudaSetDevice(r));
  R.used = 0;
  R.ctx = pkb_context{};
  pkb_context& c = R.ctx;
  c.abi_version = PKB_ABI_VERSION;
  c.rank = r, c.world_size = W, c.local_rank = r, c.device = r, c.stream = R.stream;
  c.heap_bases = host_bases, c.heap_bases_device = R.bases_device, c.heap_size = kHeapBytes;
  c.symm_alloc = symm_alloc, c.symm_peer = symm_peer, c.barrier = no_barrier, c.param = no_param;
  size_t bytes = n * sizeof(uint16_t);
  for (int k = 0; k < 2; ++k) {
    void* p = symm_alloc(&c, bytes);
    CHECK_CUDA(cudaMemcpy(p, x[r * 2 + k].data(), bytes, cudaMemcpyHostToDevice));
    R.in[k] = {tensor(p, n, "x")};
  }
  R.out = {tensor(symm_alloc(&c, bytes), n, "out")};
}

int64_t mismatches(int r, int k, int64_t n, const std::vector<uint16_t>* x) {
  std::vector<uint16_t> got(n);
  CHECK_CUDA(cudaMemcpy(got.data(), ranks[r].out[0].data, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  const auto& mine = x[r * 2 + k];
  const auto& peer = x[((r + 1) % W) * 2 + k];
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += got[i] != to_bf16(from_bf16(mine[i]) + from_bf16(peer[i]));
  return bad;
}

// One rank's life: setup, three checked calls, 200 back-to-back calls, teardown. Returns failures.
int run_rank(int r, int64_t n, const std::vector<uint16_t>* x, pthread_barrier_t* bar) {
  Rank& R = ranks[r];
  CHECK_CUDA(cudaSetDevice(r));
  int failures = 0;
  if (int rc = pkb_setup(&R.ctx, R.in[0].data(), 1, R.out.data(), 1))
    return std::printf("pkb_setup returned %d\n", rc), 1;
  for (int t = 0; t < 3; ++t) {
    CHECK_CUDA(cudaMemset(R.out[0].data, 0xFF, n * sizeof(uint16_t)));  // NaN poison, as pkb does
    CHECK_CUDA(cudaDeviceSynchronize());
    pthread_barrier_wait(bar);
    failures += pkb_run(&R.ctx, R.in[t % 2].data(), 1, R.out.data(), 1) != 0;
    CHECK_CUDA(cudaStreamSynchronize(R.stream));
    pthread_barrier_wait(bar);  // as in pkb: every rank has finished before outputs are read
    int64_t bad = mismatches(r, t % 2, n, x);
    if (bad) std::printf("n=%lld rank %d call %d: %lld wrong elements\n", (long long)n, r, t, (long long)bad);
    failures += bad != 0;
  }
  pthread_barrier_wait(bar);
  for (int i = 0; i < 200; ++i) failures += pkb_run(&R.ctx, R.in[i % 2].data(), 1, R.out.data(), 1) != 0;
  CHECK_CUDA(cudaStreamSynchronize(R.stream));
  pthread_barrier_wait(bar);
  int64_t bad = mismatches(r, 1, n, x);
  if (bad) std::printf("n=%lld rank %d after 200 calls: %lld wrong elements\n", (long long)n, r, (long long)bad);
  failures += bad != 0;
  pkb_teardown(&R.ctx);
  return failures;
}

}  // namespace

int main() {
  int devices = 0, can01 = 0, can10 = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < W) return std::printf("SKIP: fewer than 2 GPUs\n"), 77;
  cudaDeviceCanAccessPeer(&can01, 0, 1);
  cudaDeviceCanAccessPeer(&can10, 1, 0);
  if (!can01 || !can10) return std::printf("SKIP: GPUs 0 and 1 cannot access each other\n"), 77;
  for (int r = 0; r < W; ++r) {
    CHECK_CUDA(cudaSetDevice(r));
    CHECK_CUDA(cudaDeviceEnablePeerAccess(1 - r, 0));
    CHECK_CUDA(cudaMalloc(&ranks[r].heap, kHeapBytes));
    CHECK_CUDA(cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&ranks[r].bases_device, sizeof(void*) * W));
    host_bases[r] = ranks[r].heap;
  }
  for (int r = 0; r < W; ++r)
    CHECK_CUDA(cudaMemcpy(ranks[r].bases_device, host_bases, sizeof host_bases, cudaMemcpyHostToDevice));
  int failures = 0;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t n : {int64_t{1024} * 1024, int64_t{1000003}, int64_t{5}}) {  // vector path, vector + tail, tail only
    std::vector<uint16_t> x[W * 2];
    for (auto& v : x) {
      v.resize(n);
      for (auto& e : v) e = to_bf16(normal(rng));
    }
    for (int r = 0; r < W; ++r) setup_rank(r, n, x);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, nullptr, W);
    int f[W] = {0, 0};
    std::thread t0([&] { f[0] = run_rank(0, n, x, &bar); }), t1([&] { f[1] = run_rank(1, n, x, &bar); });
    t0.join();
    t1.join();
    pthread_barrier_destroy(&bar);
    failures += f[0] + f[1];
  }
  std::printf(failures ? "FAIL: %d failures\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
