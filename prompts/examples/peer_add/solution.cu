// Peer add through the pkb ABI: out = x + (x of rank (r + 1) % W). The peer's x is read straight out of its
// symmetric heap over NVLink; nothing is staged or copied first, and no communication library is used.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <pkb/abi.h>

#include <pkb/device.cuh>

namespace {

constexpr int kThreads = 256;  // >= W, as pkb_barrier requires

struct State {
  uint32_t* flags;  // pkb_barrier flags in the symmetric heap: blocks * W words, zeroed by symm_alloc
  int blocks;       // grid size, equal on every rank (the flags are sized for it)
  uint32_t epoch;   // last barrier epoch used; every call uses two (entry and exit)
};

// Eight bf16 values in one 16-byte word: add in fp32, round once to bf16 as PyTorch's bf16 add does.
__device__ __forceinline__ int4 add8(int4 a, int4 b) {
  const __nv_bfloat162* pa = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* pb = reinterpret_cast<const __nv_bfloat162*>(&b);
  int4 r;
  __nv_bfloat162* pr = reinterpret_cast<__nv_bfloat162*>(&r);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 fa = __bfloat1622float2(pa[i]), fb = __bfloat1622float2(pb[i]);
    pr[i] = __floats2bfloat162_rn(fa.x + fb.x, fa.y + fb.y);
  }
  return r;
}

__global__ void peer_add(const __nv_bfloat16* x, __nv_bfloat16* out, int64_t n, bool vec, uint32_t* flags,
                         void* const* heap_bases, int rank, int world, uint32_t epoch) {
  // Entry barrier: the peer's x is in place before we read it.
  pkb_barrier(flags, heap_bases, rank, world, epoch);
  const int peer = (rank + 1) % world;
  const __nv_bfloat16* px = static_cast<const __nv_bfloat16*>(pkb_peer_ptr(heap_bases, rank, peer, x));
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t tid = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const int64_t n8 = vec ? n / 8 : 0;
  const int4* x8 = reinterpret_cast<const int4*>(x);
  const int4* p8 = reinterpret_cast<const int4*>(px);
  int4* o8 = reinterpret_cast<int4*>(out);
  for (int64_t i = tid; i < n8; i += stride) o8[i] = add8(x8[i], p8[i]);
  for (int64_t i = n8 * 8 + tid; i < n; i += stride)
    out[i] = __float2bfloat16(__bfloat162float(x[i]) + __bfloat162float(px[i]));
  // Exit barrier: the rank that reads our x has finished with it before our work completes, so pkb may
  // overwrite our inputs once pkb_run's stream work is done.
  pkb_barrier(flags, heap_bases, rank, world, epoch + 1);
}

int64_t numel(const pkb_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

}  // namespace

extern "C" int pkb_setup(pkb_context* ctx, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != PKB_BF16 || out[0].dtype != PKB_BF16) return 1;
  if (ctx->world_size > kThreads) return 2;
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device) != cudaSuccess) return 3;
  // At most one block per SM, so every block is resident at once: a block spinning in pkb_barrier must never
  // wait for a twin on another rank that cannot be scheduled.
  State* s = new State{nullptr, sms, 0};
  s->flags = static_cast<uint32_t*>(ctx->symm_alloc(ctx, sizeof(uint32_t) * s->blocks * ctx->world_size));
  if (!s->flags) {
    delete s;
    return 4;
  }
  ctx->user = s;
  return 0;
}

extern "C" int pkb_run(pkb_context* ctx, const pkb_tensor* in, int n_in, pkb_tensor* out, int n_out) {
  State* s = static_cast<State*>(ctx->user);
  if (!s || n_in != 1 || n_out != 1) return 1;
  const auto* x = static_cast<const __nv_bfloat16*>(in[0].data);
  auto* y = static_cast<__nv_bfloat16*>(out[0].data);
  // Heap bases are 256-byte aligned, so the peer's x is 16-byte aligned exactly when ours is.
  const bool vec = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y)) % 16 == 0;
  peer_add<<<s->blocks, kThreads, 0, static_cast<cudaStream_t>(ctx->stream)>>>(
      x, y, numel(in[0]), vec, s->flags, ctx->heap_bases_device, ctx->rank, ctx->world_size, s->epoch + 1);
  s->epoch += 2;
  return cudaGetLastError() == cudaSuccess ? 0 : 5;
}

extern "C" void pkb_teardown(pkb_context* ctx) {
  delete static_cast<State*>(ctx->user);  // the flags belong to the heap, which pkb releases
  ctx->user = nullptr;
}
