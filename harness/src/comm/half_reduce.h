// The MPI reductions of bf16 and fp16 words (no MPI type has them): each step adds (or multiplies, or takes the larger
// or smaller of) two elements in fp32 and rounds the result to nearest even, as NCCL does. Torch-free and compiled
// optimized in every build type (CMakeLists.txt): every CPU reference's bf16 all-reduce runs through it, and at -O0 the
// rounding's helper calls took ~15% of a cold reference pass's CPU on problem 1 at 1024 x 1024.
#pragma once

#include <mpi.h>

namespace pkb {

enum class HalfKind { bf16, fp16 };
enum class HalfReduction { sum, prod, max, min };

// The MPI user function for `kind` and `reduction` (commutative), for MPI_Op_create.
MPI_User_function* half_reduce_function(HalfKind kind, HalfReduction reduction);

}  // namespace pkb
