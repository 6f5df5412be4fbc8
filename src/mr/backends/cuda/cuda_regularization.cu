// CUDA ops of weight and activity regularization and of weight constraints
// (backends/common/regularization_math.h). Penalty sums are two-pass
// block-per-segment reductions: the n elements are cut into segments (their
// number and size a function of n only, at most kMaxSegments); the block of
// segment b sums it with kSumThreads threads, each a fixed stride of the
// segment in double, then a shared-memory tree in a fixed pattern, into
// partial b (the backend's reduction scratch, preallocated); one block then
// adds the partials by the same pattern. The result depends only on n
// (replicas stay bit-identical, runs repeat), no atomics, and a weight of
// 25M floats runs on the whole GPU. One segment finishes in its own block.
// Norm constraints give each (outer, inner) group one thread that sums its
// `reduce` elements in order.
#include "backends/common/regularization_math.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_segments.h"

namespace mr {

namespace {

constexpr int kSumThreads = 512;
// Elements per segment at least (16 per thread), and segments at most (the
// reduction scratch the backend allocates up front: no step grows it).
constexpr int64_t kSegmentElements = int64_t{16} * kSumThreads;
constexpr int64_t kMaxSegments = 4096;

using cuda::Segments;
Segments segments_of(int64_t n) { return cuda::segments_of(n, kSegmentElements, kMaxSegments); }

// Tree sum of part[0..kSumThreads) into part[0], in a fixed pattern.
__device__ __forceinline__ void block_tree_sum(double* part) {
  for (int stride = kSumThreads / 2; stride > 0; stride /= 2) {
    __syncthreads();
    if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
  }
  __syncthreads();
}

// A penalty's total reaches the accumulator as *acc += (mul * total) / div.
struct PenaltyAcc {
  double* acc;
  double mul, div;
  __device__ void add(double total) const {
    if (acc != nullptr) *acc += mul * total / div;
  }
};

// The block's sum v over its threads: into partials[blockIdx.x], or into
// the accumulator when the grid has one block.
__device__ __forceinline__ void finish_segment(double v, double* part, double* partials,
                                               const PenaltyAcc& out) {
  part[threadIdx.x] = v;
  block_tree_sum(part);
  if (threadIdx.x != 0) return;
  if (gridDim.x == 1)
    out.add(part[0]);
  else
    partials[blockIdx.x] = part[0];
}

// One block: the partials of `count` segments, added by the same pattern.
__global__ void penalty_finish_kernel(int64_t count, const double* partials, PenaltyAcc out) {
  __shared__ double part[kSumThreads];
  double s = 0.0;
  for (int64_t b = threadIdx.x; b < count; b += kSumThreads) s += partials[b];
  part[threadIdx.x] = s;
  block_tree_sum(part);
  if (threadIdx.x == 0) out.add(part[0]);
}

__global__ void l1_l2_penalty_kernel(int64_t n, int64_t seg, const float* __restrict__ x, float l1,
                                     float l2, float grad_scale, float* grad, double* partials,
                                     PenaltyAcc out) {
  __shared__ double part[kSumThreads];
  const int64_t b0 = blockIdx.x * seg, b1 = b0 + seg < n ? b0 + seg : n;
  double s = 0.0;
  for (int64_t i = b0 + threadIdx.x; i < b1; i += kSumThreads) {
    const float v = x[i];
    s += regmath::l1_l2_term(v, l1, l2);
    if (grad != nullptr) grad[i] += grad_scale * regmath::l1_l2_grad(v, l1, l2);
  }
  finish_segment(s, part, partials, out);
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

__global__ void offdiag_abs_kernel(int64_t rows, int64_t seg, const float* __restrict__ p,
                                   float coef, float* dp, double* partials, PenaltyAcc out) {
  __shared__ double part[kSumThreads];
  const int64_t n = rows * rows;
  const int64_t b0 = blockIdx.x * seg, b1 = b0 + seg < n ? b0 + seg : n;
  double s = 0.0;
  for (int64_t k = b0 + threadIdx.x; k < b1; k += kSumThreads) {
    const int64_t i = k / rows, j = k % rows;
    const float v = p[k];
    if (i != j) s += fabs(static_cast<double>(v));
    if (dp != nullptr) dp[k] = i == j ? 0.0f : coef * regmath::sign(v);
  }
  finish_segment(s, part, partials, out);
}

}  // namespace

void CudaBackend::l1_l2_penalty(int64_t n, const float* x, float l1, float l2, double scale,
                                double* acc, float grad_scale, float* grad) {
  if (n <= 0) return;
  use_device(ordinal_);
  const Segments sg = segments_of(n);
  double* partials = reduction_scratch(kMaxSegments);  // allocated by the constructor
  const PenaltyAcc out{acc, scale, 1.0};
  l1_l2_penalty_kernel<<<static_cast<unsigned>(sg.count), kSumThreads, 0, stream_>>>(
      n, sg.size, x, l1, l2, grad_scale, grad, partials, out);
  cuda::check_launch("l1_l2_penalty_kernel", ordinal_);
  if (sg.count == 1 || acc == nullptr) return;
  penalty_finish_kernel<<<1, kSumThreads, 0, stream_>>>(sg.count, partials, out);
  cuda::check_launch("penalty_finish_kernel", ordinal_);
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
  // acc += scale * 0.5 * factor * sum / pairs, in that order (as before the
  // sum had segments); each off-diagonal gradient is coef * sign.
  const double pairs = static_cast<double>(rows) * (static_cast<double>(rows) - 1.0) / 2.0;
  const auto coef = static_cast<float>(0.5 * factor / pairs);
  const PenaltyAcc out{acc, scale * 0.5 * static_cast<double>(factor), pairs};
  const Segments sg = segments_of(rows * rows);
  double* partials = reduction_scratch(kMaxSegments);
  offdiag_abs_kernel<<<static_cast<unsigned>(sg.count), kSumThreads, 0, stream_>>>(
      rows, sg.size, p, coef, dp, partials, out);
  cuda::check_launch("offdiag_abs_kernel", ordinal_);
  if (sg.count == 1 || acc == nullptr) return;
  penalty_finish_kernel<<<1, kSumThreads, 0, stream_>>>(sg.count, partials, out);
  cuda::check_launch("penalty_finish_kernel", ordinal_);
}

}  // namespace mr
