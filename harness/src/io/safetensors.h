// Reading and writing the safetensors format (8-byte little-endian header length, JSON header, raw data), the
// format reference.py's runner reads with the `safetensors` package. Tensors keep their order via the
// "__metadata__" entry "order", since the JSON header's keys are unordered.
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pkb {

struct NamedTensors {
  std::vector<std::string> names;
  std::vector<at::Tensor> tensors;  // CPU, contiguous
  std::map<std::string, std::string> metadata;

  const at::Tensor& get(const std::string& name) const;
};

// The file's bytes (what write_safetensors writes), for sending over the sealed channel.
std::string safetensors_bytes(const NamedTensors& t);
// Writes atomically (temporary file + rename). Tensors are moved to the CPU if needed.
void write_safetensors(const std::filesystem::path& path, const NamedTensors& t);
// Throws pkb::Error naming the file and what is wrong (truncated, bad header, unknown dtype, out-of-range offsets).
NamedTensors read_safetensors(const std::filesystem::path& path);

}  // namespace pkb
