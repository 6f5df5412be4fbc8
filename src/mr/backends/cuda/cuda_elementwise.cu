// CUDA backend: fill, axpy, multiply and the bias ops (gemm: cuda_gemm.cu). Element-wise kernels
// grid-stride over n; bias_grad is a chunked column reduction (cuda_column_reduce.h): every
// column's sum in a fixed order that depends only on the shape.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_column_reduce.h"

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

// bias_grad's column sums (float, as the CPU's): dy's rows, then db[c] = (db[c] when
// accumulating, else 0) + the column's total.
struct BiasGradTerm {
  const float* dy;
  int64_t cols;
  struct Col {};
  __device__ Col begin(int64_t) const { return {}; }
  __device__ void add(Col, int64_t r, int64_t c, float* s) const { s[0] += dy[r * cols + c]; }
};
struct BiasGradFinish {
  float* db;
  bool accumulate;
  __device__ void operator()(int64_t c, const float* t) const {
    const float total = accumulate ? db[c] : 0.0f;
    db[c] = total + t[0];
  }
};

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
  cuda::column_reduce<1, float>(stream_, ordinal_, column_partials(), rows, cols,
                                BiasGradTerm{dy, cols}, BiasGradFinish{db, accumulate},
                                "bias_grad kernels");
}

}  // namespace mr
