#include "protocol/runner_layout.h"

#include "protocol/fields.h"

namespace pkb::protocol {
namespace {

using json = nlohmann::json;

json tensor_json(const LayoutTensor& t) {
  return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"offset", t.offset}};
}

LayoutTensor tensor_from(const json& j, const std::string& what) {
  Fields f(j, what);
  LayoutTensor t;
  f.required("name", t.name);
  f.required("dtype", t.dtype);
  f.required("shape", t.shape);
  f.required("offset", t.offset);
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

RunnerCuda cuda_from(const json& j, const std::string& what) {
  Fields f(j, what);
  RunnerCuda c;
  f.required("device", c.device);
  f.required("ipc", c.ipc_hex);
  f.required("flags_offset", c.flags_offset);
  f.required("gate_host_offset", c.gate_host_offset);
  f.required("gate_offset", c.gate_offset);
  f.required("gate_flags", c.gate_flags);
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
  Fields f(j, "the runner's layout");
  l = RunnerLayout{};
  f.required("ping_only", l.ping_only);
  if (l.ping_only) return;
  f.required("library", l.library);
  f.required("rank", l.rank);
  f.required("world", l.world);
  f.required("local_rank", l.local_rank);
  f.required("heap_bytes", l.heap_bytes);
  f.required("sync_offset", l.sync_offset);
  f.required("arena_offset", l.arena_offset);
  f.required("host_bytes", l.host_bytes);
  f.required("hidden_paths", l.hidden_paths);
  f.required("granted_paths", l.granted_paths);
  if (f.has("cuda")) l.cuda = cuda_from(f.at("cuda"), f.where("cuda"));
  std::vector<std::vector<json>> inputs;
  std::vector<json> outputs, params, groups;
  f.required("inputs", inputs);
  f.required("outputs", outputs);
  f.required("params", params);
  f.required("groups", groups);
  for (size_t s = 0; s < inputs.size(); ++s) {
    l.inputs.emplace_back();
    for (const json& t : inputs[s])
      l.inputs.back().push_back(tensor_from(t, f.where("inputs") + " slot " + std::to_string(s)));
  }
  for (const json& t : outputs) l.outputs.push_back(tensor_from(t, f.where("outputs")));
  for (const json& p : params) {
    Fields param(p, f.where("params"));
    std::pair<std::string, int64_t> kv;
    param.required("name", kv.first);
    param.required("value", kv.second);
    l.params.push_back(kv);
  }
  for (const json& g : groups) {
    Fields group_fields(g, f.where("groups"));
    LayoutGroup group;
    group_fields.required("name", group.name);
    group_fields.required("members", group.members);
    l.groups.push_back(group);
  }
}

}  // namespace pkb::protocol
