/* pkb candidate ABI. A candidate is one source file compiled into a shared library that exports pkb_run (and
 * optionally pkb_setup / pkb_teardown) with C linkage. pkb calls them on every rank, one process per GPU.
 *
 *   int  pkb_setup(pkb_context*, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out);  optional, untimed
 *   int  pkb_run  (pkb_context*, const pkb_tensor* in, int n_in, pkb_tensor* out, int n_out);        required, timed
 *   void pkb_teardown(pkb_context*);                                                                 optional
 *
 * Return 0 on success; any other value is recorded as a runtime error. Rules:
 *  - in[] and out[] follow the problem's input and output order. Inputs are read-only: changing them fails the
 *    check. Every element of every output must be written on every call (outputs are poisoned with NaN before
 *    each call). Do not cache results across calls: inputs change between calls, possibly at the same address.
 *  - All GPU work must be enqueued on ctx->stream (or joined back into it before pkb_run returns). pkb times
 *    pkb_run with events on that stream and also checks the device-wide time; work that escapes is flagged.
 *  - Inputs and outputs live in the symmetric heap: every rank's tensors are at the same offset of its heap,
 *    and each rank's heap is mapped into every peer (CUDA IPC, NVLink). A kernel may read peers' inputs or
 *    write peers' outputs directly through ctx->symm_peer / the device table of peer bases.
 *  - Synchronize ranks with ctx->barrier (enqueued on the stream) or the device-side barrier in pkb/device.cuh.
 *    The harness does not order ranks inside pkb_run: a rank must not read a peer's buffer before the peer has
 *    produced it, nor let a peer overwrite a buffer it is still reading.
 *  - No NCCL, MPI, processes, sockets, dlopen, cudaDeviceReset or changes to timing: the lint rejects them.
 * The same ABI runs without a GPU (pkb's CPU mode): pointers are host memory, the heap is POSIX shared memory,
 * stream is NULL, and candidates are C++.
 */
#ifndef PKB_ABI_H
#define PKB_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PKB_ABI_VERSION 1
#define PKB_MAX_DIMS 8

typedef enum {
  PKB_BF16 = 0,
  PKB_F16 = 1,
  PKB_F32 = 2,
  PKB_F64 = 3,
  PKB_I8 = 4,
  PKB_U8 = 5,
  PKB_I16 = 6,
  PKB_I32 = 7,
  PKB_I64 = 8,
  PKB_BOOL = 9
} pkb_dtype;

typedef struct {
  void* data; /* device pointer (host pointer in CPU mode), inside the symmetric heap */
  pkb_dtype dtype;
  int ndim;
  int64_t shape[PKB_MAX_DIMS];
  int64_t strides[PKB_MAX_DIMS]; /* in elements; tensors are contiguous (row-major) */
  const char* name;              /* the problem's name for this input/output */
} pkb_tensor;

/* Bytes of one element of `dtype`, of a tensor's elements. Host code (pkb_run, pkb_setup). */
static inline size_t pkb_dtype_size(pkb_dtype dtype) {
  switch (dtype) {
    case PKB_BF16:
    case PKB_F16:
    case PKB_I16:
      return 2;
    case PKB_F32:
    case PKB_I32:
      return 4;
    case PKB_F64:
    case PKB_I64:
      return 8;
    default:
      return 1; /* PKB_I8, PKB_U8, PKB_BOOL */
  }
}
static inline int64_t pkb_numel(const pkb_tensor* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}
static inline size_t pkb_tensor_bytes(const pkb_tensor* t) { return (size_t)pkb_numel(t) * pkb_dtype_size(t->dtype); }

typedef struct {
  const char* name;   /* as in the problem ("tp", "cp", ...) */
  int size;           /* ranks in this rank's group */
  int rank;           /* this rank's index inside the group */
  const int* members; /* world ranks of the group, in group-rank order */
} pkb_group;

typedef struct pkb_context pkb_context;
struct pkb_context {
  int abi_version; /* PKB_ABI_VERSION */
  int rank, world_size, local_rank;
  int device;   /* CUDA device of this rank (-1 in CPU mode) */
  void* stream; /* cudaStream_t all work must be ordered on (NULL in CPU mode) */

  int n_params; /* problem parameters and scalar arguments (M, N, dst, ...) */
  const char* const* param_names;
  const int64_t* param_values;
  int n_groups; /* named process groups of the problem */
  const pkb_group* groups;

  /* Symmetric heap. heap_bases[q] is rank q's heap as mapped in this process (heap_bases[rank] is our own).
   * heap_bases_device is the same table in device memory, for kernels. */
  void* const* heap_bases;
  void* const* heap_bases_device;
  size_t heap_size;
  /* Collective: every rank must call it with the same size, in the same order (checked; a mismatch fails the
   * run). Returns memory at the same offset on every rank, zeroed, 256-byte aligned; NULL when the heap is
   * exhausted. Call it from pkb_setup: allocations persist until teardown. */
  void* (*symm_alloc)(pkb_context* ctx, size_t bytes);
  /* The address of `ptr` (anywhere in our heap) in rank `peer`'s heap, as mapped here. */
  void* (*symm_peer)(pkb_context* ctx, const void* ptr, int peer);
  /* Cross-rank barrier enqueued on ctx->stream: work after it starts only once every rank reached it. */
  int (*barrier)(pkb_context* ctx);
  /* A parameter's value by name; -1 if there is none. */
  int64_t (*param)(pkb_context* ctx, const char* name);

  void* user; /* the candidate's own state, e.g. set in pkb_setup */
};

int pkb_setup(pkb_context* ctx, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out);
int pkb_run(pkb_context* ctx, const pkb_tensor* in, int n_in, pkb_tensor* out, int n_out);
void pkb_teardown(pkb_context* ctx);

#ifdef __cplusplus
}
#endif

#endif /* PKB_ABI_H */
