// What a model is shown for one problem: the templates under prompts/ (see prompts/README.md) filled with the
// problem's reference.py, its concrete shapes at the chosen W, the hardware of a topology with real numbers,
// the candidate ABI read from harness/include/pkb at render time (so the prompt never drifts from the
// headers the candidate is compiled against), and, one-shot, our own worked example (prompts/examples/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/dtype.h"
#include "spec/problem_spec.h"
#include "spec/topology.h"

namespace pkb::prompt {

enum class Variant { zero_shot, one_shot };
const char* variant_name(Variant v);                             // "zero-shot", "one-shot"
std::optional<Variant> variant_from_name(const std::string& s);  // the same names

struct PromptOptions {
  int world = 2;
  std::string topology;  ///< topologies/NAME.json; "" = the smallest machine with >= W GPUs
  Variant variant = Variant::one_shot;
  std::map<std::string, int64_t> params;  ///< overrides of problem.json's defaults
  DType dtype = DType::bf16;              ///< the run's float dtype ("float" tensors)
  std::filesystem::path prompts_dir;      ///< "" = <repo>/prompts
  std::filesystem::path include_dir;      ///< "" = <repo>/harness/include (holds pkb/abi.h, pkb/device.cuh)
};

struct Prompt {
  std::string system, user;
  std::string topology;  ///< name of the topology rendered
};

/// Throws pkb::Error for a W the problem forbids, an unknown parameter or topology, a topology with fewer
/// GPUs than W, a missing file or a template naming an unknown placeholder.
Prompt build_prompt(const ProblemSpec& spec, const PromptOptions& o);

/// The named topology, or "" -> the known topology with the fewest GPUs >= world, preferring those whose GPU is
/// `gpu_model` (this machine's, by default: a run on 2x H100 is not told it runs on H200); ties by name.
Topology choose_topology(const std::string& name, int world, const std::string& gpu_model = local_gpu_model());

// Sections, rendered from data; exposed for tests and for later prompt kinds (e.g. feedback rounds).
/// Parameters, groups, and every input/output in pkb_run's order with dtype and per-rank shape.
std::string render_io(const ProblemSpec& spec, const RunShape& run);
/// prompts/hardware.txt filled from the topology.
std::string render_hardware(const Topology& t, const std::filesystem::path& prompts_dir);
/// prompts/precision.txt filled from the run's dtype and the problem's tolerance.
std::string render_precision(const ProblemSpec& spec, const RunShape& run, const std::filesystem::path& prompts_dir);

/// sha256 over everything a prompt is rendered from besides the problem: every file under the templates
/// directory (names and bytes) and the ABI headers. Part of `pkb run`'s run key: edited templates are another
/// experiment.
std::string templates_digest(const PromptOptions& o);

/// "sm_90a" for compute capability "9.0": the target pkb eval compiles for on that machine.
std::string nvcc_arch(const std::string& compute_capability);

}  // namespace pkb::prompt
