#include "spec/topology.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/error.h"
#include "spec/catalog.h"

namespace pkb {
namespace {

using json = nlohmann::json;

struct NumberField {
  const char* key;
  double Topology::*member;
  bool required;
};

constexpr NumberField kGpuNumbers[] = {
    {"l2_bytes", &Topology::l2_bytes, true},        {"hbm_bytes", &Topology::hbm_bytes, true},
    {"hbm_GBps", &Topology::hbm_GBps, true},        {"bf16_dense_TFLOPs", &Topology::bf16_dense_TFLOPs, true},
    {"fp32_TFLOPs", &Topology::fp32_TFLOPs, false},
};
constexpr NumberField kLinkNumbers[] = {
    {"link_GBps", &Topology::link_GBps, true},
    {"per_gpu_link_GBps", &Topology::per_gpu_link_GBps, true},
    {"peer_read_GBps", &Topology::peer_read_GBps, false},
    {"peer_write_GBps", &Topology::peer_write_GBps, false},
    {"copy_engine_GBps", &Topology::copy_engine_GBps, false},
};

const json& need(const json& j, const std::string& key, const std::string& where) {
  if (!j.contains(key)) throw Error(where + ": " + key + ": missing required field");
  return j.at(key);
}

double number(const json& j, const std::string& key, const std::string& where) {
  const json& v = need(j, key, where);
  if (!v.is_number() || v.get<double>() < 0) throw Error(where + ": " + key + ": must be a non-negative number");
  return v.get<double>();
}

}  // namespace

double Topology::math_TFLOPs(DType float_dtype) const {
  return float_dtype == DType::f32 || float_dtype == DType::f64 ? fp32_TFLOPs : bf16_dense_TFLOPs;
}

double Topology::roofline_link_GBps() const {
  // Measured SM-driven writes are what a kernel can reach; fall back to the documented aggregate link rate.
  if (peer_write_GBps > 0) return std::max(peer_write_GBps, peer_read_GBps);
  return per_gpu_link_GBps;
}

Topology Topology::from_json(const json& j, const std::string& where) {
  Topology t;
  t.name = need(j, "name", where).get<std::string>();
  t.description = j.value("description", "");
  const json& gpu = need(j, "gpu", where);
  std::string gw = where + ": gpu";
  t.gpu_name = need(gpu, "name", gw).get<std::string>();
  t.compute_capability = need(gpu, "compute_capability", gw).get<std::string>();
  t.gpu_count = static_cast<int>(number(gpu, "count", gw));
  t.sm_count = static_cast<int>(number(gpu, "sm_count", gw));
  for (const auto& f : kGpuNumbers)
    if (f.required || gpu.contains(f.key)) t.*(f.member) = number(gpu, f.key, gw);
  const json& link = need(j, "interconnect", where);
  std::string lw = where + ": interconnect";
  t.link_kind = need(link, "kind", lw).get<std::string>();
  t.links_per_gpu = static_cast<int>(number(link, "links_per_gpu", lw));
  for (const auto& f : kLinkNumbers)
    if (f.required || link.contains(f.key)) t.*(f.member) = number(link, f.key, lw);
  t.nvswitch = need(link, "nvswitch", lw).get<bool>();
  t.multicast = need(link, "multicast", lw).get<bool>();
  if (t.gpu_count < 1) throw Error(gw + ": count: must be >= 1");

  const json& src = need(j, "sources", where);
  for (auto& [k, v] : src.items()) t.sources[k] = v.get<std::string>();
  // Every number carries its source: a roofline is only as good as the figures under it.
  std::vector<std::string> numbered = {"gpu.count", "gpu.sm_count"};
  for (const auto& f : kGpuNumbers)
    if (gpu.contains(f.key)) numbered.push_back(std::string("gpu.") + f.key);
  for (const auto& f : kLinkNumbers)
    if (link.contains(f.key)) numbered.push_back(std::string("interconnect.") + f.key);
  numbered.push_back("interconnect.links_per_gpu");
  for (const auto& key : numbered)
    if (!t.sources.count(key)) throw Error(where + ": sources: no source given for " + key);
  return t;
}

json Topology::to_json() const {
  json gpu = {
      {"name", gpu_name}, {"compute_capability", compute_capability}, {"count", gpu_count}, {"sm_count", sm_count}};
  for (const auto& f : kGpuNumbers)
    if (f.required || this->*(f.member) > 0) gpu[f.key] = this->*(f.member);
  json link = {{"kind", link_kind}, {"links_per_gpu", links_per_gpu}, {"nvswitch", nvswitch}, {"multicast", multicast}};
  for (const auto& f : kLinkNumbers)
    if (f.required || this->*(f.member) > 0) link[f.key] = this->*(f.member);
  return {{"schema", "pkb.topology/1"}, {"name", name},      {"description", description}, {"gpu", gpu},
          {"interconnect", link},       {"sources", sources}};
}

Topology load_topology(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(file.string() + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(file.string() + ": invalid JSON: " + e.what());
  }
  try {
    return Topology::from_json(j, file.string());
  } catch (const json::exception& e) {
    throw Error(file.string() + ": " + e.what());
  }
}

std::vector<std::filesystem::path> list_topologies(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Topology find_topology(const std::string& name) {
  auto dir = repo_root() / "topologies";
  auto file = dir / (name + ".json");
  if (std::filesystem::exists(file)) return load_topology(file);
  std::string known;
  for (const auto& p : list_topologies(dir)) known += (known.empty() ? "" : ", ") + p.stem().string();
  throw Error("no topology '" + name + "' in " + dir.string() + " (known: " + known + ")");
}

std::string default_roofline_topology(const std::string& gpu_model) {
  std::optional<Topology> best;
  if (!gpu_model.empty())
    for (const auto& path : list_topologies(repo_root() / "topologies")) {  // sorted: ties go to the first name
      Topology t = load_topology(path);
      if (describes_gpu(t, gpu_model) && (!best || t.gpu_count < best->gpu_count)) best = std::move(t);
    }
  return best ? best->name : "h200_2";
}

std::string local_gpu_model() {
  std::error_code ec;
  std::vector<std::filesystem::path> gpus;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) gpus.push_back(e.path());
  std::sort(gpus.begin(), gpus.end());
  for (const auto& dir : gpus) {
    std::ifstream in(dir / "information");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("Model:", 0) == 0) {
        size_t start = line.find_first_not_of(" \t", 6);
        return start == std::string::npos ? "" : line.substr(start);
      }
  }
  return "";
}

}  // namespace pkb
