#include "protocol/runner_layout.h"

#include "core/error.h"

namespace pkb::protocol {
namespace {

using json = nlohmann::json;

// j[key] as T, or pkb::Error naming the key.
template <typename T>
void read(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(std::string("the runner's layout has no \"") + key + "\"");
  try {
    it->get_to(out);
  } catch (const json::exception& e) {
    throw Error(std::string("the runner's layout's \"") + key + "\": " + e.what());
  }
}

json tensor_json(const LayoutTensor& t) {
  return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"offset", t.offset}};
}

LayoutTensor tensor_from(const json& j) {
  LayoutTensor t;
  read(j, "name", t.name);
  read(j, "dtype", t.dtype);
  read(j, "shape", t.shape);
  read(j, "offset", t.offset);
  return t;
}

json cuda_json(const RunnerCuda& c) {
  return {{"device", c.device},
          {"ipc", c.ipc_hex},
          {"flags_offset", c.flags_offset},
          {"gate_host_offset", c.gate_host_offset},
          {"gate_offset", c.gate_offset},
          {"gate_flags", c.gate_flags}};
}

RunnerCuda cuda_from(const json& j) {
  RunnerCuda c;
  read(j, "device", c.device);
  read(j, "ipc", c.ipc_hex);
  read(j, "flags_offset", c.flags_offset);
  read(j, "gate_host_offset", c.gate_host_offset);
  read(j, "gate_offset", c.gate_offset);
  read(j, "gate_flags", c.gate_flags);
  return c;
}

}  // namespace

void to_json(json& j, const RunnerLayout& l) {
  if (l.ping_only) {
    j = {{"ping_only", true}};
    return;
  }
  j = {{"ping_only", false},
       {"library", l.library},
       {"rank", l.rank},
       {"world", l.world},
       {"local_rank", l.local_rank},
       {"heap_bytes", l.heap_bytes},
       {"sync_offset", l.sync_offset},
       {"arena_offset", l.arena_offset},
       {"host_bytes", l.host_bytes},
       {"hidden_paths", l.hidden_paths},
       {"granted_paths", l.granted_paths}};
  if (l.cuda) j["cuda"] = cuda_json(*l.cuda);
  j["inputs"] = json::array();
  for (const auto& slot : l.inputs) {
    json tensors = json::array();
    for (const auto& t : slot) tensors.push_back(tensor_json(t));
    j["inputs"].push_back(tensors);
  }
  j["outputs"] = json::array();
  for (const auto& t : l.outputs) j["outputs"].push_back(tensor_json(t));
  j["params"] = json::array();
  for (const auto& [k, v] : l.params) j["params"].push_back({{"name", k}, {"value", v}});
  j["groups"] = json::array();
  for (const auto& g : l.groups) j["groups"].push_back({{"name", g.name}, {"members", g.members}});
}

void from_json(const json& j, RunnerLayout& l) {
  if (!j.is_object()) throw Error("the runner's layout is not a JSON object");
  l = RunnerLayout{};
  read(j, "ping_only", l.ping_only);
  if (l.ping_only) return;
  read(j, "library", l.library);
  read(j, "rank", l.rank);
  read(j, "world", l.world);
  read(j, "local_rank", l.local_rank);
  read(j, "heap_bytes", l.heap_bytes);
  read(j, "sync_offset", l.sync_offset);
  read(j, "arena_offset", l.arena_offset);
  read(j, "host_bytes", l.host_bytes);
  read(j, "hidden_paths", l.hidden_paths);
  read(j, "granted_paths", l.granted_paths);
  if (j.contains("cuda")) l.cuda = cuda_from(j.at("cuda"));
  json inputs, outputs, params, groups;
  read(j, "inputs", inputs);
  read(j, "outputs", outputs);
  read(j, "params", params);
  read(j, "groups", groups);
  for (const json& slot : inputs) {
    l.inputs.emplace_back();
    for (const json& t : slot) l.inputs.back().push_back(tensor_from(t));
  }
  for (const json& t : outputs) l.outputs.push_back(tensor_from(t));
  for (const json& p : params) {
    std::pair<std::string, int64_t> kv;
    read(p, "name", kv.first);
    read(p, "value", kv.second);
    l.params.push_back(kv);
  }
  for (const json& g : groups) {
    LayoutGroup group;
    read(g, "name", group.name);
    read(g, "members", group.members);
    l.groups.push_back(group);
  }
}

}  // namespace pkb::protocol
