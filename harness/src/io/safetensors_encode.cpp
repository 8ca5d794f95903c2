#include "io/safetensors_encode.h"

#include <nlohmann/json.hpp>

namespace pkb {

std::string encode_safetensors(const std::vector<TensorBytesView>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object(), order = nlohmann::json::array();
  uint64_t offset = 0;
  for (const TensorBytesView& t : tensors) {
    header[t.name] = {
        {"dtype", dtype_safetensors_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    order.push_back(t.name);
    offset += t.bytes;
  }
  nlohmann::json meta = nlohmann::json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  meta["order"] = order.dump();
  header["__metadata__"] = meta;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // align the data section to 8 bytes
  const uint64_t header_length = h.size();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header_length >> (8 * i));
  bytes.reserve(8 + header_length + offset);
  bytes += h;
  for (const TensorBytesView& t : tensors) bytes.append(static_cast<const char*>(t.data), t.bytes);
  return bytes;
}

}  // namespace pkb
