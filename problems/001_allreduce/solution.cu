// Expert all-reduce: two-shot over the symmetric heap. Rank r owns 1/W of the elements: it loads that chunk
// from every rank's input over NVLink, sums in fp32 (rank order, one rounding), and stores the result into the
// same chunk of every rank's output. Each GPU moves (W-1)/W of the tensor in and out, like a ring, in one
// kernel with two flag barriers (inputs ready; all outputs written).
#include <cuda_bf16.h>
#include <pkb/abi.h>

#include <pkb/device.cuh>

namespace {

constexpr int kBlocks = 132, kThreads = 512;

struct State {
  uint32_t* flags;  // symmetric: kBlocks * world barrier slots
  uint32_t epoch;
};

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

template <typename T>
__global__ void __launch_bounds__(kThreads)
    allreduce_two_shot(const void* in, void* out, void* const* bases, uint32_t* flags, int rank, int world,
                       uint32_t epoch, size_t n) {
  using V = Vec<T>;
  pkb_barrier(flags, bases, rank, world, epoch);  // every rank's input is ready
  size_t vecs = n / V::n, per = (vecs + world - 1) / world;
  size_t lo = rank * per, hi = min(vecs, lo + per);
  for (size_t i = lo + blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < hi; i += size_t{gridDim.x} * blockDim.x) {
    float acc[V::n] = {}, x[V::n];
    for (int q = 0; q < world; ++q) {
      V::unpack(static_cast<const int4*>(pkb_peer_ptr(bases, rank, q, in))[i], x);
      for (int k = 0; k < V::n; ++k) acc[k] += x[k];
    }
    int4 r = V::pack(acc);
    for (int q = 0; q < world; ++q) static_cast<int4*>(pkb_peer_ptr(bases, rank, q, out))[i] = r;
  }
  if (rank == 0 && blockIdx.x == 0)  // the few elements past the last full vector
    for (size_t i = vecs * V::n + threadIdx.x; i < n; i += blockDim.x) {
      float acc = 0;
      for (int q = 0; q < world; ++q) acc += V::load(pkb_peer_ptr(bases, rank, q, in), i);
      for (int q = 0; q < world; ++q) V::store(pkb_peer_ptr(bases, rank, q, out), i, acc);
    }
  pkb_barrier(flags, bases, rank, world, epoch + 1);  // every chunk of every output is written
}

}  // namespace

extern "C" int pkb_setup(pkb_context* ctx, const pkb_tensor*, int, const pkb_tensor*, int) {
  auto* s = new State{static_cast<uint32_t*>(ctx->symm_alloc(ctx, kBlocks * ctx->world_size * sizeof(uint32_t))), 0};
  ctx->user = s;
  return s->flags ? 0 : 1;
}

extern "C" int pkb_run(pkb_context* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  auto* s = static_cast<State*>(ctx->user);
  size_t n = 1;
  for (int d = 0; d < in[0].ndim; ++d) n *= in[0].shape[d];
  auto stream = static_cast<cudaStream_t>(ctx->stream);
  if (in[0].dtype == PKB_BF16)
    allreduce_two_shot<__nv_bfloat16><<<kBlocks, kThreads, 0, stream>>>(
        in[0].data, out[0].data, ctx->heap_bases_device, s->flags, ctx->rank, ctx->world_size, s->epoch + 1, n);
  else if (in[0].dtype == PKB_F32)
    allreduce_two_shot<float><<<kBlocks, kThreads, 0, stream>>>(in[0].data, out[0].data, ctx->heap_bases_device,
                                                                s->flags, ctx->rank, ctx->world_size, s->epoch + 1, n);
  else
    return 2;
  s->epoch += 2;
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}

extern "C" void pkb_teardown(pkb_context* ctx) { delete static_cast<State*>(ctx->user); }
