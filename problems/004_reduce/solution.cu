// Expert reduce to rank 0: rank 0 loads every rank's tensor over NVLink and sums in fp32 (one rounding);
// the other ranks return a copy of their own input, as NCCL leaves a non-root buffer untouched.
#include <cuda_bf16.h>
#include <pkb/abi.h>

#include <pkb/device.cuh>

namespace {

constexpr int kBlocks = 132, kThreads = 512;

struct State {
  uint32_t* flags;  // symmetric: kBlocks * world barrier slots
  uint32_t epoch;   // barriers used so far; each call uses two
};

[[maybe_unused]] __device__ __forceinline__ void copy_bytes(void* dst, const void* src, size_t bytes) {
  pkb_copy16(dst, src, bytes / 16);
  if (blockIdx.x == 0)  // a tail shorter than one 16-byte word
    for (size_t i = bytes / 16 * 16 + threadIdx.x; i < bytes; i += blockDim.x)
      static_cast<char*>(dst)[i] = static_cast<const char*>(src)[i];
}

template <typename T>
struct Vec;
template <>
struct Vec<__nv_bfloat16> {
  static constexpr int n = 8;
  __device__ static void unpack(int4 v, float* f) {
    auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    for (int i = 0; i < 4; ++i) {
      float2 x = __bfloat1622float2(h[i]);
      f[2 * i] = x.x;
      f[2 * i + 1] = x.y;
    }
  }
  __device__ static int4 pack(const float* f) {
    int4 v;
    auto* h = reinterpret_cast<__nv_bfloat162*>(&v);
    for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    return v;
  }
  __device__ static float load(const void* p, size_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
  __device__ static void store(void* p, size_t i, float v) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  }
};
template <>
struct Vec<float> {
  static constexpr int n = 4;
  __device__ static void unpack(int4 v, float* f) { *reinterpret_cast<int4*>(f) = v; }
  __device__ static int4 pack(const float* f) { return *reinterpret_cast<const int4*>(f); }
  __device__ static float load(const void* p, size_t i) { return static_cast<const float*>(p)[i]; }
  __device__ static void store(void* p, size_t i, float v) { static_cast<float*>(p)[i] = v; }
};

// dst[i] = sum over ranks q of (rank q's copy of src)[i], i in [0, n): fp32 sum in rank order, one rounding.
template <typename T>
__device__ void sum_over_ranks(void* dst, const void* src, void* const* bases, int rank, int world, size_t n) {
  using V = Vec<T>;
  size_t vecs = n / V::n;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < vecs; i += size_t{gridDim.x} * blockDim.x) {
    float acc[V::n] = {}, x[V::n];
    for (int q = 0; q < world; ++q) {
      V::unpack(static_cast<const int4*>(pkb_peer_ptr(bases, rank, q, src))[i], x);
      for (int k = 0; k < V::n; ++k) acc[k] += x[k];
    }
    static_cast<int4*>(dst)[i] = V::pack(acc);
  }
  if (blockIdx.x == 0)
    for (size_t i = vecs * V::n + threadIdx.x; i < n; i += blockDim.x) {
      float acc = 0;
      for (int q = 0; q < world; ++q) acc += V::load(pkb_peer_ptr(bases, rank, q, src), i);
      V::store(dst, i, acc);
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    reduce_to_root(const void* in, void* out, void* const* bases, uint32_t* flags, int rank, int world, uint32_t epoch,
                   size_t n, size_t bytes, int root) {
  pkb_barrier(flags, bases, rank, world, epoch);
  if (rank == root)
    sum_over_ranks<T>(out, in, bases, rank, world, n);
  else
    copy_bytes(out, in, bytes);
  pkb_barrier(flags, bases, rank, world, epoch + 1);  // the root is done reading our input
}

}  // namespace

extern "C" int pkb_setup(pkb_context* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  auto* s = new State{static_cast<uint32_t*>(ctx->symm_alloc(ctx, kBlocks * ctx->world_size * sizeof(uint32_t))), 0};
  ctx->user = s;
  return s->flags ? 0 : 1;
}

extern "C" void pkb_teardown(pkb_context* ctx) { delete static_cast<State*>(ctx->user); }

extern "C" int pkb_run(pkb_context* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  auto* s = static_cast<State*>(ctx->user);
  auto stream = static_cast<cudaStream_t>(ctx->stream);
  if (in[0].dtype == PKB_BF16)
    reduce_to_root<__nv_bfloat16><<<kBlocks, kThreads, 0, stream>>>(
        in[0].data, out[0].data, ctx->heap_bases_device, s->flags, ctx->rank, ctx->world_size, s->epoch + 1,
        pkb_numel(&in[0]), pkb_tensor_bytes(&in[0]), static_cast<int>(ctx->param(ctx, "dst")));
  else if (in[0].dtype == PKB_F32)
    reduce_to_root<float><<<kBlocks, kThreads, 0, stream>>>(
        in[0].data, out[0].data, ctx->heap_bases_device, s->flags, ctx->rank, ctx->world_size, s->epoch + 1,
        pkb_numel(&in[0]), pkb_tensor_bytes(&in[0]), static_cast<int>(ctx->param(ctx, "dst")));
  else
    return 2;
  s->epoch += 2;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
