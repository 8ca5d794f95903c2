#include "comm/half_reduce.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>

namespace pkb {
namespace {

template <class T, HalfReduction R>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = static_cast<float>(a[i]), y = static_cast<float>(b[i]);
    float r = R == HalfReduction::prod  ? x * y
              : R == HalfReduction::max ? std::max(x, y)
              : R == HalfReduction::min ? std::min(x, y)
                                        : x + y;
    b[i] = static_cast<T>(r);  // rounds to nearest even, once per pairwise step
  }
}

template <class T>
MPI_User_function* for_type(HalfReduction r) {
  switch (r) {
    case HalfReduction::prod:
      return half_reduce<T, HalfReduction::prod>;
    case HalfReduction::max:
      return half_reduce<T, HalfReduction::max>;
    case HalfReduction::min:
      return half_reduce<T, HalfReduction::min>;
    default:
      return half_reduce<T, HalfReduction::sum>;
  }
}

}  // namespace

MPI_User_function* half_reduce_function(HalfKind kind, HalfReduction reduction) {
  return kind == HalfKind::bf16 ? for_type<c10::BFloat16>(reduction) : for_type<c10::Half>(reduction);
}

}  // namespace pkb
