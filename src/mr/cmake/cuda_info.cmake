# CUDA / NCCL part of the standalone core build, and the generated build_config.h.
#
# Include from src/mr/CMakeLists.txt after mr_core and its CPU kernel flags are
# set up (before the tests section):
#     include(cmake/cuda_info.cmake)
# It expects the target mr_core, whose sources hold core/device_info_none.cpp
# (the CPU-only device info), and the option MR_CUDA.
#
# MR_CUDA=OFF: device_info_none.cpp stays; build_config.h says "no CUDA".
# MR_CUDA=ON:  enables the CUDA language, swaps every *_none.cpp (CPU-only
#              stand-ins) for every *.cu source and backends/cuda/*.cpp, links
#              cudart and cuBLAS,
#              and NCCL when found (NCCL_HOME, the CUDA toolkit, system paths;
#              MR_NCCL=OFF to leave it out).
#              cuDNN likewise when found (CUDNN_HOME, the CUDA toolkit, system
#              paths; MR_CUDNN=OFF or MIRRORED_CUDNN=0 in the environment to
#              leave it out): GPU convolutions then run through cuDNN.
# Architectures: MR_CUDA_ARCHITECTURES (default "80-real;90": SASS for sm_80 and
# sm_90 plus PTX for compute_90, as configure's default for the R build).
#
# build_config.h is written to <build>/generated/ and that directory goes first
# on mr_core's (public) include path, ahead of a src/mr/build_config.h left by
# the R package's configure, which may describe a different configuration.

option(MR_NCCL "Use NCCL for multi-GPU all-reduce when MR_CUDA is ON and NCCL is found" ON)
set(MR_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures (CMAKE_CUDA_ARCHITECTURES syntax)")

set(MR_WITH_CUDA 0)
set(MR_WITH_NCCL 0)
set(MR_CUDA_VERSION "")
set(MR_NCCL_VERSION_STR "")
option(MR_CUDNN "Use cuDNN for GPU convolutions when MR_CUDA is ON and cuDNN is found" ON)
set(MR_WITH_CUDNN 0)
set(MR_CUDNN_VERSION_STR "")

if(MR_CUDA)
  # Same search order as configure: CUDA_HOME, nvcc on PATH, /usr/local/cuda.
  if(NOT CMAKE_CUDA_COMPILER)
    if(DEFINED ENV{CUDA_HOME} AND EXISTS "$ENV{CUDA_HOME}/bin/nvcc")
      set(CMAKE_CUDA_COMPILER "$ENV{CUDA_HOME}/bin/nvcc")
    else()
      find_program(_mr_nvcc nvcc PATHS /usr/local/cuda/bin)
      if(_mr_nvcc)
        set(CMAKE_CUDA_COMPILER "${_mr_nvcc}")
      endif()
    endif()
  endif()
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "${MR_CUDA_ARCHITECTURES}")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)

  set(MR_WITH_CUDA 1)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" MR_CUDA_VERSION "${CUDAToolkit_VERSION}")

  # Every *_none.cpp is the CPU-only stand-in of a CUDA source: drop them.
  get_target_property(_mr_sources mr_core SOURCES)
  list(FILTER _mr_sources EXCLUDE REGEX "_none\\.cpp$")
  set_property(TARGET mr_core PROPERTY SOURCES ${_mr_sources})
  file(GLOB_RECURSE MR_CUDA_SOURCES CONFIGURE_DEPENDS
    "${CMAKE_CURRENT_SOURCE_DIR}/*.cu"
    "${CMAKE_CURRENT_SOURCE_DIR}/backends/cuda/*.cpp")
  list(FILTER MR_CUDA_SOURCES EXCLUDE REGEX "/tests/")
  target_sources(mr_core PRIVATE ${MR_CUDA_SOURCES})
  # mr_core was created before enable_language(CUDA), so its CUDA_ARCHITECTURES
  # was not initialised from CMAKE_CUDA_ARCHITECTURES.
  set_property(TARGET mr_core PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
  target_compile_options(mr_core PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<CONFIG:Release>>:-O3>)
  target_link_libraries(mr_core PUBLIC CUDA::cudart CUDA::cublas)

  if(MR_NCCL)
    find_path(MR_NCCL_INCLUDE_DIR nccl.h
      HINTS "$ENV{NCCL_HOME}/include" ${CUDAToolkit_INCLUDE_DIRS})
    find_library(MR_NCCL_LIBRARY nccl
      HINTS "$ENV{NCCL_HOME}/lib64" "$ENV{NCCL_HOME}/lib" "${CUDAToolkit_LIBRARY_DIR}")
    if(MR_NCCL_INCLUDE_DIR AND MR_NCCL_LIBRARY)
      set(MR_WITH_NCCL 1)
      file(STRINGS "${MR_NCCL_INCLUDE_DIR}/nccl.h" _mr_nccl_defs
        REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
      set(_mr_nccl_parts "")
      foreach(_part MAJOR MINOR PATCH)
        foreach(_line ${_mr_nccl_defs})
          if(_line MATCHES "^#define NCCL_${_part} +([0-9]+)")
            list(APPEND _mr_nccl_parts "${CMAKE_MATCH_1}")
          endif()
        endforeach()
      endforeach()
      string(REPLACE ";" "." MR_NCCL_VERSION_STR "${_mr_nccl_parts}")
      target_include_directories(mr_core PUBLIC "${MR_NCCL_INCLUDE_DIR}")
      target_link_libraries(mr_core PUBLIC "${MR_NCCL_LIBRARY}")
      message(STATUS "mirrored: NCCL ${MR_NCCL_VERSION_STR} (${MR_NCCL_LIBRARY})")
    else()
      message(STATUS "mirrored: NCCL not found (set NCCL_HOME); multi-GPU all-reduce without NCCL")
    endif()
  endif()
  # cuDNN (optional; same search order as configure).
  if(MR_CUDNN AND NOT "$ENV{MIRRORED_CUDNN}" STREQUAL "0")
    find_path(MR_CUDNN_INCLUDE_DIR cudnn.h
      HINTS "$ENV{CUDNN_HOME}/include" ${CUDAToolkit_INCLUDE_DIRS})
    find_library(MR_CUDNN_LIBRARY cudnn
      HINTS "$ENV{CUDNN_HOME}/lib64" "$ENV{CUDNN_HOME}/lib" "${CUDAToolkit_LIBRARY_DIR}")
    if(MR_CUDNN_INCLUDE_DIR AND MR_CUDNN_LIBRARY AND EXISTS "${MR_CUDNN_INCLUDE_DIR}/cudnn_version.h")
      file(STRINGS "${MR_CUDNN_INCLUDE_DIR}/cudnn_version.h" _mr_cudnn_defs
        REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
      set(_mr_cudnn_parts "")
      foreach(_part MAJOR MINOR PATCHLEVEL)
        foreach(_line ${_mr_cudnn_defs})
          if(_line MATCHES "^#define CUDNN_${_part} +([0-9]+)")
            list(APPEND _mr_cudnn_parts "${CMAKE_MATCH_1}")
          endif()
        endforeach()
      endforeach()
      string(REPLACE ";" "." MR_CUDNN_VERSION_STR "${_mr_cudnn_parts}")
      if(MR_CUDNN_VERSION_STR VERSION_GREATER_EQUAL 8)
        set(MR_WITH_CUDNN 1)
        target_include_directories(mr_core PUBLIC "${MR_CUDNN_INCLUDE_DIR}")
        target_link_libraries(mr_core PUBLIC "${MR_CUDNN_LIBRARY}")
        message(STATUS "mirrored: cuDNN ${MR_CUDNN_VERSION_STR} (${MR_CUDNN_LIBRARY})")
      else()
        message(STATUS "mirrored: cuDNN ${MR_CUDNN_VERSION_STR} too old (needs 8); GPU convolutions run as im2col + cuBLAS")
        set(MR_CUDNN_VERSION_STR "")
      endif()
    else()
      message(STATUS "mirrored: cuDNN not found (set CUDNN_HOME); GPU convolutions run as im2col + cuBLAS")
    endif()
  else()
    message(STATUS "mirrored: cuDNN disabled; GPU convolutions run as im2col + cuBLAS")
  endif()
  message(STATUS "mirrored: CUDA ${MR_CUDA_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
endif()

# MR_CPU_FLAGS records the kernel flags chosen by CMakeLists.txt (MR_KERNEL_FLAGS,
# MR_KERNEL_DEFS, MR_GEMM_DEFS, when it set them).
set(_mr_cpu_flags "-O3")
foreach(_f ${MR_KERNEL_FLAGS})
  string(APPEND _mr_cpu_flags " ${_f}")
endforeach()
foreach(_d ${MR_KERNEL_DEFS} ${MR_GEMM_DEFS})
  string(APPEND _mr_cpu_flags " -D${_d}")
endforeach()
set(MR_CPU_FLAGS "${_mr_cpu_flags}")

set(MR_GENERATED_DIR "${CMAKE_CURRENT_BINARY_DIR}/generated")
file(CONFIGURE OUTPUT "${MR_GENERATED_DIR}/build_config.h" CONTENT [=[
// Generated by CMake (src/mr/cmake/cuda_info.cmake); do not edit.
#pragma once

#define MR_WITH_CUDA @MR_WITH_CUDA@
#define MR_WITH_NCCL @MR_WITH_NCCL@
#define MR_CUDA_VERSION "@MR_CUDA_VERSION@"
#define MR_NCCL_VERSION_STR "@MR_NCCL_VERSION_STR@"
#define MR_WITH_DNNL @MR_WITH_DNNL@
#define MR_DNNL_VERSION_STR "@MR_DNNL_VERSION_STR@"
#define MR_WITH_CUDNN @MR_WITH_CUDNN@
#define MR_CUDNN_VERSION_STR "@MR_CUDNN_VERSION_STR@"
#define MR_WITH_GLOO @MR_WITH_GLOO@
#define MR_CPU_FLAGS "@MR_CPU_FLAGS@"
]=] @ONLY)
target_include_directories(mr_core BEFORE PUBLIC "${MR_GENERATED_DIR}")
