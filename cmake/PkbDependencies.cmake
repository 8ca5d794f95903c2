# Finds every dependency and fails configuration with a message that names what is missing and how to get it.
# libtorch: PKB_LIBTORCH_DIR (a prefix holding include/ATen and lib/libtorch_cpu.so), else the Python `torch`
# package (GPU nodes), else the system (Debian's libtorch-dev). We locate headers and libraries directly rather
# than through TorchConfig.cmake: the references use only ATen, and the Python package's CMake config drags in
# CUDA/cuDNN discovery that differs between releases.

include(FindPackageHandleStandardArgs)

function(pkb_require found name how)
  if(NOT ${found})
    message(FATAL_ERROR "pkb: missing dependency: ${name}. ${how}")
  endif()
endfunction()

set(PKB_APT_HINT "Run scripts/setup.sh (installs Debian packages) or apt-get install")

# --- MPI ---------------------------------------------------------------------------------------------------
find_package(MPI COMPONENTS CXX QUIET)
pkb_require(MPI_CXX_FOUND "MPI (C++)" "${PKB_APT_HINT} libopenmpi-dev openmpi-bin.")
find_program(PKB_MPIRUN NAMES mpirun mpiexec HINTS ${MPI_HOME} PATH_SUFFIXES bin)
pkb_require(PKB_MPIRUN "mpirun" "${PKB_APT_HINT} openmpi-bin.")

# --- header/library packages ---------------------------------------------------------------------------------
find_package(nlohmann_json 3 QUIET)
pkb_require(nlohmann_json_FOUND "nlohmann/json" "${PKB_APT_HINT} nlohmann-json3-dev.")
find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND)
  find_path(PKB_CLI11_INCLUDE CLI/CLI.hpp)
  pkb_require(PKB_CLI11_INCLUDE "CLI11" "${PKB_APT_HINT} libcli11-dev.")
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${PKB_CLI11_INCLUDE})
endif()
find_package(spdlog QUIET)
pkb_require(spdlog_FOUND "spdlog" "${PKB_APT_HINT} libspdlog-dev.")
find_package(CURL QUIET)
pkb_require(CURL_FOUND "libcurl" "${PKB_APT_HINT} libcurl4-openssl-dev.")
find_package(Threads REQUIRED)
# pkb serve: Debian's cpp-httplib is a compiled library whose pkg-config file carries the defines its ABI needs.
# PKB_BUILD_SERVE=OFF builds pkb without `pkb serve` and `pkb worker` (a GPU node without these packages).
if(PKB_BUILD_SERVE)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(PKB_HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
  endif()
  pkb_require(PKB_HTTPLIB_FOUND "cpp-httplib"
    "${PKB_APT_HINT} libcpp-httplib-dev pkg-config (or configure with -DPKB_BUILD_SERVE=OFF: no pkb serve).")
  find_package(SQLite3 QUIET)
  pkb_require(SQLite3_FOUND "SQLite 3"
    "${PKB_APT_HINT} libsqlite3-dev (or configure with -DPKB_BUILD_SERVE=OFF: no pkb serve).")
endif()
if(PKB_BUILD_TESTS)
  find_package(GTest QUIET)
  pkb_require(GTest_FOUND "GoogleTest" "${PKB_APT_HINT} libgtest-dev (or configure with -DPKB_BUILD_TESTS=OFF).")
endif()

# --- CUDA toolkit and NCCL -----------------------------------------------------------------------------------
find_package(CUDAToolkit QUIET)
pkb_require(CUDAToolkit_FOUND "CUDA Toolkit"
  "Install the CUDA Toolkit (it cannot come from Debian's archive here) and put nvcc on PATH or set CUDAToolkit_ROOT.")

find_path(PKB_NCCL_INCLUDE nccl.h
  HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda /usr
  PATH_SUFFIXES include)
find_library(PKB_NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda /usr
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu)
if(NOT PKB_NCCL_INCLUDE OR NOT PKB_NCCL_LIBRARY)
  message(FATAL_ERROR "pkb: missing dependency: NCCL (nccl.h and libnccl.so). Install NVIDIA's libnccl-dev or "
    "set NCCL_ROOT to its prefix; it is not in Debian's archive.")
endif()
add_library(pkb::nccl UNKNOWN IMPORTED)
set_target_properties(pkb::nccl PROPERTIES IMPORTED_LOCATION ${PKB_NCCL_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${PKB_NCCL_INCLUDE})

# --- libtorch (ATen) -----------------------------------------------------------------------------------------
set(PKB_LIBTORCH_DIR "$ENV{PKB_LIBTORCH_DIR}" CACHE PATH "Prefix holding include/ATen/ATen.h and lib/libtorch_cpu.so")
set(_torch_hints ${PKB_LIBTORCH_DIR})
if(NOT PKB_LIBTORCH_DIR)
  find_program(PKB_PYTHON3 python3)
  if(PKB_PYTHON3)
    execute_process(COMMAND ${PKB_PYTHON3} -c "import torch, os; print(os.path.dirname(torch.__file__))"
      OUTPUT_VARIABLE _py_torch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _py_rc)
    if(_py_rc EQUAL 0 AND EXISTS "${_py_torch}/include/ATen/ATen.h")
      list(APPEND _torch_hints ${_py_torch})
    endif()
  endif()
  list(APPEND _torch_hints /usr /usr/local)
endif()
find_path(PKB_ATEN_INCLUDE ATen/ATen.h HINTS ${_torch_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
find_library(PKB_TORCH_CPU torch_cpu HINTS ${_torch_hints} PATH_SUFFIXES lib lib/x86_64-linux-gnu NO_DEFAULT_PATH)
find_library(PKB_C10 c10 HINTS ${_torch_hints} PATH_SUFFIXES lib lib/x86_64-linux-gnu NO_DEFAULT_PATH)
if(NOT PKB_ATEN_INCLUDE OR NOT PKB_TORCH_CPU OR NOT PKB_C10)
  message(FATAL_ERROR "pkb: missing dependency: libtorch (ATen headers, libtorch_cpu, libc10). On a CPU machine: "
    "${PKB_APT_HINT} libtorch-dev. On a GPU node: make `python3 -c 'import torch'` work, or set PKB_LIBTORCH_DIR.")
endif()
get_filename_component(_torch_libdir ${PKB_TORCH_CPU} DIRECTORY)
find_library(PKB_TORCH_CUDA torch_cuda HINTS ${_torch_libdir} NO_DEFAULT_PATH)
find_library(PKB_C10_CUDA c10_cuda HINTS ${_torch_libdir} NO_DEFAULT_PATH)
add_library(pkb::aten INTERFACE IMPORTED)
target_include_directories(pkb::aten SYSTEM INTERFACE ${PKB_ATEN_INCLUDE})
if(PKB_TORCH_CUDA AND PKB_C10_CUDA)
  set(PKB_TORCH_HAS_CUDA ON)
  # --no-as-needed: nothing references libtorch_cuda directly, but loading it registers ATen's CUDA kernels.
  target_link_libraries(pkb::aten INTERFACE ${PKB_TORCH_CPU} ${PKB_C10}
    "-Wl,--no-as-needed" ${PKB_TORCH_CUDA} ${PKB_C10_CUDA} "-Wl,--as-needed")
  target_compile_definitions(pkb::aten INTERFACE PKB_TORCH_HAS_CUDA=1)
else()
  set(PKB_TORCH_HAS_CUDA OFF)
  target_link_libraries(pkb::aten INTERFACE ${PKB_TORCH_CPU} ${PKB_C10})
endif()
set_property(TARGET pkb::aten APPEND PROPERTY INTERFACE_LINK_OPTIONS "-Wl,-rpath,${_torch_libdir}")
set(PKB_TORCH_VERSION unknown)
set(_tvh "${PKB_ATEN_INCLUDE}/torch/csrc/api/include/torch/version.h")
if(EXISTS ${_tvh})
  file(STRINGS ${_tvh} _tv REGEX "define TORCH_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" PKB_TORCH_VERSION "${_tv}")
  if(NOT PKB_TORCH_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")  # no match leaves the input (once: "")
    set(PKB_TORCH_VERSION unknown)
  endif()
endif()
# The Python package's headers have moved between releases; its own __version__ is authoritative there.
if(PKB_TORCH_VERSION STREQUAL "unknown" AND _torch_libdir MATCHES "-packages/torch")
  execute_process(COMMAND python3 -c "import torch; print(torch.__version__)" OUTPUT_VARIABLE _tv
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _tv_rc)
  if(_tv_rc EQUAL 0 AND _tv)
    set(PKB_TORCH_VERSION "${_tv}")
  endif()
endif()

message(STATUS "pkb: libtorch ${PKB_TORCH_VERSION} at ${_torch_libdir} (CUDA: ${PKB_TORCH_HAS_CUDA})")
message(STATUS "pkb: NCCL ${PKB_NCCL_LIBRARY}; MPI ${MPI_CXX_LIBRARIES}; mpirun ${PKB_MPIRUN}")
