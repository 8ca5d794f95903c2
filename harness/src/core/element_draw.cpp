#include "core/element_draw.h"

#include "core/parallel.h"

namespace pkb {

void draw_elements(const ElementDraw& d, void* dst, int64_t n) {
  using namespace element_draw;
  if (d.kind != ElementDraw::Kind::normal) {
    parallel_ranges(n, 1 << 14, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) draw_element(d, dst, i);
    });
    return;
  }
  // A pair's two values at once: generating inputs is on the path of every timed evaluation, so half the logarithms
  // count.
  parallel_ranges((n + 1) / 2, 1 << 13, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      float even, odd;
      normal_pair(d, static_cast<uint64_t>(j), even, odd);
      store_element(dst, d.dtype, 2 * j, even);
      if (2 * j + 1 < n) store_element(dst, d.dtype, 2 * j + 1, odd);
    }
  });
}

}  // namespace pkb
