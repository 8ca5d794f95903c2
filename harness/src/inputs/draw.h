// pkb's input generator without libtorch. Every value is a pure function of (base seed, problem id, trial,
// input index, rank — or no rank for replicated inputs, element index), computed on the CPU with our own
// counter-based generator, so the reference pass, the candidate pass, the oracle and the Python runner all see
// the same bytes on any machine and any libtorch version. inputs/inputs.h adds the problems' libtorch prepare
// steps on top (make_inputs); a problem without one has exactly these bytes as its inputs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/element_draw.h"
#include "inputs/host_tensor.h"
#include "spec/problem_spec.h"

namespace pkb {

// How one tensor input of a rank is drawn.
struct InputDraw {
  std::string name;
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  uint64_t seed = 0;
  // Element by element, a pure function of the index (what a GPU can draw in place); nullopt for randperm, a shuffle
  // drawn whole on the host.
  std::optional<ElementDraw> element;
};

// How every tensor input of `rank` for `trial` is drawn, in problem.json order (no prepare step).
std::vector<InputDraw> input_draws(const ProblemSpec& spec, const RunShape& run, int rank, int trial,
                                   uint64_t base_seed);
HostTensor draw_input(const InputDraw& in);

// Every tensor input of `rank` for `trial`, in problem.json order, as drawn (no prepare step).
std::vector<HostTensor> draw_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial,
                                    uint64_t base_seed);

// float to bfloat16 / IEEE half bits, rounding to nearest even (NaN stays a quiet NaN), as c10::BFloat16 and
// c10::Half convert.
uint16_t float_to_bf16_bits(float v);
uint16_t float_to_f16_bits(float v);
// The tensor's elements as another dtype, converting each element as a C++ cast does (float to integer
// truncates, anything to bool is "!= 0"), as ATen's Tensor::to does for these pairs. `from` holds f32 or i64.
HostTensor convert_host_tensor(const HostTensor& from, DType to);

// Scalar arguments by name, evaluated for this run.
std::map<std::string, int64_t> scalar_values(const ProblemSpec& spec, const RunShape& run);

// For each named group: member lists (world ranks ordered by key, ties by rank), one per color.
std::map<std::string, std::vector<std::vector<int>>> group_layout(const ProblemSpec& spec, const RunShape& run);

// color and key of `rank` in group g, as the communicator split needs them.
std::pair<int, int> group_color_key(const GroupSpec& g, const RunShape& run, int rank);

}  // namespace pkb
