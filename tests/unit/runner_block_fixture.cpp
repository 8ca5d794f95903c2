// A candidate library for runner_block_test.cpp: each call appends its input's first value to a log in its output
// (out[0]: the number of calls so far, then each call's value) and returns 7 where that value is 99.
#include <cstdint>

#include "pkb/abi.h"

extern "C" int pkb_run(pkb_context*, const pkb_tensor* in, int, pkb_tensor* out, int) {
  const int32_t v = *static_cast<const int32_t*>(in[0].data);
  auto* log = static_cast<int32_t*>(out[0].data);
  log[1 + log[0]++] = v;
  return v == 99 ? 7 : 0;
}
