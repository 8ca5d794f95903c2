#include "io/safetensors.h"

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
  HostTensors host = read_safetensors_host(path);
  NamedTensors out;
  out.metadata = std::move(host.metadata);
  for (HostTensor& t : host.tensors) {
    out.names.push_back(t.name);
    out.tensors.push_back(to_aten_tensor(std::move(t)));
  }
  return out;
}

}  // namespace pkb
