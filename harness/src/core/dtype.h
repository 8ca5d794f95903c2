// Element types named in problem.json and safetensors files, with one string table per direction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pkb {

enum class DType { bf16, f16, f32, f64, i8, u8, i16, i32, i64, boolean };

// problem.json names: "bf16", "fp16", "fp32", "fp64", "int8", "uint8", "int16", "int32", "int64", "bool".
std::optional<DType> dtype_from_name(const std::string& name);
const char* dtype_name(DType d);
// safetensors names: "BF16", "F16", "F32", ...
const char* dtype_safetensors_name(DType d);
std::optional<DType> dtype_from_safetensors_name(const std::string& name);
// ATen's names ("BFloat16", "Float", "Long"): the checks' messages name dtypes as c10::toString does.
const char* dtype_aten_name(DType d);
size_t dtype_size(DType d);
bool dtype_is_floating(DType d);
// Unit roundoff of the format (2^-8 for bf16, 2^-24 for fp32); 0 for integers.
double dtype_epsilon(DType d);

}  // namespace pkb
