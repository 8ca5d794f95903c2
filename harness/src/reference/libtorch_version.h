// Which libtorch a process runs with, read from the library loaded rather than from headers at build time: the
// Python package's headers have moved between releases (a GPU node's records once said libtorch "").
#pragma once

#include <filesystem>
#include <string>

namespace pkb {

// The version of the libtorch at `library` (the path of libtorch_cpu as loaded): pip's torch/version.py beside its
// lib/ directory (`__version__ = '2.11.0+cu130'`), else the file name's soname version (Debian:
// libtorch_cpu.so.1.13 -> 1.13), else `fallback`.
std::string libtorch_version_at(const std::filesystem::path& library, const std::string& fallback);

// libtorch_version_at for the libtorch_cpu this process has loaded.
std::string loaded_libtorch_version(const std::string& fallback);

}  // namespace pkb
