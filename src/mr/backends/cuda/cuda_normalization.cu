// CUDA batch-normalization ops. Column reductions use a 32 x kLanes block per
// 32 columns: each lane sums a fixed stride of rows in double, then lanes are
// added in lane order, so the arithmetic depends only on the shape (replicas
// stay bit-identical, and runs repeat). Element-wise parts use the formulas
// of backends/common/batch_norm_math.h, as the CPU does.
#include "backends/common/batch_norm_math.h"
#include "backends/cuda/cuda_backend.h"

namespace mr {

namespace {

constexpr int kLanes = 8;

__global__ void column_moments_kernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                                      const float* __restrict__ mean, float scale,
                                      float* __restrict__ out) {
  __shared__ double part[kLanes][33];
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  double s = 0.0;
  if (c < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += kLanes) {
      const double v = x[r * cols + c];
      if (mean == nullptr) {
        s += v;
      } else {
        const double d = v - mean[c];
        s += d * d;
      }
    }
  }
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double total = 0.0;
    for (int k = 0; k < kLanes; ++k) total += part[k][threadIdx.x];
    out[c] = static_cast<float>(total * scale);
  }
}

__global__ void bn_forward_kernel(int64_t rows, int64_t cols, const float* __restrict__ x,
                                  const float* __restrict__ mean, const float* __restrict__ var,
                                  const float* __restrict__ gamma, const float* __restrict__ beta,
                                  float eps, float* __restrict__ y) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t c = i % cols;
    y[i] = bn::forward(x[i], mean[c], bn::inv_std(var[c], eps), gamma != nullptr ? gamma[c] : 1.0f,
                       beta != nullptr ? beta[c] : 0.0f);
  }
}

__global__ void bn_backward_reduce_kernel(int64_t rows, int64_t cols, const float* __restrict__ dy,
                                          const float* __restrict__ x,
                                          const float* __restrict__ mean,
                                          const float* __restrict__ var, float eps,
                                          float* __restrict__ sum_dy,
                                          float* __restrict__ sum_dy_xhat) {
  __shared__ double part[2][kLanes][33];
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  double s = 0.0, sx = 0.0;
  if (c < cols) {
    const float is = bn::inv_std(var[c], eps);
    for (int64_t r = threadIdx.y; r < rows; r += kLanes) {
      const float d = dy[r * cols + c];
      const float xhat = (x[r * cols + c] - mean[c]) * is;
      s += d;
      sx += static_cast<double>(d) * xhat;
    }
  }
  part[0][threadIdx.y][threadIdx.x] = s;
  part[1][threadIdx.y][threadIdx.x] = sx;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double t = 0.0, tx = 0.0;
    for (int k = 0; k < kLanes; ++k) {
      t += part[0][k][threadIdx.x];
      tx += part[1][k][threadIdx.x];
    }
    sum_dy[c] = static_cast<float>(t);
    sum_dy_xhat[c] = static_cast<float>(tx);
  }
}

__global__ void bn_backward_kernel(int64_t rows, int64_t cols, const float* dy,
                                   const float* __restrict__ x, const float* __restrict__ mean,
                                   const float* __restrict__ var, const float* __restrict__ gamma,
                                   float eps, const float* __restrict__ sum_dy,
                                   const float* __restrict__ sum_dy_xhat, float inv_n, float* dx) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t c = i % cols;
    const float is = bn::inv_std(var[c], eps);
    const float xhat = (x[i] - mean[c]) * is;
    dx[i] = bn::backward(dy[i], xhat, gamma != nullptr ? gamma[c] : 1.0f, is, inv_n * sum_dy[c],
                         inv_n * sum_dy_xhat[c]);
  }
}

unsigned column_blocks(int64_t cols) { return static_cast<unsigned>((cols + 31) / 32); }

}  // namespace

void CudaBackend::column_moments(int64_t rows, int64_t cols, const float* x, const float* mean,
                                 float scale, float* out) {
  if (cols <= 0) return;
  use_device(ordinal_);
  column_moments_kernel<<<column_blocks(cols), dim3(32, kLanes), 0, stream_>>>(rows, cols, x, mean,
                                                                               scale, out);
  cuda::check_launch("column_moments_kernel", ordinal_);
}

void CudaBackend::batch_norm_forward(int64_t rows, int64_t cols, const float* x, const float* mean,
                                     const float* var, const float* gamma, const float* beta,
                                     float eps, float* y) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  bn_forward_kernel<<<cuda::blocks_for(rows * cols), cuda::kThreads, 0, stream_>>>(
      rows, cols, x, mean, var, gamma, beta, eps, y);
  cuda::check_launch("bn_forward_kernel", ordinal_);
}

void CudaBackend::batch_norm_backward_reduce(int64_t rows, int64_t cols, const float* dy,
                                             const float* x, const float* mean, const float* var,
                                             float eps, float* sum_dy, float* sum_dy_xhat) {
  if (cols <= 0) return;
  use_device(ordinal_);
  bn_backward_reduce_kernel<<<column_blocks(cols), dim3(32, kLanes), 0, stream_>>>(
      rows, cols, dy, x, mean, var, eps, sum_dy, sum_dy_xhat);
  cuda::check_launch("bn_backward_reduce_kernel", ordinal_);
}

void CudaBackend::batch_norm_backward(int64_t rows, int64_t cols, const float* dy, const float* x,
                                      const float* mean, const float* var, const float* gamma,
                                      float eps, const float* sum_dy, const float* sum_dy_xhat,
                                      float inv_n, float* dx) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  bn_backward_kernel<<<cuda::blocks_for(rows * cols), cuda::kThreads, 0, stream_>>>(
      rows, cols, dy, x, mean, var, gamma, eps, sum_dy, sum_dy_xhat, inv_n, dx);
  cuda::check_launch("bn_backward_kernel", ordinal_);
}

}  // namespace mr
