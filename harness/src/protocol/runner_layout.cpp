#include "protocol/runner_layout.h"

#include "protocol/fields.h"

namespace pkb::protocol {
namespace {

using json = nlohmann::json;

template <class T, class V>  // T: LayoutTensor
void tensor_fields(T& t, V&& v) {
  v("name", t.name);
  v("dtype", t.dtype);
  v("shape", t.shape);
  v("offset", t.offset);
}

template <class C, class V>  // C: RunnerCuda
void cuda_fields(C& c, V&& v) {
  v("device", c.device);
  v("ipc", c.ipc_hex);
  v("flags_offset", c.flags_offset);
  v("gate_host_offset", c.gate_host_offset);
  v("gate_offset", c.gate_offset);
  v("gate_flags", c.gate_flags);
}

// The layout's scalar keys (ping_only, the optional cuda and the tensor, parameter and group lists aside).
template <class L, class V>
void layout_fields(L& l, V&& v) {
  v("library", l.library);
  v("rank", l.rank);
  v("world", l.world);
  v("local_rank", l.local_rank);
  v("heap_bytes", l.heap_bytes);
  v("sync_offset", l.sync_offset);
  v("arena_offset", l.arena_offset);
  v("host_bytes", l.host_bytes);
  v("hidden_paths", l.hidden_paths);
  v("granted_paths", l.granted_paths);
}

json tensor_json(const LayoutTensor& t) {
  json j = json::object();
  tensor_fields(t, Writer{j});
  return j;
}

LayoutTensor tensor_from(const json& j, const std::string& what) {
  LayoutTensor t;
  tensor_fields(t, Reader{Fields(j, what)});
  return t;
}

json cuda_json(const RunnerCuda& c) {
  json j = json::object();
  cuda_fields(c, Writer{j});
  return j;
}

RunnerCuda cuda_from(const json& j, const std::string& what) {
  RunnerCuda c;
  cuda_fields(c, Reader{Fields(j, what)});
  return c;
}

}  // namespace

void to_json(json& j, const RunnerLayout& l) {
  if (l.ping_only) {
    j = {{"ping_only", true}};
    return;
  }
  j = {{"ping_only", false}};
  layout_fields(l, Writer{j});
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
  layout_fields(l, Reader{f});
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
