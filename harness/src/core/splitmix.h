// The mixing step of pkb's counter-based input generator (splitmix64's finalizer). It lives below both inputs/ and
// reference/: core/element_draw.h draws every input with it, and the prepare functions that hash the drawn inputs into
// entropy of their own (reference/moe_all2all.h, vocab_topk.h) use the same definition.
#pragma once

#include <cstdint>

// Functions both the host and the GPU run (the generator's, core/element_draw.h).
#if defined(__CUDACC__)
#define PKB_HD __host__ __device__
#else
#define PKB_HD
#endif

namespace pkb {

PKB_HD constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace pkb
