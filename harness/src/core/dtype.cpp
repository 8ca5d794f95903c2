#include "core/dtype.h"

#include <array>

namespace pkb {
namespace {

struct DTypeRow {
  DType dtype;
  const char* name;
  const char* safetensors;
  const char* aten;  // c10::toString's name, which the checks' messages use
  size_t size;
  bool floating;
  double epsilon;
};

constexpr std::array<DTypeRow, 10> kTable = {{
    {DType::bf16, "bf16", "BF16", "BFloat16", 2, true, 0x1p-8},
    {DType::f16, "fp16", "F16", "Half", 2, true, 0x1p-11},
    {DType::f32, "fp32", "F32", "Float", 4, true, 0x1p-24},
    {DType::f64, "fp64", "F64", "Double", 8, true, 0x1p-53},
    {DType::i8, "int8", "I8", "Char", 1, false, 0},
    {DType::u8, "uint8", "U8", "Byte", 1, false, 0},
    {DType::i16, "int16", "I16", "Short", 2, false, 0},
    {DType::i32, "int32", "I32", "Int", 4, false, 0},
    {DType::i64, "int64", "I64", "Long", 8, false, 0},
    {DType::boolean, "bool", "BOOL", "Bool", 1, false, 0},
}};

const DTypeRow& row(DType d) {
  for (const auto& r : kTable)
    if (r.dtype == d) return r;
  return kTable[0];
}

}  // namespace

std::optional<DType> dtype_from_name(const std::string& name) {
  for (const auto& r : kTable)
    if (name == r.name) return r.dtype;
  return std::nullopt;
}
std::optional<DType> dtype_from_safetensors_name(const std::string& name) {
  for (const auto& r : kTable)
    if (name == r.safetensors) return r.dtype;
  return std::nullopt;
}
const char* dtype_name(DType d) { return row(d).name; }
const char* dtype_safetensors_name(DType d) { return row(d).safetensors; }
const char* dtype_aten_name(DType d) { return row(d).aten; }
size_t dtype_size(DType d) { return row(d).size; }
bool dtype_is_floating(DType d) { return row(d).floating; }
double dtype_epsilon(DType d) { return row(d).epsilon; }

}  // namespace pkb
