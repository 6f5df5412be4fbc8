// CUDA backend: GEMM on cuBLAS (FP32; TF32 tensor cores only after
// set_tf32(true), because they round the inputs to 10-bit mantissas).
#include <cstdint>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

// C = beta * C (row-major, leading dimension ldc): gemm with k == 0, which
// cuBLAS rejects (it needs ld >= 1 for the empty operands).
__global__ void scale_matrix_kernel(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  const int64_t total = m * n;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    float* p = c + (i / n) * ldc + i % n;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

}  // namespace

void CudaBackend::gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  use_device(ordinal_);
  // cuBLAS is column-major: a row-major C (m x n) is a column-major C^T, and
  // C^T = op(B)^T op(A)^T, so B and A swap places and keep their op.
  if (k <= 0) {
    scale_matrix_kernel<<<cuda::blocks_for(m * n), cuda::kThreads, 0, stream_>>>(m, n, beta, c,
                                                                                 ldc);
    cuda::check_launch("scale_matrix_kernel", ordinal_);
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  MR_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && lda <= INT32_MAX &&
               ldb <= INT32_MAX && ldc <= INT32_MAX,
           shape, "gemm dimensions exceed cuBLAS' 32-bit limits");
  MR_CUBLAS_CALL(cublasSgemm(blas_, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                             static_cast<int>(k), &alpha, b, static_cast<int>(ldb), a,
                             static_cast<int>(lda), &beta, c, static_cast<int>(ldc)),
                 ordinal_);
}

}  // namespace mr
