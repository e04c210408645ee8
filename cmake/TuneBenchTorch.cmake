# LibTorch from a Python environment's PyTorch wheel: one recipe for this machine (the project's environment,
# scripts/python-env.sh) and the GPU box (its own torch). Given TUNEBENCH_PYTHON, it asks that interpreter where
# its torch lives and points find_package(Torch) and the CUDA-side lookups at the wheel:
#  - CMAKE_PREFIX_PATH gets torch's CMake config;
#  - a CUDA wheel's Caffe2Config needs nvcc (the toolkit's) and cuDNN given by path (the wheel has only
#    libcudnn.so.9, which FindCUDNN does not look for);
#  - CUPTI and NCCL headers come from the wheel first: LibTorch loads the wheel's libcupti and links its
#    libnccl, so the record layouts and the API must be theirs;
#  - ATen/cuda headers include the cuBLAS/cuSPARSE/cuSOLVER headers: the toolkit's, else the wheel's.
# Without TUNEBENCH_PYTHON (and no project environment), find_package(Torch) searches CMAKE_PREFIX_PATH as given.
set(TUNEBENCH_PYTHON "" CACHE FILEPATH "the Python whose PyTorch wheel the engine links (scripts/python-env.sh)")
# Not given: the project's environment when it exists (cmake --preset default after scripts/install-deps.sh).
if(TUNEBENCH_ENGINE AND NOT TUNEBENCH_PYTHON AND NOT Torch_DIR)
  execute_process(COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/python-env.sh" --existing
                  OUTPUT_VARIABLE tb_env_python OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE tb_env_rc)
  if(tb_env_rc EQUAL 0 AND tb_env_python)
    set(TUNEBENCH_PYTHON "${tb_env_python}" CACHE FILEPATH "" FORCE)
  endif()
endif()
set(TUNEBENCH_TORCH_VERSION "")
set(TUNEBENCH_WHEEL_CUDA_INCLUDE "")
if(TUNEBENCH_ENGINE AND TUNEBENCH_PYTHON)
  execute_process(
    COMMAND "${TUNEBENCH_PYTHON}" -c
      "import os, torch; print(torch.utils.cmake_prefix_path); print(os.path.dirname(os.path.dirname(torch.__file__))); print(torch.__version__); print(torch.version.cuda or '')"
    OUTPUT_VARIABLE tb_torch_facts ERROR_VARIABLE tb_torch_err RESULT_VARIABLE tb_torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT tb_torch_rc EQUAL 0)
    message(FATAL_ERROR "TUNEBENCH_PYTHON=${TUNEBENCH_PYTHON} cannot import torch: ${tb_torch_err}"
                        "(make the project's environment with scripts/python-env.sh)")
  endif()
  string(REPLACE "\n" ";" tb_torch_facts "${tb_torch_facts}")
  list(GET tb_torch_facts 0 tb_torch_prefix)
  list(GET tb_torch_facts 1 tb_site)
  list(GET tb_torch_facts 2 TUNEBENCH_TORCH_VERSION)
  list(LENGTH tb_torch_facts tb_n)
  set(tb_wheel_cuda "")
  if(tb_n GREATER 3)
    list(GET tb_torch_facts 3 tb_wheel_cuda)
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${tb_torch_prefix}")
  set(Python_EXECUTABLE "${TUNEBENCH_PYTHON}")  # the Python TorchConfig looks for: this one, not PATH's
  message(STATUS "TuneBench: torch ${TUNEBENCH_TORCH_VERSION} (CUDA ${tb_wheel_cuda}) from ${tb_site}")
  if(tb_wheel_cuda)
    if(NOT CMAKE_CUDA_COMPILER)
      find_program(TUNEBENCH_NVCC nvcc HINTS ${CUDAToolkit_ROOT} $ENV{CUDA_HOME} /usr/local/cuda PATH_SUFFIXES bin)
      if(NOT TUNEBENCH_NVCC)
        message(FATAL_ERROR "torch ${TUNEBENCH_TORCH_VERSION} is a CUDA build: its CMake config needs a CUDA "
                            "toolkit (nvcc) to configure against, and none was found (set CUDAToolkit_ROOT)")
      endif()
      set(CMAKE_CUDA_COMPILER "${TUNEBENCH_NVCC}" CACHE FILEPATH "" FORCE)
    endif()
    get_filename_component(tb_toolkit "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(tb_toolkit "${tb_toolkit}" DIRECTORY)
    if(NOT CUDAToolkit_ROOT)
      set(CUDAToolkit_ROOT "${tb_toolkit}")
    endif()
    if(NOT CUDA_TOOLKIT_ROOT_DIR)
      set(CUDA_TOOLKIT_ROOT_DIR "${tb_toolkit}")
    endif()
    # Caffe2's CUDA setup would otherwise compile and run a probe for the installed GPUs' architectures (which
    # CMake 3.25 cannot even build against CUDA 13 under C++20). The engine compiles no device code, so the
    # list only has to be valid: Ampere and Hopper, the GPUs it is measured on.
    if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
      set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
    endif()
    file(GLOB tb_cudnn_lib "${tb_site}/nvidia/cudnn/lib/libcudnn.so.[0-9]*")
    if(tb_cudnn_lib AND EXISTS "${tb_site}/nvidia/cudnn/include/cudnn.h" AND NOT CUDNN_LIBRARY_PATH)
      list(GET tb_cudnn_lib 0 tb_cudnn_lib)
      set(CUDNN_INCLUDE_PATH "${tb_site}/nvidia/cudnn/include" CACHE PATH "")
      set(CUDNN_LIBRARY_PATH "${tb_cudnn_lib}" CACHE FILEPATH "")
    endif()
    # The wheel's CUDA headers directory (nvidia/cu13/include for a CUDA 13 wheel, nvidia/cuda_cupti/include
    # in the per-library layout of older wheels).
    string(REGEX MATCH "^[0-9]+" tb_cuda_major "${tb_wheel_cuda}")
    foreach(d "${tb_site}/nvidia/cu${tb_cuda_major}/include" "${tb_site}/nvidia/cuda_cupti/include")
      if(EXISTS "${d}/cupti.h" AND NOT TUNEBENCH_CUPTI_INCLUDE)
        set(TUNEBENCH_CUPTI_INCLUDE "${d}" CACHE PATH "")
      endif()
    endforeach()
    if(EXISTS "${tb_site}/nvidia/cu${tb_cuda_major}/include/cublas_v2.h")
      set(TUNEBENCH_WHEEL_CUDA_INCLUDE "${tb_site}/nvidia/cu${tb_cuda_major}/include")
    endif()
    if(EXISTS "${tb_site}/nvidia/nccl/include/nccl.h" AND NOT TUNEBENCH_NCCL_INCLUDE)
      set(TUNEBENCH_NCCL_INCLUDE "${tb_site}/nvidia/nccl/include" CACHE PATH "")
    endif()
  endif()
endif()
