#include "io/safetensors.h"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/files.h"
#include "inputs/inputs.h"
#include "io/safetensors_encode.h"

namespace pkb {

using json = nlohmann::json;

const at::Tensor& NamedTensors::get(const std::string& name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return tensors[i];
  throw Error("no tensor named '" + name + "'");
}

std::string safetensors_bytes(const NamedTensors& t) {
  std::vector<at::Tensor> cpu;
  std::vector<TensorBytesView> views;
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    cpu.push_back(t.tensors[i].to(at::kCPU).contiguous());
    const at::Tensor& c = cpu.back();
    views.push_back({t.names[i], from_aten(c.scalar_type()), c.sizes().vec(), c.data_ptr(),
                     static_cast<size_t>(c.numel()) * c.element_size()});
  }
  return encode_safetensors(views, t.metadata);
}

void write_safetensors(const std::filesystem::path& path, const NamedTensors& t) {
  write_file_atomically(path, safetensors_bytes(t));
}

NamedTensors read_safetensors(const std::filesystem::path& path) {
  auto fail = [&](const std::string& why) -> Error { return Error(path.string() + ": " + why); };
  std::ifstream in(path, std::ios::binary);
  if (!in) throw fail("cannot open");
  in.seekg(0, std::ios::end);
  uint64_t file_size = in.tellg();
  in.seekg(0);
  unsigned char len[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len), 8)) throw fail("truncated (no header length)");
  uint64_t hlen = 0;
  for (int i = 0; i < 8; ++i) hlen |= uint64_t{len[i]} << (8 * i);
  if (hlen > file_size - 8) throw fail("header length exceeds file size");
  std::string h(hlen, '\0');
  in.read(h.data(), hlen);
  json header;
  try {
    header = json::parse(h);
  } catch (const json::parse_error& e) {
    throw fail(std::string("bad header JSON: ") + e.what());
  }
  uint64_t data_start = 8 + hlen, data_size = file_size - data_start;

  NamedTensors out;
  std::vector<std::string> order;
  if (header.contains("__metadata__")) {
    for (auto& [k, v] : header["__metadata__"].items())
      if (v.is_string()) out.metadata[k] = v.get<std::string>();
    if (out.metadata.count("order")) {
      for (const auto& n : json::parse(out.metadata["order"])) order.push_back(n.get<std::string>());
      out.metadata.erase("order");
    }
  }
  if (order.empty())
    for (auto& [k, v] : header.items())
      if (k != "__metadata__") order.push_back(k);

  for (const auto& name : order) {
    if (!header.contains(name)) throw fail("tensor '" + name + "' listed in order but missing");
    const json& e = header[name];
    auto dt = dtype_from_safetensors_name(e.value("dtype", ""));
    if (!dt) throw fail("tensor '" + name + "': unsupported dtype '" + e.value("dtype", "") + "'");
    std::vector<int64_t> shape = e.at("shape").get<std::vector<int64_t>>();
    uint64_t begin = e.at("data_offsets")[0].get<uint64_t>(), end = e.at("data_offsets")[1].get<uint64_t>();
    int64_t numel = 1;
    for (int64_t s : shape) numel *= s;
    if (end < begin || end > data_size || end - begin != numel * dtype_size(*dt))
      throw fail("tensor '" + name + "': data offsets do not match its shape and dtype");
    at::Tensor t = at::empty(shape, at::TensorOptions().dtype(to_aten(*dt)));
    in.seekg(data_start + begin);
    in.read(static_cast<char*>(t.data_ptr()), end - begin);
    if (!in) throw fail("tensor '" + name + "': truncated data");
    out.names.push_back(name);
    out.tensors.push_back(t);
  }
  return out;
}

}  // namespace pkb
