// Optimizer updates over flat buffers, Keras 3 formulas (see core/backend.h).
// Element-wise: every element's arithmetic is independent of the split, so
// results are identical for any team size.
//
// Each update is a template over its options so that the inner loop has no
// branch and restrict-qualified pointers: GCC then vectorises it (with
// -fno-math-errno, which the core is compiled with, for sqrt). The scalar
// formula is kernel_math.h's, the same in every instantiation and in the
// CUDA kernels.
#include <cmath>

#include "backends/common/kernel_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {
// ~10 flops and 4-5 streams per element: split earlier than plain copies.
constexpr int64_t kUpdateGrain = 4096;

template <bool kDecay, bool kMomentum, bool kNesterov>
void sgd_chunk(int64_t b, int64_t e, float* __restrict w, const float* __restrict g,
               float* __restrict m, float lr, float momentum, float wd_lr) {
  for (int64_t i = b; i < e; ++i) {
    float wi = w[i], mi = kMomentum ? m[i] : 0.0f;
    kmath::sgd_element(kDecay, kMomentum, kNesterov, wi, g[i], mi, lr, momentum, wd_lr);
    w[i] = wi;
    if (kMomentum) m[i] = mi;
  }
}

template <bool kDecay, bool kAmsgrad>
void adam_chunk(int64_t b, int64_t e, float* __restrict w, const float* __restrict g,
                float* __restrict m, float* __restrict v, float* __restrict vhat, float alpha,
                float one_b1, float one_b2, float epsilon, float wd_lr) {
  for (int64_t i = b; i < e; ++i) {
    float wi = w[i], mi = m[i], vi = v[i], hi = kAmsgrad ? vhat[i] : 0.0f;
    kmath::adam_element(kDecay, kAmsgrad, wi, g[i], mi, vi, hi, alpha, one_b1, one_b2, epsilon,
                        wd_lr);
    w[i] = wi;
    m[i] = mi;
    v[i] = vi;
    if (kAmsgrad) vhat[i] = hi;
  }
}

template <bool kDecay, bool kCentered, bool kMomentum>
void rmsprop_chunk(int64_t b, int64_t e, float* __restrict w, const float* __restrict g,
                   float* __restrict v, float* __restrict a, float* __restrict mom, float lr,
                   float rho, float one_rho, float momentum, float epsilon, float wd_lr) {
  for (int64_t i = b; i < e; ++i) {
    float wi = w[i], vi = v[i], ai = kCentered ? a[i] : 0.0f, mo = kMomentum ? mom[i] : 0.0f;
    kmath::rmsprop_element(kDecay, kCentered, kMomentum, wi, g[i], vi, ai, mo, lr, rho, one_rho,
                           momentum, epsilon, wd_lr);
    w[i] = wi;
    v[i] = vi;
    if (kCentered) a[i] = ai;
    if (kMomentum) mom[i] = mo;
  }
}

}  // namespace

void CpuBackend::sgd_update(int64_t n, float* w, const float* g, float* m, const StepScalars* s,
                            float momentum, bool nesterov) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr, wd_lr = s->wd_lr;
  MR_CHECK(momentum == 0.0f || m != nullptr, internal, "sgd with momentum needs a momentum slot");
  const bool decay = wd_lr > 0.0f, mom = momentum != 0.0f;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    if (decay) {
      if (!mom)
        sgd_chunk<true, false, false>(b, e, w, g, m, lr, momentum, wd_lr);
      else if (nesterov)
        sgd_chunk<true, true, true>(b, e, w, g, m, lr, momentum, wd_lr);
      else
        sgd_chunk<true, true, false>(b, e, w, g, m, lr, momentum, wd_lr);
    } else {
      if (!mom)
        sgd_chunk<false, false, false>(b, e, w, g, m, lr, momentum, wd_lr);
      else if (nesterov)
        sgd_chunk<false, true, true>(b, e, w, g, m, lr, momentum, wd_lr);
      else
        sgd_chunk<false, true, false>(b, e, w, g, m, lr, momentum, wd_lr);
    }
  });
}

void CpuBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                             const StepScalars* s, float beta1, float beta2, float epsilon) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float alpha = s->alpha, wd_lr = s->wd_lr;
  const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
  const bool decay = wd_lr > 0.0f, ams = vhat != nullptr;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    if (decay && ams)
      adam_chunk<true, true>(b, e, w, g, m, v, vhat, alpha, one_b1, one_b2, epsilon, wd_lr);
    else if (decay)
      adam_chunk<true, false>(b, e, w, g, m, v, vhat, alpha, one_b1, one_b2, epsilon, wd_lr);
    else if (ams)
      adam_chunk<false, true>(b, e, w, g, m, v, vhat, alpha, one_b1, one_b2, epsilon, wd_lr);
    else
      adam_chunk<false, false>(b, e, w, g, m, v, vhat, alpha, one_b1, one_b2, epsilon, wd_lr);
  });
}

void CpuBackend::rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom,
                                const StepScalars* s, float rho, float momentum, float epsilon) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr, wd_lr = s->wd_lr;
  MR_CHECK(momentum <= 0.0f || mom != nullptr, internal,
           "rmsprop with momentum needs a momentum slot");
  const float one_rho = 1.0f - rho;
  const bool decay = wd_lr > 0.0f, centered = a != nullptr, with_mom = momentum > 0.0f;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    const int variant = (decay ? 4 : 0) | (centered ? 2 : 0) | (with_mom ? 1 : 0);
    switch (variant) {
      case 0:
        rmsprop_chunk<false, false, false>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum,
                                           epsilon, wd_lr);
        break;
      case 1:
        rmsprop_chunk<false, false, true>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum,
                                          epsilon, wd_lr);
        break;
      case 2:
        rmsprop_chunk<false, true, false>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum,
                                          epsilon, wd_lr);
        break;
      case 3:
        rmsprop_chunk<false, true, true>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum, epsilon,
                                         wd_lr);
        break;
      case 4:
        rmsprop_chunk<true, false, false>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum,
                                          epsilon, wd_lr);
        break;
      case 5:
        rmsprop_chunk<true, false, true>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum, epsilon,
                                         wd_lr);
        break;
      case 6:
        rmsprop_chunk<true, true, false>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum, epsilon,
                                         wd_lr);
        break;
      default:
        rmsprop_chunk<true, true, true>(b, e, w, g, v, a, mom, lr, rho, one_rho, momentum, epsilon,
                                        wd_lr);
        break;
    }
  });
}

}  // namespace mr
