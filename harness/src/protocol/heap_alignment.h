// The symmetric heap's one alignment rule, for the monitors' runtime and the runner's symm_alloc alike.
#pragma once

#include <cstddef>

namespace pkb {

// Every block of the symmetric heap starts at a multiple of this (harness/include/pkb/abi.h promises it).
constexpr size_t kHeapAlignment = 256;
constexpr size_t align_to_heap(size_t bytes) { return (bytes + kHeapAlignment - 1) / kHeapAlignment * kHeapAlignment; }

}  // namespace pkb
