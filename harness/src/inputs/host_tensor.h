// A tensor on the host as plain bytes (contiguous, row-major): what the candidate pass holds, with or without
// libtorch in the process.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace pkb {

// 64-byte aligned, as ATen allocates (the buffer may become a tensor's: inputs/inputs.h, to_aten_tensor).
struct FreeHostBuffer {
  void operator()(unsigned char* p) const { std::free(p); }
};
using HostBuffer = std::unique_ptr<unsigned char[], FreeHostBuffer>;
inline HostBuffer allocate_host_buffer(size_t bytes) {
  constexpr size_t kAlignment = 64;
  void* p = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment);
  if (!p) throw std::bad_alloc();
  return HostBuffer(static_cast<unsigned char*>(p));
}

struct HostTensor {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  HostBuffer data;  // not zeroed on allocation: every byte is written before it is read
  size_t bytes = 0;

  HostTensor() = default;
  HostTensor(std::string n, DType d, std::vector<int64_t> s) : name(std::move(n)), dtype(d), shape(std::move(s)) {
    bytes = dtype_size(dtype) * static_cast<size_t>(numel());
    data = allocate_host_buffer(bytes);
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data.get());
  }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.get());
  }
  bool same_bytes(const void* other) const { return std::memcmp(data.get(), other, bytes) == 0; }
};

}  // namespace pkb
