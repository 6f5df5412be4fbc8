// CUDA backend: fill, axpy, multiply and the bias ops (gemm: cuda_gemm.cu). Element-wise kernels
// grid-stride over n; bias_grad sums each column over rows in a fixed order.
#include "backends/cuda/cuda_backend.h"

namespace mr {

namespace {

__global__ void fill_kernel(int64_t n, float* x, float v) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    x[i] = v;
}

__global__ void axpy_kernel(int64_t n, float alpha, const float* __restrict__ x,
                            float* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] += alpha * x[i];
}

__global__ void multiply_kernel(int64_t n, const float* a, const float* b, float* out) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    out[i] = a[i] * b[i];
}

__global__ void bias_add_kernel(int64_t rows, int64_t cols, const float* __restrict__ bias,
                                float* __restrict__ y) {
  const int64_t n = rows * cols;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] += bias[i % cols];
}

// Block (32, kRowLanes): threadIdx.x picks a column of the block's 32, each
// of the kRowLanes lanes sums rows y, y + kRowLanes, ... in order, then lane
// sums are added in lane order. The arithmetic depends only on the shape.
constexpr int kRowLanes = 8;

__global__ void bias_grad_kernel(int64_t rows, int64_t cols, const float* __restrict__ dy,
                                 float* __restrict__ db, bool accumulate) {
  __shared__ float part[kRowLanes][33];
  const int64_t c = blockIdx.x * int64_t{32} + threadIdx.x;
  float s = 0.0f;
  if (c < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kRowLanes) s += dy[r * cols + c];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float total = accumulate ? db[c] : 0.0f;
    float sum = 0.0f;
    for (int k = 0; k < kRowLanes; ++k) sum += part[k][threadIdx.x];
    db[c] = total + sum;
  }
}

}  // namespace

void CudaBackend::fill(int64_t n, float* x, float value) {
  if (n <= 0) return;
  use_device(ordinal_);
  fill_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, x, value);
  cuda::check_launch("fill_kernel", ordinal_);
}

void CudaBackend::axpy(int64_t n, float alpha, const float* x, float* y) {
  if (n <= 0) return;
  use_device(ordinal_);
  axpy_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, alpha, x, y);
  cuda::check_launch("axpy_kernel", ordinal_);
}

void CudaBackend::multiply(int64_t n, const float* a, const float* b, float* out) {
  if (n <= 0) return;
  use_device(ordinal_);
  multiply_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, a, b, out);
  cuda::check_launch("multiply_kernel", ordinal_);
}

void CudaBackend::bias_add(int64_t rows, int64_t cols, const float* bias, float* y) {
  if (rows <= 0 || cols <= 0) return;
  use_device(ordinal_);
  bias_add_kernel<<<cuda::blocks_for(rows * cols), cuda::kThreads, 0, stream_>>>(rows, cols, bias,
                                                                                 y);
  cuda::check_launch("bias_add_kernel", ordinal_);
}

void CudaBackend::bias_grad(int64_t rows, int64_t cols, const float* dy, float* db,
                            bool accumulate) {
  if (cols <= 0) return;
  use_device(ordinal_);
  const dim3 block(32, kRowLanes);
  const auto grid = static_cast<unsigned>((cols + 31) / 32);
  bias_grad_kernel<<<grid, block, 0, stream_>>>(rows < 0 ? 0 : rows, cols, dy, db, accumulate);
  cuda::check_launch("bias_grad_kernel", ordinal_);
}

}  // namespace mr
