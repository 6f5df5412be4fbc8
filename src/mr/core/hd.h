// MR_HD marks functions that both backends compile: plain inline C++ for the
// CPU build, __host__ __device__ under nvcc, so that a formula shared by the
// CPU and CUDA kernels is written once and both compute the same arithmetic.
#pragma once

#ifdef __CUDACC__
#define MR_HD __host__ __device__ __forceinline__
#else
#define MR_HD inline
#endif
