#include "inputs/inputs.h"

#include "core/error.h"
#include "reference/reference.h"

namespace pkb {

at::ScalarType to_aten(DType d) {
  switch (d) {
    case DType::bf16:
      return at::kBFloat16;
    case DType::f16:
      return at::kHalf;
    case DType::f32:
      return at::kFloat;
    case DType::f64:
      return at::kDouble;
    case DType::i8:
      return at::kChar;
    case DType::u8:
      return at::kByte;
    case DType::i16:
      return at::kShort;
    case DType::i32:
      return at::kInt;
    case DType::i64:
      return at::kLong;
    case DType::boolean:
      return at::kBool;
  }
  return at::kFloat;
}

DType from_aten(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return DType::bf16;
    case at::kHalf:
      return DType::f16;
    case at::kFloat:
      return DType::f32;
    case at::kDouble:
      return DType::f64;
    case at::kChar:
      return DType::i8;
    case at::kByte:
      return DType::u8;
    case at::kShort:
      return DType::i16;
    case at::kInt:
      return DType::i32;
    case at::kLong:
      return DType::i64;
    case at::kBool:
      return DType::boolean;
    default:
      throw Error(std::string("unsupported tensor dtype ") + c10::toString(t));
  }
}

at::Tensor to_aten_tensor(HostTensor&& t) {
  std::vector<int64_t> shape = t.shape;
  unsigned char* data = t.data.release();  // the tensor owns the buffer from here on
  return at::from_blob(
      data, shape, [](void* p) { std::free(p); }, at::TensorOptions().dtype(to_aten(t.dtype)));
}

RankInputs make_inputs(const ProblemSpec& spec, const RunShape& run, int rank, int trial, uint64_t base_seed) {
  RankInputs out;
  for (HostTensor& t : draw_inputs(spec, run, rank, trial, base_seed)) {
    out.names.push_back(t.name);
    out.tensors.push_back(to_aten_tensor(std::move(t)));
  }
  const ReferenceImpl* impl = find_reference(spec.slug);
  if (impl && impl->prepare) {
    OracleContext ctx = oracle_context(spec, run);
    Tensors prepared = impl->prepare(ctx, rank, out.tensors);
    if (prepared.size() != out.tensors.size()) throw Error(spec.folder() + ": prepare changed the number of inputs");
    for (size_t i = 0; i < prepared.size(); ++i)
      if (prepared[i].sizes() != out.tensors[i].sizes() || prepared[i].scalar_type() != out.tensors[i].scalar_type())
        throw Error(spec.folder() + ": prepare changed the shape or dtype of input '" + out.names[i] + "'");
    out.tensors = std::move(prepared);
  }
  return out;
}

bool has_prepare_step(const ProblemSpec& spec) {
  const ReferenceImpl* impl = find_reference(spec.slug);
  return impl && impl->prepare;
}

OracleContext oracle_context(const ProblemSpec& spec, const RunShape& run) {
  OracleContext ctx;
  ctx.world = run.world;
  ctx.params = run.params;
  ctx.scalars = scalar_values(spec, run);
  ctx.float_dtype = to_aten(run.float_dtype);
  ctx.groups = group_layout(spec, run);
  return ctx;
}

}  // namespace pkb
