#!/usr/bin/env bash
# Installs what pkb needs from Debian's archive, idempotently (nothing is downloaded when all is present), and
# says clearly what it cannot install. On a GPU node without apt access it only checks.
set -euo pipefail

# clang-format: scripts/format.sh, which scripts/test.sh runs (the style in .clang-format).
# chromium: headless, for the tests that load report.html and leaderboard.html and check that their script ran.
# slurm-wlm, munge: the one-node Slurm cluster the array-job test starts (tests/slurm; its mpi_pmix plugin is
# what `--launcher srun` uses).
# clang, libclang-rt-14-dev (its sanitizer runtimes): Test builds compile torch-free targets with clang (CMakeLists.txt)
# and scripts/tsan.sh its whole tree, in ~60% of g++'s CPU time. ninja-build: scripts/build.sh's generator.
# libcpp-httplib-dev, libsqlite3-dev: pkb serve's HTTP server and its queue (docs/serve.md).
packages=(cmake g++ make ninja-build libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev libspdlog-dev
          libcurl4-openssl-dev libgtest-dev bubblewrap chromium slurm-wlm munge clang-format clang libclang-rt-14-dev
          libcpp-httplib-dev libsqlite3-dev pkg-config)
have_python_torch() { python3 -c 'import torch' >/dev/null 2>&1; }
# The reference code needs libtorch: the Python package's on GPU nodes; on CPU machines Debian's libtorch-dev, named
# explicitly (python3-torch only recommends it, and its include symlinks dangle without it), and python3-torch for
# the reference.py cross-check on CPU ranks (gloo). Debian has no safetensors module; the runner needs none.
# libopenblas0-pthread: Debian's libtorch calls libblas.so.3, which without it is the reference (netlib) BLAS;
# a check-test shard spent 58% of its time in that sgemm/dgemm (21 s -> 6.5 s with OpenBLAS).
have_python_torch || packages+=(libtorch-dev python3-torch libopenblas0-pthread)

# A package counts as present when dpkg has it or, for tools, when the command exists (GPU images ship cmake
# from pip, for instance).
declare -A provides=([cmake]=cmake [g++]=g++ [make]=make [ninja-build]=ninja [openmpi-bin]=mpirun [bubblewrap]=bwrap
                     [chromium]=chromium [slurm-wlm]=slurmd [munge]=munged [clang-format]=clang-format [clang]=clang++)
missing=()
for p in "${packages[@]}"; do
  if [ -n "${provides[$p]:-}" ] && command -v "${provides[$p]}" >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # No archive reachable (GPU nodes): carry on; CMake names whatever is really missing.
    if apt-get update -qq >/dev/null 2>&1; then
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        echo "setup: apt-get could not install some of: ${missing[*]} (CMake will name what is really missing)" >&2
    else
      echo "setup: apt-get update failed (no archive reachable?); not installed: ${missing[*]}" >&2
    fi
  elif command -v apt-get >/dev/null && command -v sudo >/dev/null; then
    echo "setup: installing ${missing[*]} (sudo)"
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    # GPU nodes often have these from another source (pip, modules); CMake will say what is really missing.
    echo "setup: cannot install with apt here; not registered as Debian packages: ${missing[*]}" >&2
  fi
fi

# What Debian's archive cannot provide here: say so plainly.
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if ! command -v nvcc >/dev/null && [ ! -x "$cuda_home/bin/nvcc" ]; then
  echo "setup: MISSING: the CUDA Toolkit (nvcc). Install it from NVIDIA (https://developer.nvidia.com/cuda-downloads)" \
       "and set CUDA_HOME; setup.sh cannot install it." >&2
  exit 1
fi
nccl_found=no
for h in "${NCCL_ROOT:-/nonexistent}/include/nccl.h" "$cuda_home/include/nccl.h" /usr/include/nccl.h /usr/local/include/nccl.h; do
  [ -f "$h" ] && nccl_found=yes
done
if [ $nccl_found = no ]; then
  if ! python3 -c 'import nvidia.nccl' >/dev/null 2>&1; then
    echo "setup: MISSING: NCCL (nccl.h, libnccl.so). Install NVIDIA's libnccl-dev or set NCCL_ROOT; setup.sh cannot" \
         "install it." >&2
    exit 1
  fi
fi
echo "setup: dependencies present"
