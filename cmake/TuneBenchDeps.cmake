# Dependency discovery, once, for all modules.
find_package(Threads REQUIRED)
include(TuneBenchTorch)  # first: a CUDA wheel names the CUPTI and NCCL headers to use

# --- CUDA toolkit headers for CUPTI / NVTX (never linked: CUPTI is dlopen'ed, NVTX3 is header-only).
set(TUNEBENCH_HAVE_CUPTI OFF)
set(TUNEBENCH_CUDA_INCLUDE "")
if(NOT TUNEBENCH_CUPTI STREQUAL "OFF")
  find_path(TUNEBENCH_CUPTI_INCLUDE cupti.h
    HINTS ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} /usr/local/cuda
    PATH_SUFFIXES include extras/CUPTI/include targets/x86_64-linux/include)
  find_path(TUNEBENCH_NVTX_INCLUDE nvtx3/nvToolsExt.h
    HINTS ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} /usr/local/cuda
    PATH_SUFFIXES include targets/x86_64-linux/include)
  if(TUNEBENCH_CUPTI_INCLUDE)
    set(TUNEBENCH_HAVE_CUPTI ON)
  elseif(TUNEBENCH_CUPTI STREQUAL "ON")
    message(FATAL_ERROR "TUNEBENCH_CUPTI=ON but cupti.h was not found (set CUDAToolkit_ROOT)")
  endif()
endif()
find_path(TUNEBENCH_NVTX_INCLUDE nvtx3/nvToolsExt.h HINTS /usr/local/cuda PATH_SUFFIXES include)
set(TUNEBENCH_HAVE_NVTX OFF)
if(TUNEBENCH_NVTX_INCLUDE)
  set(TUNEBENCH_HAVE_NVTX ON)
endif()

# The trace importer needs it (trace_io.cpp stops with #error without it): say so at configure time.
find_package(simdjson REQUIRED)
find_package(nlohmann_json 3 REQUIRED)

# --- LibTorch (engine only). Debian's libtorch-dev (CPU) or the PyTorch wheel's (CUDA) via CMAKE_PREFIX_PATH.
set(TUNEBENCH_TORCH_CUDA OFF)
if(TUNEBENCH_ENGINE)
  find_package(Torch REQUIRED)
  # TORCH_CUDA_LIBRARIES / CAFFE2_USE_CUDA tell whether this LibTorch links CUDA. Debian's installs ATen/cuda
  # headers but no CUDA libraries: CUDA code would compile and fail to link, so it is guarded by this macro.
  if(CAFFE2_USE_CUDA OR TORCH_CUDA_LIBRARIES)
    set(TUNEBENCH_TORCH_CUDA ON)
  endif()
  # NCCL (data parallel on GPUs): c10d's ProcessGroupNCCL from this LibTorch, which links libnccl itself; we
  # need its header and nccl.h (the PyTorch wheel's nvidia/nccl/include: TuneBenchTorch.cmake sets it as
  # TUNEBENCH_NCCL_INCLUDE). Never on a CPU LibTorch: Debian's ships the header but no NCCL in its libraries.
  set(TUNEBENCH_HAVE_NCCL OFF)
  if(TUNEBENCH_TORCH_CUDA AND NOT TUNEBENCH_NCCL STREQUAL "OFF")
    find_path(TUNEBENCH_C10D_NCCL_HEADER torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp
      HINTS ${TORCH_INCLUDE_DIRS} NO_DEFAULT_PATH)
    find_path(TUNEBENCH_NCCL_INCLUDE nccl.h HINTS $ENV{NCCL_HOME} ${CUDAToolkit_ROOT} /usr/local/cuda
      PATH_SUFFIXES include)
    if(TUNEBENCH_C10D_NCCL_HEADER AND TUNEBENCH_NCCL_INCLUDE)
      set(TUNEBENCH_HAVE_NCCL ON)
      # Linked too where found (the wheel's is libnccl.so.2 only), in case c10d's inline code calls NCCL.
      find_library(TUNEBENCH_NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${TUNEBENCH_NCCL_INCLUDE}/../lib
        ${TUNEBENCH_NCCL_INCLUDE}/../lib64)
    endif()
  endif()
  if(TUNEBENCH_NCCL STREQUAL "ON" AND NOT TUNEBENCH_HAVE_NCCL)
    message(FATAL_ERROR "TUNEBENCH_NCCL=ON needs a CUDA LibTorch with c10d/ProcessGroupNCCL.hpp and nccl.h "
                        "(set TUNEBENCH_NCCL_INCLUDE to the directory of nccl.h)")
  endif()
  # Gloo's headers: c10d's ProcessGroupGloo.hpp includes them and no PyTorch wheel ships them (libgloo-dev).
  find_path(TUNEBENCH_GLOO_INCLUDE gloo/algorithm.h)
  if(NOT TUNEBENCH_GLOO_INCLUDE)
    message(FATAL_ERROR "Gloo's headers (gloo/algorithm.h) were not found: install libgloo-dev (scripts/install-deps.sh)")
  endif()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(TURBOJPEG REQUIRED IMPORTED_TARGET libturbojpeg)
  find_package(PNG REQUIRED)
endif()

if(TUNEBENCH_GUI)
  find_package(Qt6 6.2 REQUIRED COMPONENTS Core Gui Widgets Charts Test)
endif()

if(BUILD_TESTING)
  find_package(GTest REQUIRED)
endif()
if(TUNEBENCH_BENCH)
  find_package(benchmark QUIET)
endif()
