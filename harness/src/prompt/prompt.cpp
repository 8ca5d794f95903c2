#include "prompt/prompt.h"

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "core/files.h"
#include "core/sha256.h"
#include "prompt/format.h"
#include "prompt/template.h"
#include "spec/catalog.h"

namespace pkb::prompt {
namespace {

namespace fs = std::filesystem;

// Where the example pair lives, relative to the prompts directory.
constexpr const char* kExampleDir = "examples/peer_add";

// File contents go inside fenced blocks whose closing fence is on the next template line: drop trailing
// newlines so no blank line appears before it.
std::string chomp(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string file_var(const fs::path& p) { return chomp(read_text(p)); }

std::string render_example(const fs::path& dir) {
  Vars v = {{"example_reference_py", file_var(dir / kExampleDir / "reference.py")},
            {"example_solution_cu", file_var(dir / kExampleDir / "solution.cu")}};
  // Ends in a blank line: the template puts {{example}} on its own line right before the next heading, so
  // zero-shot drops that line and leaves a single blank line.
  return chomp(render_file(dir / "example.txt", v)) + "\n";
}

Vars problem_vars(const ProblemSpec& spec, const RunShape& run) {
  return {{"problem_folder", spec.folder()},         {"problem_title", spec.title},
          {"problem_description", spec.description}, {"reference_py", file_var(spec.dir / "reference.py")},
          {"world", std::to_string(run.world)},      {"dtype", dtype_name(run.float_dtype)},
          {"io", chomp(render_io(spec, run))}};
}

}  // namespace

const char* variant_name(Variant v) { return v == Variant::zero_shot ? "zero-shot" : "one-shot"; }

std::optional<Variant> variant_from_name(const std::string& s) {
  if (s == "zero-shot") return Variant::zero_shot;
  if (s == "one-shot") return Variant::one_shot;
  return std::nullopt;
}

std::string nvcc_arch(const std::string& cc) {
  std::string digits;
  for (char c : cc)
    if (c != '.') digits += c;
  // The "a" targets unlock the architecture-specific instructions (wgmma, TMA multicast) a fast kernel wants.
  return "sm_" + digits + "a";
}

std::string templates_digest(const PromptOptions& o) {
  fs::path dir = o.prompts_dir.empty() ? repo_root() / "prompts" : o.prompts_dir;
  fs::path inc = o.include_dir.empty() ? repo_root() / "harness" / "include" : o.include_dir;
  std::vector<fs::path> files = {inc / "pkb" / "abi.h", inc / "pkb" / "device.cuh"};
  // agent.txt only tells agents about their tools: agent runs key on it themselves (pkb run --agent), so a change
  // to it leaves single-shot and refinement runs resumable.
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "agent.txt") files.push_back(e.path());
  std::sort(files.begin() + 2, files.end());
  Sha256 h;
  for (const auto& f : files) {
    std::string name = f.lexically_relative(dir).generic_string(), bytes = read_text_file(f);
    // Lengths first, so that no two different sets of files hash the same concatenation.
    h.update(std::to_string(name.size()) + ":" + name + std::to_string(bytes.size()) + ":");
    h.update(bytes);
  }
  return h.hex_digest();
}

Topology choose_topology(const std::string& name, int world, const std::string& gpu_model) {
  if (!name.empty()) {
    Topology t = find_topology(name);
    if (t.gpu_count < world)
      throw Error("topology " + name + " has " + std::to_string(t.gpu_count) + " GPUs; W=" + std::to_string(world) +
                  " needs at least " + std::to_string(world));
    return t;
  }
  std::optional<Topology> best;
  auto local = [&](const Topology& t) { return describes_gpu(t, gpu_model); };
  for (const auto& path : list_topologies(repo_root() / "topologies")) {  // sorted: ties go to the first name
    Topology t = load_topology(path);
    if (t.gpu_count < world) continue;
    if (!best || std::make_pair(!local(t), t.gpu_count) < std::make_pair(!local(*best), best->gpu_count))
      best = std::move(t);
  }
  if (!best) throw Error("no topology in topologies/ has " + std::to_string(world) + " or more GPUs; pass --topology");
  return *best;
}

std::string render_hardware(const Topology& t, const fs::path& prompts_dir) {
  auto optional_rate = [](double v) { return v > 0 ? num(v) : std::string(); };
  Vars v = {{"topology_name", t.name},
            {"topology_description", t.description},
            {"gpu_name", t.gpu_name},
            {"gpu_count", std::to_string(t.gpu_count)},
            {"compute_capability", t.compute_capability},
            {"sm_count", std::to_string(t.sm_count)},
            {"l2_size", binary_size(t.l2_bytes)},
            {"hbm_size", binary_size(t.hbm_bytes)},
            {"hbm_GBps", num(t.hbm_GBps)},
            {"bf16_TFLOPs", num(t.bf16_dense_TFLOPs)},
            {"link_kind", t.link_kind},
            {"links_per_gpu", std::to_string(t.links_per_gpu)},
            {"link_GBps", num(t.link_GBps)},
            {"per_gpu_link_GBps", num(t.per_gpu_link_GBps)},
            {"peer_read_GBps", optional_rate(t.peer_read_GBps)},
            {"peer_write_GBps", optional_rate(t.peer_write_GBps)},
            {"copy_engine_GBps", optional_rate(t.copy_engine_GBps)},
            {"nvswitch", t.nvswitch ? "yes" : "no"},
            {"multicast", t.multicast ? "yes" : "no"}};
  return chomp(render_file(prompts_dir / "hardware.txt", v));
}

std::string render_precision(const ProblemSpec& spec, const RunShape& run, const fs::path& prompts_dir) {
  const Tolerance& tol = spec.tolerance;
  Vars v = {{"dtype", dtype_name(run.float_dtype)},
            {"eps", num(dtype_epsilon(run.float_dtype))},
            {"atol", num(tol.atol)},
            {"rtol", num(tol.rtol)},
            {"gamma", num(tol.gamma)},
            {"max_rel_l2", num(tol.max_rel_l2)}};
  return chomp(render_file(prompts_dir / "precision.txt", v));
}

Prompt build_prompt(const ProblemSpec& spec, const PromptOptions& o) {
  RunShape run = resolve_run(spec, o.world, o.dtype, o.params);
  Topology topo = choose_topology(o.topology, o.world);
  fs::path dir = o.prompts_dir.empty() ? repo_root() / "prompts" : o.prompts_dir;
  fs::path inc = o.include_dir.empty() ? repo_root() / "harness" / "include" : o.include_dir;
  Vars v = problem_vars(spec, run);
  v["abi_h"] = file_var(inc / "pkb" / "abi.h");
  v["device_cuh"] = file_var(inc / "pkb" / "device.cuh");
  v["arch"] = nvcc_arch(topo.compute_capability);
  v["topology_name"] = topo.name;
  v["hardware"] = render_hardware(topo, dir);
  v["precision"] = render_precision(spec, run, dir);
  v["example"] = o.variant == Variant::one_shot ? render_example(dir) : "";
  return {chomp(render_file(dir / "system.txt", v)), chomp(render_file(dir / "user.txt", v)), topo.name};
}

}  // namespace pkb::prompt
