// Optimizer updates over flat buffers, Keras 3 formulas (see core/backend.h).
// Element-wise: every element's arithmetic is independent of the split, so
// results are identical for any team size.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {
// ~10 flops and 4-5 streams per element: split earlier than plain copies.
constexpr int64_t kUpdateGrain = 4096;
}  // namespace

void CpuBackend::sgd_update(int64_t n, float* w, const float* g, float* m, float lr, float momentum,
                            bool nesterov, float wd_lr) {
  MR_CHECK(momentum == 0.0f || m != nullptr, internal, "sgd with momentum needs a momentum slot");
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
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
  });
}

void CpuBackend::adam_update(int64_t n, float* w, const float* g, float* m, float* v, float* vhat,
                             float alpha, float beta1, float beta2, float epsilon, float wd_lr) {
  const float one_b1 = 1.0f - beta1, one_b2 = 1.0f - beta2;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
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
      w[i] = wi - (mi * alpha) / (std::sqrt(denom_v) + epsilon);
    }
  });
}

void CpuBackend::rmsprop_update(int64_t n, float* w, const float* g, float* v, float* a, float* mom,
                                float lr, float rho, float momentum, float epsilon, float wd_lr) {
  MR_CHECK(momentum <= 0.0f || mom != nullptr, internal,
           "rmsprop with momentum needs a momentum slot");
  const float one_rho = 1.0f - rho;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float wi = w[i];
      if (wd_lr > 0.0f) wi -= wi * wd_lr;
      const float gi = g[i];
      const float vi = rho * v[i] + one_rho * gi * gi;
      v[i] = vi;
      float denom = vi + epsilon;
      if (a != nullptr) {  // centered
        const float ai = rho * a[i] + one_rho * gi;
        a[i] = ai;
        denom = vi - ai * ai + epsilon;
      }
      const float inc = lr * gi / std::sqrt(denom);
      if (momentum > 0.0f) {
        const float mo = momentum * mom[i] + inc;
        mom[i] = mo;
        wi -= mo;
      } else {
        wi -= inc;
      }
      w[i] = wi;
    }
  });
}

}  // namespace mr
