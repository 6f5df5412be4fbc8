// Mixed precision on CUDA (issue 14, i14-mpcore): the loss-scaling ops, on
// the replica's stream, no host sync. The flag kernel's threads that find a
// non-finite value all store the same 1.0f, so the result does not depend on
// their order.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/common/loss_scale_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

__device__ __forceinline__ bool nonfinite(float v) {
  return (__float_as_uint(v) & 0x7f800000u) == 0x7f800000u;
}

__global__ void nonfinite_flag_kernel(int64_t n, const float* __restrict__ x, float* flag) {
  bool found = false;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    found |= nonfinite(x[i]);
  if (found) *flag = 1.0f;
}

__global__ void unscale_kernel(int64_t n, float* __restrict__ g,
                               const StepScalars* __restrict__ s) {
  const float scale = s->loss_scale;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    g[i] = g[i] / scale;
}

// One thread: a few words, queued after the step's updates (and captured
// with them in a step's graph), read by the next step's first ops.
__global__ void advance_loss_scale_kernel(LossScaleAdvance a) { loss_scale::advance(a); }

// Round to nearest even (CUDA's _rn conversions); f16 overflows to Inf.
__global__ void cast_bf16_kernel(int64_t n, const float* __restrict__ x,
                                 __nv_bfloat16* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

__global__ void cast_f16_kernel(int64_t n, const float* __restrict__ x, __half* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = __float2half_rn(x[i]);
}

void require_lowp(DType t, const char* op) {
  MR_CHECK(t == DType::bf16 || t == DType::f16, value, op, ": dtype ", dtype_name(t),
           " is not a 16-bit float type (expected bfloat16 or float16)");
}

}  // namespace

bool CudaBackend::native_lowp(DType t) const {
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal_) != cudaSuccess)
    return false;
  // Tensor cores: f16 from Volta (7.x), bf16 from Ampere (8.x).
  return (t == DType::f16 && major >= 7) || (t == DType::bf16 && major >= 8);
}

void CudaBackend::cast_lowp(DType t, int64_t n, const float* src, void* dst) {
  require_lowp(t, "cast_lowp");
  if (n <= 0) return;
  use_device(ordinal_);
  if (t == DType::bf16) {
    cast_bf16_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
        n, src, static_cast<__nv_bfloat16*>(dst));
    cuda::check_launch("cast_bf16_kernel", ordinal_);
  } else {
    cast_f16_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, src,
                                                                         static_cast<__half*>(dst));
    cuda::check_launch("cast_f16_kernel", ordinal_);
  }
}

void CudaBackend::gemm_lowp(DType t, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                            float alpha, const void* a, int64_t lda, const void* b, int64_t ldb,
                            float beta, float* c, int64_t ldc) {
  require_lowp(t, "gemm_lowp");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // C = beta * C, as gemm() does for k == 0.
    gemm(false, false, m, n, 0, alpha, nullptr, 1, nullptr, 1, beta, c, ldc);
    return;
  }
  use_device(ordinal_);
  MR_CHECK(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX && lda <= INT32_MAX &&
               ldb <= INT32_MAX && ldc <= INT32_MAX,
           shape, "gemm_lowp dimensions exceed cuBLAS' 32-bit limits");
  const cudaDataType_t dt = t == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (gemm()).
  MR_CUBLAS_CALL(
      cublasGemmEx(blas_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                   static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, dt,
                   static_cast<int>(ldb), a, dt, static_cast<int>(lda), &beta, c, CUDA_R_32F,
                   static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      ordinal_);
}

void CudaBackend::nonfinite_flag(int64_t n, const float* x, float* flag) {
  if (n <= 0) return;
  use_device(ordinal_);
  nonfinite_flag_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, x, flag);
  cuda::check_launch("nonfinite_flag_kernel", ordinal_);
}

void CudaBackend::unscale_gradients(int64_t n, float* g, const StepScalars* s) {
  if (n <= 0) return;
  use_device(ordinal_);
  unscale_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, g, s);
  cuda::check_launch("unscale_kernel", ordinal_);
}

void CudaBackend::advance_loss_scale(const LossScaleAdvance& a) {
  MR_CHECK(a.block != nullptr && a.word != nullptr && a.table != nullptr && a.table_rows > 0 &&
               a.growth_steps >= 1,
           internal, "advance_loss_scale: incomplete operands");
  use_device(ordinal_);
  advance_loss_scale_kernel<<<1, 1, 0, stream_>>>(a);
  cuda::check_launch("advance_loss_scale_kernel", ordinal_);
}

}  // namespace mr
