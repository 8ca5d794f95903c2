#include "io/safetensors_encode.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

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

namespace pkb {

const HostTensor& HostTensors::get(const std::string& name) const {
  for (const HostTensor& t : tensors)
    if (t.name == name) return t;
  throw Error("no tensor named '" + name + "'");
}

HostTensors read_safetensors_host(const std::filesystem::path& path) {
  using json = nlohmann::json;
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
  if (!header.is_object()) throw fail("the header is not a JSON object");
  const uint64_t data_start = 8 + hlen, data_size = file_size - data_start;

  HostTensors out;
  std::vector<std::string> order;
  if (header.contains("__metadata__") && header["__metadata__"].is_object()) {
    for (auto& [k, v] : header["__metadata__"].items())
      if (v.is_string()) out.metadata[k] = v.get<std::string>();
    if (out.metadata.count("order")) {
      const json names = json::parse(out.metadata["order"], nullptr, false);
      if (!names.is_array()) throw fail("the metadata's order is not a JSON list");
      for (const auto& n : names) {
        if (!n.is_string()) throw fail("the metadata's order names a tensor by a non-string");
        order.push_back(n.get<std::string>());
      }
      out.metadata.erase("order");
    }
  }
  if (order.empty())
    for (auto& [k, v] : header.items())
      if (k != "__metadata__") order.push_back(k);

  for (const auto& name : order) {
    if (!header.contains(name) || !header[name].is_object())
      throw fail("tensor '" + name + "' listed in order but missing");
    const json& e = header[name];
    const std::string dtype = e.value("dtype", json("")).is_string() ? e.value("dtype", "") : "";
    auto dt = dtype_from_safetensors_name(dtype);
    if (!dt) throw fail("tensor '" + name + "': unsupported dtype '" + dtype + "'");
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;
    try {
      shape = e.at("shape").get<std::vector<int64_t>>();
      begin = e.at("data_offsets").at(0).get<uint64_t>();
      end = e.at("data_offsets").at(1).get<uint64_t>();
    } catch (const json::exception& x) {
      throw fail("tensor '" + name + "': bad shape or data offsets: " + x.what());
    }
    // The element count in 128 bits: a forged shape must not wrap around to match the offsets.
    unsigned __int128 count = 1;
    for (int64_t s : shape) {
      if (s < 0) throw fail("tensor '" + name + "': a negative dimension");
      count *= static_cast<uint64_t>(s);
      if (count > data_size) count = static_cast<unsigned __int128>(data_size) + 1;  // too large, and stays so
    }
    if (end < begin || end > data_size || end - begin != count * dtype_size(*dt))
      throw fail("tensor '" + name + "': data offsets do not match its shape and dtype");
    HostTensor t(name, *dt, shape);
    in.seekg(static_cast<std::streamoff>(data_start + begin));
    in.read(reinterpret_cast<char*>(t.data.get()), static_cast<std::streamsize>(end - begin));
    if (!in) throw fail("tensor '" + name + "': truncated data");
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace pkb
