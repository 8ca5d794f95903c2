// pkb device primitives for candidate kernels (include after pkb/abi.h). Small on purpose: pointer translation
// into peers' symmetric heaps, a flag-based cross-rank barrier, and a vectorized copy.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

// The address of `ptr` (in our own heap) inside rank `peer`'s heap. heap_bases is ctx->heap_bases_device.
__device__ __forceinline__ void* pkb_peer_ptr(void* const* heap_bases, int rank, int peer, const void* ptr) {
  return static_cast<char*>(heap_bases[peer]) +
         (static_cast<const char*>(ptr) - static_cast<const char*>(heap_bases[rank]));
}

__device__ __forceinline__ void pkb_store_release_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t pkb_load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Cross-rank barrier between block b of this kernel and block b of the same kernel on every other rank.
// Call it from every thread of every block (blockDim.x >= world). `flags` is symmetric memory from
// ctx->symm_alloc, zeroed, holding at least gridDim.x * world uint32; `epoch` must grow by one with every
// barrier that uses these flags (keep a counter in ctx->user and pass it as a kernel argument).
// Writes this block made before the barrier (including writes into peers' heaps) are visible to the peers'
// matching blocks after it.
__device__ __forceinline__ void pkb_barrier(uint32_t* flags, void* const* heap_bases, int rank, int world,
                                            uint32_t epoch) {
  __syncthreads();
  if (threadIdx.x < static_cast<unsigned>(world)) {
    int peer = threadIdx.x;
    uint32_t* row = flags + blockIdx.x * world;
    uint32_t* remote = static_cast<uint32_t*>(pkb_peer_ptr(heap_bases, rank, peer, row)) + rank;
    __threadfence_system();
    pkb_store_release_sys(remote, epoch);  // "rank has arrived", in the peer's flags
    while (pkb_load_acquire_sys(row + peer) < epoch) {
    }  // wait for the peer's arrival in ours
  }
  __syncthreads();
}

// Grid-stride copy of n 16-byte words; src and/or dst may be peer pointers (NVLink loads/stores).
__device__ __forceinline__ void pkb_copy16(void* dst, const void* src, size_t n) {
  const int4* s = static_cast<const int4*>(src);
  int4* d = static_cast<int4*>(dst);
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    d[i] = s[i];
}
