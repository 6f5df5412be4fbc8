// CUDA ops of Keras' Normalization layer: element-wise, grid-stride, with the
// per-element formula of backends/common/layer_norm_math.h (the CPU's).
#include "backends/common/layer_norm_math.h"
#include "backends/cuda/cuda_backend.h"

namespace mr {

namespace {

__global__ void normalize_columns_kernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ var, bool invert,
                                         float* __restrict__ y) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t c = i % cols;
    const float s = lnorm::feature_scale(var[c]);
    y[i] = invert ? mean[c] + x[i] * s : (x[i] - mean[c]) / s;
  }
}

__global__ void normalize_columns_backward_kernel(int64_t rows, int64_t cols, const float* dy,
                                                  const float* __restrict__ var, bool invert,
                                                  float* dx) {
  const int64_t total = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float s = lnorm::feature_scale(var[i % cols]);
    dx[i] = invert ? dy[i] * s : dy[i] / s;
  }
}

}  // namespace

void CudaBackend::normalize_columns(int64_t rows, int64_t cols, const float* x, const float* mean,
                                    const float* var, bool invert, float* y) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  normalize_columns_kernel<<<cuda::blocks_for(rows * cols), cuda::kThreads, 0, stream_>>>(
      rows, cols, x, mean, var, invert, y);
  cuda::check_launch("normalize_columns_kernel", ordinal_);
}

void CudaBackend::normalize_columns_backward(int64_t rows, int64_t cols, const float* dy,
                                             const float* var, bool invert, float* dx) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  normalize_columns_backward_kernel<<<cuda::blocks_for(rows * cols), cuda::kThreads, 0, stream_>>>(
      rows, cols, dy, var, invert, dx);
  cuda::check_launch("normalize_columns_backward_kernel", ordinal_);
}

}  // namespace mr
