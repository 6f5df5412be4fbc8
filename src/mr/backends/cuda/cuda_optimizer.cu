// CUDA backend: optimizer updates over flat buffers, one thread per element
// running kernel_math.h's update (the CPU backend's arithmetic), so one step
// on either backend gives the same weights to within rounding of sqrt.
#include "backends/common/kernel_math.h"
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

// Per-step values come from the device block (core/step_scalars.h), read once
// per thread.
__global__ void sgd_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                           float* __restrict__ m, const StepScalars* __restrict__ s, float momentum,
                           bool nesterov) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr, wd_lr = s->wd_lr;
  const bool with_m = momentum != 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i], mi = with_m ? m[i] : 0.0f;
    kmath::sgd_element(wd_lr > 0.0f, with_m, nesterov, wi, g[i], mi, lr, momentum, wd_lr);
    w[i] = wi;
    if (with_m) m[i] = mi;
  }
}

__global__ void adam_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                            float* __restrict__ m, float* __restrict__ v, float* __restrict__ vhat,
                            const StepScalars* __restrict__ s, float one_b1, float one_b2,
                            float epsilon) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float alpha = s->alpha, wd_lr = s->wd_lr;
  const bool ams = vhat != nullptr;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i], mi = m[i], vi = v[i], hi = ams ? vhat[i] : 0.0f;
    kmath::adam_element(wd_lr > 0.0f, ams, wi, g[i], mi, vi, hi, alpha, one_b1, one_b2, epsilon,
                        wd_lr);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    if (ams) vhat[i] = hi;
  }
}

__global__ void rmsprop_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                               float* __restrict__ v, float* __restrict__ a,
                               float* __restrict__ mom, const StepScalars* __restrict__ s,
                               float rho, float one_rho, float momentum, float epsilon) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr, wd_lr = s->wd_lr;
  const bool centered = a != nullptr, with_mom = momentum > 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i], vi = v[i], ai = centered ? a[i] : 0.0f, mo = with_mom ? mom[i] : 0.0f;
    kmath::rmsprop_element(wd_lr > 0.0f, centered, with_mom, wi, g[i], vi, ai, mo, lr, rho, one_rho,
                           momentum, epsilon, wd_lr);
    w[i] = wi;
    v[i] = vi;
    if (centered) a[i] = ai;
    if (with_mom) mom[i] = mo;
  }
}

}  // namespace

void CudaBackend::sgd_update(int64_t n, float* w, const float* g, float* m, const StepScalars* s,
                             float momentum, bool nesterov) {
  MR_CHECK(momentum == 0.0f || m != nullptr, internal, "sgd with momentum needs a momentum slot");
  if (n <= 0) return;
  use_device(ordinal_);
  sgd_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, w, g, m, s, momentum,
                                                                  nesterov);
  cuda::check_launch("sgd_kernel", ordinal_);
}

void CudaBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                              const StepScalars* s, float beta1, float beta2, float epsilon) {
  if (n <= 0) return;
  use_device(ordinal_);
  adam_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      n, w, g, m, v, vhat, s, 1.0f - beta1, 1.0f - beta2, epsilon);
  cuda::check_launch("adam_kernel", ordinal_);
}

void CudaBackend::rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a,
                                 float* mom, const StepScalars* s, float rho, float momentum,
                                 float epsilon) {
  MR_CHECK(momentum <= 0.0f || mom != nullptr, internal,
           "rmsprop with momentum needs a momentum slot");
  if (n <= 0) return;
  use_device(ordinal_);
  rmsprop_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      n, w, g, v, a, mom, s, rho, 1.0f - rho, momentum, epsilon);
  cuda::check_launch("rmsprop_kernel", ordinal_);
}

}  // namespace mr
