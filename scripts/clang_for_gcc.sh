#!/bin/sh
# CMake's compiler launcher for the torch-free targets of a Test build (CMakeLists.txt, "clang for torch-free
# targets"): runs the command line CMake wrote for g++ with clang++ instead. Arguments: CLANG GCC ARGS...
clang=$1
shift 2
exec "$clang" "$@"
