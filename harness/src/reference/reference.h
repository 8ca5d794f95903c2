// What a problem's reference.cpp sees. A reference is the libtorch twin of reference.py: it runs on every rank,
// talks through ctx.comm (NCCL on CUDA tensors, MPI on CPU tensors) and returns that rank's outputs in the
// order problem.json lists them. An oracle computes every rank's expected outputs in one process from all
// ranks' inputs; it must be written independently of the reference (no communicator, no shared helpers that
// hide the semantics), because it is what proves the reference right.
//
// Registration is local to the problem's file:
//   PKB_REGISTER_PROBLEM("allreduce", reference, oracle);
// A problem whose inputs are derived from random draws (rows normalized, a mask made consistent with indices)
// also registers a prepare function, run on the CPU right after the draws, before anything sees the inputs:
//   PKB_REGISTER_PROBLEM_WITH_PREPARE("layernorm_backward", reference, oracle, prepare);
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace pkb {

using Tensors = std::vector<at::Tensor>;

struct RankContext {
  int rank = 0;
  int world = 1;
  std::map<std::string, int64_t> params;   // problem parameters, defaults plus overrides
  std::map<std::string, int64_t> scalars;  // scalar arguments (e.g. "dst") by name
  at::ScalarType float_dtype = at::kBFloat16;
  at::Device device = at::kCPU;
  Communicator* comm = nullptr;                 // the world
  std::map<std::string, Communicator*> groups;  // this rank's communicator for each named group

  int64_t param(const std::string& name) const;
  int64_t scalar(const std::string& name) const;
  Communicator& group(const std::string& name) const;
  at::TensorOptions float_options() const { return at::TensorOptions().dtype(float_dtype).device(device); }
};

struct OracleContext {
  int world = 1;
  std::map<std::string, int64_t> params;
  std::map<std::string, int64_t> scalars;
  at::ScalarType float_dtype = at::kBFloat16;
  // For each named group: the member lists (world ranks ordered by key), one list per color.
  std::map<std::string, std::vector<std::vector<int>>> groups;

  int64_t param(const std::string& name) const;
  int64_t scalar(const std::string& name) const;
  // The members of the group of `name` that contains world rank `rank`.
  const std::vector<int>& group_of(const std::string& name, int rank) const;
};

// inputs: this rank's tensor inputs in problem.json order (scalars excluded; see ctx.scalar).
using ReferenceFn = Tensors (*)(const RankContext& ctx, const Tensors& inputs);
// inputs[r]: rank r's tensor inputs on the CPU. Returns outputs[r] for every rank, computed as precisely as
// practical (fp32 or fp64 accumulation); the checker compares against it with the problem's tolerance.
using OracleFn = std::vector<Tensors> (*)(const OracleContext& ctx, const std::vector<Tensors>& inputs);

// Turns one rank's raw random draws (CPU, problem.json order, scalars excluded) into its actual inputs. Must be
// deterministic and keep every shape and dtype.
using PrepareFn = Tensors (*)(const OracleContext& ctx, int rank, Tensors raw);

struct ReferenceImpl {
  std::string slug;
  ReferenceFn reference = nullptr;
  OracleFn oracle = nullptr;
  PrepareFn prepare = nullptr;  // optional
};

// nullptr if no reference.cpp registered this slug.
const ReferenceImpl* find_reference(const std::string& slug);
std::vector<std::string> registered_slugs();

struct ReferenceRegistrar {
  ReferenceRegistrar(const char* slug, ReferenceFn reference, OracleFn oracle, PrepareFn prepare = nullptr);
};

}  // namespace pkb

#define PKB_REGISTER_PROBLEM(slug, reference, oracle) \
  static ::pkb::ReferenceRegistrar pkb_registrar_##reference##_##oracle(slug, reference, oracle)
#define PKB_REGISTER_PROBLEM_WITH_PREPARE(slug, reference, oracle, prepare) \
  static ::pkb::ReferenceRegistrar pkb_registrar_##reference##_##oracle(slug, reference, oracle, prepare)
