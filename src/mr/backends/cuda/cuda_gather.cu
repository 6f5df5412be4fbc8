// CUDA backend: gather_rows (i14-devinput), the row gather of datasets
// resident on the device. One thread per destination float (a grid-stride
// loop): each float is copied, so the result is exact and deterministic.
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

__global__ void gather_rows_kernel(int64_t rows, int64_t width, const float* src,
                                   const int32_t* index, float* dst) {
  const int64_t n = rows * width;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t r = i / width, c = i - r * width;
    dst[i] = src[static_cast<int64_t>(index[r]) * width + c];
  }
}

}  // namespace

void CudaBackend::gather_rows(int64_t rows, int64_t width, const float* src, const int32_t* index,
                              float* dst) {
  const int64_t n = rows * width;
  if (n <= 0) return;
  use_device(ordinal_);
  gather_rows_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(rows, width, src, index,
                                                                          dst);
  cuda::check_launch("gather_rows_kernel", ordinal_);
}

}  // namespace mr
