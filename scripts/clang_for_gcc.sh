#!/bin/sh
# CMake's compiler launcher for the torch-free targets of a Test build (CMakeLists.txt, "clang for torch-free
# targets"): runs the command line CMake wrote for g++ with clang++ instead. Arguments: CLANG GCC ARGS...
clang=$1
shift 2
case " $* " in
  *" -x c++-header "*)
    # A precompiled header (CMake's GNU command: -x c++-header -include H -o H.gch). clang would take an existing
    # H.gch as the prefix of the new one, so an out-of-date one is removed first. Instantiating the header's
    # templates once here saves each user ~0.6-2 s.
    out=
    prev=
    for arg; do
      [ "$prev" = -o ] && out=$arg
      prev=$arg
    done
    [ -z "$out" ] || rm -f "$out"
    exec "$clang" -fpch-instantiate-templates "$@"
    ;;
esac
exec "$clang" "$@"
