// CUDA backend: optimizer updates over flat buffers, the Keras 3 formulas of
// core/backend.h with the CPU backend's arithmetic (cpu_optimizer.cpp) for
// each element, so one step on either backend gives the same weights to
// within rounding of sqrt.
#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace mr {

namespace {

__global__ void sgd_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                           float* __restrict__ m, float lr, float momentum, bool nesterov,
                           float wd_lr) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i];
    if (wd_lr > 0.0f) wi -= wi * wd_lr;
    if (momentum == 0.0f) {
      wi -= lr * g[i];
    } else {
      const float mi = momentum * m[i] - lr * g[i];
      m[i] = mi;
      wi += nesterov ? momentum * mi - lr * g[i] : mi;
    }
    w[i] = wi;
  }
}

__global__ void adam_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                            float* __restrict__ m, float* __restrict__ v, float* __restrict__ vhat,
                            float alpha, float one_b1, float one_b2, float epsilon, float wd_lr) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i];
    if (wd_lr > 0.0f) wi -= wi * wd_lr;
    const float gi = g[i];
    const float mi = m[i] + (gi - m[i]) * one_b1;
    const float vi = v[i] + (gi * gi - v[i]) * one_b2;
    m[i] = mi;
    v[i] = vi;
    float denom_v = vi;
    if (vhat != nullptr) {
      denom_v = vhat[i] > vi ? vhat[i] : vi;
      vhat[i] = denom_v;
    }
    w[i] = wi - (mi * alpha) / (sqrtf(denom_v) + epsilon);
  }
}

__global__ void rmsprop_kernel(int64_t n, float* __restrict__ w, const float* __restrict__ g,
                               float* __restrict__ v, float* __restrict__ a,
                               float* __restrict__ mom, float lr, float rho, float one_rho,
                               float momentum, float epsilon, float wd_lr) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    float wi = w[i];
    if (wd_lr > 0.0f) wi -= wi * wd_lr;
    const float gi = g[i];
    const float vi = rho * v[i] + one_rho * gi * gi;
    v[i] = vi;
    float denom = vi + epsilon;
    if (a != nullptr) {
      const float ai = rho * a[i] + one_rho * gi;
      a[i] = ai;
      denom = vi - ai * ai + epsilon;
    }
    const float inc = lr * gi / sqrtf(denom);
    if (momentum > 0.0f) {
      const float mo = momentum * mom[i] + inc;
      mom[i] = mo;
      wi -= mo;
    } else {
      wi -= inc;
    }
    w[i] = wi;
  }
}

}  // namespace

void CudaBackend::sgd_update(int64_t n, float* w, const float* g, float* m, float lr,
                             float momentum, bool nesterov, float wd_lr) {
  MR_CHECK(momentum == 0.0f || m != nullptr, internal, "sgd with momentum needs a momentum slot");
  if (n <= 0) return;
  use_device(ordinal_);
  sgd_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(n, w, g, m, lr, momentum,
                                                                  nesterov, wd_lr);
  cuda::check_launch("sgd_kernel", ordinal_);
}

void CudaBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                              float alpha, float beta1, float beta2, float epsilon, float wd_lr) {
  if (n <= 0) return;
  use_device(ordinal_);
  adam_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      n, w, g, m, v, vhat, alpha, 1.0f - beta1, 1.0f - beta2, epsilon, wd_lr);
  cuda::check_launch("adam_kernel", ordinal_);
}

void CudaBackend::rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a,
                                 float* mom, float lr, float rho, float momentum, float epsilon,
                                 float wd_lr) {
  MR_CHECK(momentum <= 0.0f || mom != nullptr, internal,
           "rmsprop with momentum needs a momentum slot");
  if (n <= 0) return;
  use_device(ordinal_);
  rmsprop_kernel<<<cuda::blocks_for(n), cuda::kThreads, 0, stream_>>>(
      n, w, g, v, a, mom, lr, rho, 1.0f - rho, momentum, epsilon, wd_lr);
  cuda::check_launch("rmsprop_kernel", ordinal_);
}

}  // namespace mr
