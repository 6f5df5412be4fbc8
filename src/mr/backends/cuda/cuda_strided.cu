// CUDA backend: the shape and merge ops (strided_copy, extremum and its
// gradient). One thread per destination element; index arithmetic and the
// order of the sums are common/strided_math.h's, shared with the CPU.
#include "backends/common/nan_math.h"
#include "backends/common/strided_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

__global__ void strided_copy_kernel(StridedCopy c, int64_t n, const float* src, float* dst) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    int64_t so = 0, d = 0;
    kmath::strided_offsets(c, i, &so, &d);
    dst[d] = c.sum_rank == 0 ? src[so] : kmath::strided_sum(c, src + so);
  }
}

__global__ void extremum_kernel(int64_t n, bool is_max, const float* a, const float* b,
                                float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = kmath::extremum_of(is_max, a[i], b[i]);
}

__global__ void extremum_grad_kernel(int64_t n, const float* x, const float* y, const float* dy,
                                     float* taken, float* dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const bool eq = nanmath::same_or_nan(x[i], y[i]);
    if (dx != nullptr) dx[i] = taken[i] == 0.0f && eq ? dy[i] : 0.0f;
    taken[i] = taken[i] != 0.0f || eq ? 1.0f : 0.0f;
  }
}

// One thread per row for short rows (Dot's vectors usually are): the row's
// sums run in the same order as on the CPU. Rows of kLongRow columns or more
// run one block per row (l2_long_*): kRowThreads threads each sum a fixed
// stride of the row in double, then a fixed tree: deterministic, a function
// of the shape only, within float rounding of the CPU's order.
__global__ void l2_normalize_kernel(int64_t rows, int64_t cols, const float* x, float* y) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x)
    kmath::l2_normalize_row(cols, x + r * cols, y + r * cols);
}

__global__ void l2_normalize_backward_kernel(int64_t rows, int64_t cols, const float* x,
                                             const float* dy, float* dx) {
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += int64_t{blockDim.x} * gridDim.x)
    kmath::l2_normalize_row_backward(cols, x + r * cols, dy + r * cols, dx + r * cols);
}

constexpr int64_t kLongRow = 256;
constexpr int kRowThreads = 256;

// Sum of v over the block by a fixed tree; every thread gets the total.
__device__ __forceinline__ double row_tree_sum(double v, double* part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kRowThreads / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();  // part is reused by the next sum
  return total;
}

// kmath::row_inv_norm with the block's sum.
__device__ __forceinline__ double block_inv_norm(int64_t cols, const float* x, double* part,
                                                 bool* clamped) {
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) s += static_cast<double>(x[c]) * x[c];
  s = row_tree_sum(s, part);
  *clamped = s < kmath::kL2Eps;
  return 1.0 / sqrt(*clamped ? kmath::kL2Eps : s);
}

__global__ void l2_long_kernel(int64_t cols, const float* x, float* y) {
  __shared__ double part[kRowThreads];
  const float* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  bool clamped = false;
  const double inv = block_inv_norm(cols, xr, part, &clamped);
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) yr[c] = static_cast<float>(xr[c] * inv);
}

__global__ void l2_long_backward_kernel(int64_t cols, const float* x, const float* dy, float* dx) {
  __shared__ double part[kRowThreads];
  const int64_t off = blockIdx.x * cols;
  const float *xr = x + off, *dr = dy + off;
  bool clamped = false;
  const double inv = block_inv_norm(cols, xr, part, &clamped);
  double dot = 0.0;  // <dy, y>
  if (!clamped)
    for (int64_t c = threadIdx.x; c < cols; c += kRowThreads)
      dot += static_cast<double>(dr[c]) * (xr[c] * inv);
  dot = row_tree_sum(dot, part);
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads)
    dx[off + c] = static_cast<float>((dr[c] - xr[c] * inv * dot) * inv);
}

}  // namespace

void CudaBackend::strided_copy(const StridedCopy& c, const float* src, float* dst) {
  MR_CHECK(
      c.rank >= 0 && c.rank <= kMaxStridedRank && c.sum_rank >= 0 && c.sum_rank <= kMaxStridedRank,
      internal, "strided_copy: rank ", c.rank, " / sum rank ", c.sum_rank, " out of range");
  const int64_t n = kmath::box_size(c.rank, c.dims);
  if (n <= 0) return;
  use_device(ordinal_);
  strided_copy_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(c, n, src, dst);
  cuda::check_launch("strided_copy_kernel", ordinal_);
}

void CudaBackend::extremum(int64_t n, bool is_max, const float* a, const float* b, float* out) {
  if (n <= 0) return;
  use_device(ordinal_);
  extremum_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, is_max, a, b, out);
  cuda::check_launch("extremum_kernel", ordinal_);
}

void CudaBackend::extremum_grad(int64_t n, const float* x, const float* y, const float* dy,
                                float* taken, float* dx) {
  if (n <= 0) return;
  use_device(ordinal_);
  extremum_grad_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, x, y, dy, taken, dx);
  cuda::check_launch("extremum_grad_kernel", ordinal_);
}

void CudaBackend::l2_normalize_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  if (cols >= kLongRow) {
    MR_CHECK(rows < (int64_t{1} << 31), shape, "too many rows for one l2_normalize call: ", rows);
    l2_long_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream_>>>(cols, x, y);
    cuda::check_launch("l2_long_kernel", ordinal_);
    return;
  }
  l2_normalize_kernel<<<cuda::blocks_for(rows), cuda::kThreads, 0, stream_>>>(rows, cols, x, y);
  cuda::check_launch("l2_normalize_kernel", ordinal_);
}

void CudaBackend::l2_normalize_rows_backward(int64_t rows, int64_t cols, const float* x,
                                             const float* dy, float* dx) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  if (cols >= kLongRow) {
    MR_CHECK(rows < (int64_t{1} << 31), shape, "too many rows for one l2_normalize call: ", rows);
    l2_long_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream_>>>(cols, x, dy,
                                                                                      dx);
    cuda::check_launch("l2_long_backward_kernel", ordinal_);
    return;
  }
  l2_normalize_backward_kernel<<<cuda::blocks_for(rows), cuda::kThreads, 0, stream_>>>(rows, cols,
                                                                                       x, dy, dx);
  cuda::check_launch("l2_normalize_backward_kernel", ordinal_);
}

}  // namespace mr
