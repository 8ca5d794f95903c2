// The safetensors encoding without libtorch (8-byte little-endian header length, JSON header padded to 8 bytes,
// raw data; the order of the tensors in the "__metadata__" entry "order"): the torch-free candidate pass sends its
// outputs in it, the driver reads outputs with it to check them, and io/safetensors.h's reader and writer for
// libtorch tensors are built on it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "inputs/host_tensor.h"

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

// A file's tensors in their order (the "order" entry, else the header's), with its other metadata.
struct HostTensors {
  std::vector<HostTensor> tensors;
  std::map<std::string, std::string> metadata;

  const HostTensor& get(const std::string& name) const;  // throws pkb::Error if there is none of that name
};

// Throws pkb::Error naming the file and what is wrong (truncated, bad header, unknown dtype, out-of-range offsets).
HostTensors read_safetensors_host(const std::filesystem::path& path);

}  // namespace pkb
