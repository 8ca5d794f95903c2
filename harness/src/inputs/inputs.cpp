#include "inputs/inputs.h"

#include "core/error.h"
#include "reference/reference.h"

namespace pkb {

namespace {

// ATen's scalar type of every DType (core/dtype.cpp's table, which stays torch-free, has the rest), both ways.
constexpr std::pair<DType, at::ScalarType> kAtenTypes[] = {
    {DType::bf16, at::kBFloat16}, {DType::f16, at::kHalf},    {DType::f32, at::kFloat}, {DType::f64, at::kDouble},
    {DType::i8, at::kChar},       {DType::u8, at::kByte},     {DType::i16, at::kShort}, {DType::i32, at::kInt},
    {DType::i64, at::kLong},      {DType::boolean, at::kBool}};

}  // namespace

at::ScalarType to_aten(DType d) {
  for (const auto& [dtype, aten] : kAtenTypes)
    if (dtype == d) return aten;
  throw Error(std::string("no ATen type for dtype ") + dtype_name(d));
}

DType from_aten(at::ScalarType t) {
  for (const auto& [dtype, aten] : kAtenTypes)
    if (aten == t) return dtype;
  throw Error(std::string("unsupported tensor dtype ") + c10::toString(t));
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
