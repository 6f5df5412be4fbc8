// CUDA ops of weight and activity regularization and of weight constraints
// (backends/common/regularization_math.h). Penalty sums run in one block of
// kSumThreads: each thread sums a fixed stride of elements in double, then a
// shared-memory tree adds the partials in a fixed pattern, so the result
// depends only on n (replicas stay bit-identical, runs repeat) and no
// scratch memory is needed. Norm constraints give each (outer, inner) group
// one thread that sums its `reduce` elements in order.
#include "backends/common/regularization_math.h"
#include "backends/cuda/cuda_backend.h"

namespace mr {

namespace {

constexpr int kSumThreads = 512;

// Tree sum of part[0..kSumThreads) into part[0], in a fixed pattern.
__device__ __forceinline__ void block_tree_sum(double* part) {
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    __syncthreads();
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
  }
  __syncthreads();
}

__global__ void l1_l2_penalty_kernel(int64_t n, const float* __restrict__ x, float l1, float l2,
                                     double scale, double* acc, float grad_scale, float* grad) {
  __shared__ double part[kSumThreads];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kSumThreads) {
    const float v = x[i];
    s += regmath::l1_l2_term(v, l1, l2);
    if (grad != nullptr) grad[i] += grad_scale * regmath::l1_l2_grad(v, l1, l2);
  }
  part[threadIdx.x] = s;
  block_tree_sum(part);
  if (threadIdx.x == 0 && acc != nullptr) *acc += scale * part[0];
}

__global__ void norm_constraint_kernel(int64_t outer, int64_t reduce, int64_t inner,
                                       float min_value, float max_value, float rate, float* w) {
  const int64_t groups = outer * inner;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < groups;
       k += int64_t{blockDim.x} * gridDim.x) {
    const int64_t o = k / inner, i = k % inner;
    float* g = w + o * reduce * inner + i;
    double s = 0.0;
    for (int64_t r = 0; r < reduce; ++r) s += static_cast<double>(g[r * inner]) * g[r * inner];
    const float f = regmath::norm_scale(static_cast<float>(sqrt(s)), min_value, max_value, rate);
    for (int64_t r = 0; r < reduce; ++r) g[r * inner] *= f;
  }
}

__global__ void non_neg_kernel(int64_t n, float* w) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    w[i] = regmath::non_neg(w[i]);
}

__global__ void offdiag_abs_kernel(int64_t rows, const float* __restrict__ p, float factor,
                                   double scale, double* acc, float* dp) {
  __shared__ double part[kSumThreads];
  const double pairs = static_cast<double>(rows) * (static_cast<double>(rows) - 1.0) / 2.0;
  const float coef = static_cast<float>(0.5 * factor / pairs);
  const int64_t n = rows * rows;
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += kSumThreads) {
    const int64_t i = k / rows, j = k % rows;
    const float v = p[k];
    if (i != j) s += fabs(static_cast<double>(v));
    if (dp != nullptr) dp[k] = i == j ? 0.0f : coef * regmath::sign(v);
  }
  part[threadIdx.x] = s;
  block_tree_sum(part);
  if (threadIdx.x == 0 && acc != nullptr) *acc += scale * 0.5 * factor * part[0] / pairs;
}

}  // namespace

void CudaBackend::l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale,
                                double* acc, float grad_scale, float* grad) {
  if (n <= 0) return;
  use_device(ordinal_);
  l1_l2_penalty_kernel<<<1, kSumThreads, 0, stream_>>>(n, x, l1, l2, scale, acc, grad_scale, grad);
  cuda::check_launch("l1_l2_penalty_kernel", ordinal_);
}

void CudaBackend::norm_constraint(int64_t outer, int64_t reduce, int64_t inner, float min_value,
                                  float max_value, float rate, float* w) {
  if (outer * inner <= 0) return;
  use_device(ordinal_);
  norm_constraint_kernel<<<cuda::blocks_for(outer * inner), cuda::kThreads, 0, stream_>>>(
      outer, reduce, inner, min_value, max_value, rate, w);
  cuda::check_launch("norm_constraint_kernel", ordinal_);
}

void CudaBackend::non_neg_constraint(int64_t n, float* w) {
  if (n <= 0) return;
  use_device(ordinal_);
  non_neg_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, w);
  cuda::check_launch("non_neg_kernel", ordinal_);
}

void CudaBackend::offdiag_abs_penalty(int64_t rows, const float* p, float factor, double scale,
                                      double* acc, float* dp) {
  if (rows <= 1) {
    if (dp != nullptr && rows == 1) fill(1, dp, 0.0f);
    return;
  }
  use_device(ordinal_);
  offdiag_abs_kernel<<<1, kSumThreads, 0, stream_>>>(rows, p, factor, scale, acc, dp);
  cuda::check_launch("offdiag_abs_kernel", ordinal_);
}

}  // namespace mr
