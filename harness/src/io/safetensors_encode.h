// The safetensors encoding without libtorch (8-byte little-endian header length, JSON header padded to 8 bytes,
// raw data; the order of the tensors in the "__metadata__" entry "order"): the torch-free candidate pass sends its
// outputs in it, and io/safetensors.h's writer for libtorch tensors is built on it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace pkb {

struct TensorBytesView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;  // contiguous, row-major
  size_t bytes;
};

std::string encode_safetensors(const std::vector<TensorBytesView>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

}  // namespace pkb
