// CUDA batch-normalization ops. Column reductions are chunked (cuda_column_reduce.h): rows in
// chunks on blockIdx.y, each chunk's 32 x kColumnLanes lanes sum a fixed stride of rows in
// double and are added in lane order, then the chunks in chunk order, so the arithmetic
// depends only on the shape (replicas stay bit-identical, and runs repeat). Element-wise parts
// use the formulas of backends/common/batch_norm_math.h, as the CPU does.
#include "backends/common/batch_norm_math.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_column_reduce.h"

namespace mr {

namespace {

// Sum of x, or of (x - mean)^2 when mean is given, in double; out[c] = total * scale.
struct MomentsTerm {
  const float* x;
  const float* mean;
  int64_t cols;
  struct Col {
    double m;
  };
  __device__ Col begin(int64_t c) const { return {mean != nullptr ? double{mean[c]} : 0.0}; }
  __device__ void add(const Col& k, int64_t r, int64_t c, double* s) const {
    const double v = x[r * cols + c];
    if (mean == nullptr) {
      s[0] += v;
    } else {
      const double d = v - k.m;
      s[0] += d * d;
    }
  }
};
struct MomentsFinish {
  float* out;
  float scale;
  __device__ void operator()(int64_t c, const double* t) const {
    out[c] = static_cast<float>(t[0] * scale);
  }
};

// Sums of dy and of dy * xhat (xhat in float, as the element-wise formulas).
struct BnReduceTerm {
  const float* dy;
  const float* x;
  const float* mean;
  const float* var;
  float eps;
  int64_t cols;
  struct Col {
    float mean, inv_std;
  };
  __device__ Col begin(int64_t c) const { return {mean[c], bn::inv_std(var[c], eps)}; }
  __device__ void add(const Col& k, int64_t r, int64_t c, double* s) const {
    const float d = dy[r * cols + c];
    const float xhat = (x[r * cols + c] - k.mean) * k.inv_std;
    s[0] += d;
    s[1] += static_cast<double>(d) * xhat;
  }
};
struct BnReduceFinish {
  float* sum_dy;
  float* sum_dy_xhat;
  __device__ void operator()(int64_t c, const double* t) const {
    sum_dy[c] = static_cast<float>(t[0]);
    sum_dy_xhat[c] = static_cast<float>(t[1]);
  }
};

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

}  // namespace

void CudaBackend::column_moments(int64_t rows, int64_t cols, const float* x, const float* mean,
                                 float scale, float* out) {
  if (cols <= 0) return;
  use_device(ordinal_);
  cuda::column_reduce<1, double>(stream_, ordinal_, column_partials(), rows, cols,
                                 MomentsTerm{x, mean, cols}, MomentsFinish{out, scale},
                                 "column_moments kernels");
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
  cuda::column_reduce<2, double>(stream_, ordinal_, column_partials(), rows, cols,
                                 BnReduceTerm{dy, x, mean, var, eps, cols},
                                 BnReduceFinish{sum_dy, sum_dy_xhat}, "bn_backward_reduce kernels");
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
