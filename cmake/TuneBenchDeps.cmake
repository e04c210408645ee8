# Dependency discovery, once, for all modules.
find_package(Threads REQUIRED)

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
