// Which libtorch a process runs with, read from the library loaded rather than from headers at build time: the
// Python package's headers have moved between releases (a GPU node's records once said libtorch "").
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pkb {

// The version of the libtorch at `library` (the path of libtorch_cpu as loaded): pip's torch/version.py beside its
// lib/ directory (`__version__ = '2.11.0+cu130'`), else the file name's soname version (Debian:
// libtorch_cpu.so.1.13 -> 1.13), else `fallback`.
std::string libtorch_version_at(const std::filesystem::path& library, const std::string& fallback);

// libtorch_version_at for the libtorch_cpu among a program's shared libraries (launch/sandbox.h, shared_libraries),
// `fallback` where there is none: the version a program runs with, found without loading libtorch.
std::string libtorch_version_among(const std::vector<std::filesystem::path>& libraries, const std::string& fallback);

// libtorch_version_at for the libtorch_cpu this process has loaded (this and use_ieee_fp32 need libtorch; the rest is
// in libtorch_version_at.cpp, torch-free).
std::string loaded_libtorch_version(const std::string& fallback);

// Makes this process's fp32 math IEEE fp32: no TF32 in cuDNN convolutions (libtorch's default allows it, so on
// Ampere and later GPUs an fp32 conv2d reference was a TF32 one: 087 off by up to 0.19) nor in cuBLAS matmuls,
// float32 matmul precision "highest". The legacy setters exist in every libtorch from 1.13 to 2.11 and keep the newer
// per-operator settings in step; NVIDIA_TF32_OVERRIDE is not needed. Returns the settings as read back, for the rank
// record's `fp32_math`: {"ieee": true, "tf32_cudnn": false, "tf32_cublas": false, "float32_matmul_precision":
// "highest"}.
nlohmann::json use_ieee_fp32();

}  // namespace pkb
