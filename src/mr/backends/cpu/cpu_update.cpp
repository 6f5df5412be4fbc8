// The update-pipeline ops (core/backend.h, issue 13) on the CPU: segmented
// sums of squares, gradient clipping, the element-wise rules of Adagrad,
// Adadelta, Adamax, Nadam, Ftrl and Lion, Lamb's two parts, EMA and gradient
// accumulation. Formulas: backends/common/optimizer_math.h.
//
// Determinism: each segment's sum is taken serially in index order (one team
// member per segment), so it does not depend on the team size.
#include "backends/common/optimizer_math.h"
#include "backends/cpu/cpu_backend.h"
#include "core/error.h"

namespace mr {

namespace {
constexpr int64_t kUpdateGrain = 4096;
}  // namespace

void CpuBackend::segment_sumsq(int64_t nseg, const int64_t* seg, const float* x, double* out) {
  if (nseg <= 0) return;
  cpu::for_range(team_, nseg, 1, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const float* p = x + seg[2 * k];
      const int64_t n = seg[2 * k + 1];
      double acc = 0.0;
      for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]) * p[i];
      out[k] = acc;
    }
  });
}

void CpuBackend::clip_gradients(GradientClip mode, float c, int64_t nseg, const int64_t* seg,
                                float* g, const double* sumsq) {
  float global_scale = 1.0f;
  if (mode == GradientClip::global_norm) {
    double total = 0.0;
    for (int64_t k = 0; k < nseg; ++k) total += sumsq[k];
    global_scale = kmath::global_clip_scale(c, total);
  }
  for (int64_t k = 0; k < nseg; ++k) {
    float* p = g + seg[2 * k];
    const double sq = mode == GradientClip::norm ? sumsq[k] : 0.0;
    cpu::for_range(team_, seg[2 * k + 1], kUpdateGrain, [&](int64_t b, int64_t e) {
      switch (mode) {
        case GradientClip::value:
          for (int64_t i = b; i < e; ++i) p[i] = kmath::clip_value(p[i], c);
          break;
        case GradientClip::norm:
          for (int64_t i = b; i < e; ++i) p[i] = kmath::clip_norm_element(p[i], c, sq);
          break;
        case GradientClip::global_norm:
          for (int64_t i = b; i < e; ++i) p[i] = p[i] * global_scale;
          break;
      }
    });
  }
}

void CpuBackend::optimizer_update(UpdateRule rule, int64_t n, float* w, const float* g, float* s0,
                                  float* s1, const StepScalars* s, const UpdateHyper& h) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const StepScalars sc = *s;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float wi = w[i], a = s0 ? s0[i] : 0.0f, z = s1 ? s1[i] : 0.0f;
      kmath::update_element(rule, wi, g[i], a, z, sc, h);
      w[i] = wi;
      if (s0) s0[i] = a;
      if (s1) s1[i] = z;
    }
  });
}

void CpuBackend::lamb_moments(int64_t n, float* w, const float* g, float* m, float* v, float* r,
                              const StepScalars* s, const UpdateHyper& h) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const StepScalars sc = *s;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float wi = w[i], mi = m[i], vi = v[i], ri = 0.0f;
      kmath::lamb_moments_element(wi, g[i], mi, vi, ri, sc, h);
      w[i] = wi;
      m[i] = mi;
      v[i] = vi;
      r[i] = ri;
    }
  });
}

void CpuBackend::lamb_apply(int64_t nseg, const int64_t* seg, float* w, const float* r,
                            const double* w_sq, const double* r_sq, const StepScalars* s) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float lr = s->lr;
  for (int64_t k = 0; k < nseg; ++k) {
    const float step = kmath::lamb_ratio(w_sq[k], r_sq[k]) * lr;
    float* wp = w + seg[2 * k];
    const float* rp = r + seg[2 * k];
    cpu::for_range(team_, seg[2 * k + 1], kUpdateGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) wp[i] -= step * rp[i];
    });
  }
}

void CpuBackend::ema_update(int64_t n, float* avg, const float* w, const StepScalars* s) {
  if (s->skip != 0.0f) return;  // i14-mpcore: a step skipped by loss scaling
  const float m = s->ema_momentum, one_m = 1.0f - m;
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) avg[i] = m * avg[i] + one_m * w[i];
  });
}

void CpuBackend::accumulate_apply(int64_t n, float* g, float* acc, float steps) {
  cpu::for_range(team_, n, kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      g[i] = (g[i] + acc[i]) / steps;
      acc[i] = 0.0f;
    }
  });
}

}  // namespace mr
