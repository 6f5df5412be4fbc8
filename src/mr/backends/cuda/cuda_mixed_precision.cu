// Mixed precision on CUDA (issue 14, i14-mpcore): the loss-scaling ops, on
// the replica's stream, no host sync. The flag kernel's threads that find a
// non-finite value all store the same 1.0f, so the result does not depend on
// their order.
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

}  // namespace

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

}  // namespace mr
