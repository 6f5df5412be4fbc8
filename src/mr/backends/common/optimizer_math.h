// Per-element formulas of the update-pipeline ops (core/backend.h, issue 13),
// shared by the CPU and CUDA backends (MR_HD): Keras 3's update_step of
// Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion and Lamb, in the order Keras
// writes them (float32), plus gradient clipping and EMA.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/hd.h"
#include "core/step_scalars.h"
#include "core/update_ops.h"

namespace mr {
namespace kmath {

// Keras' ops.clip(g, -c, c) keeps NaN (tf.clip_by_value).
MR_HD float clip_value(float g, float c) { return g < -c ? -c : (g > c ? c : g); }

// tf.clip_by_norm's factor: g * c / max(l, c), l the segment's L2 norm
// (0 for an all-zero segment: the sqrt is not taken).
MR_HD float clip_norm_element(float g, float c, double sumsq) {
  const float l = sumsq > 0.0 ? static_cast<float>(sqrt(sumsq)) : static_cast<float>(sumsq);
  return g * c / (l > c ? l : c);
}

// clip_by_global_norm's scale: c * min(1 / l, 1 / c) + (l - l).
MR_HD float global_clip_scale(float c, double total_sumsq) {
  const float l = static_cast<float>(sqrt(total_sumsq));
  const float a = 1.0f / l, b = 1.0f / c;
  return c * (a < b ? a : b) + (l - l);
}

// Per-step values of a rule in StepScalars::opt (nn/optimizer.cpp fills them):
//   adamax: opt[0] = 1 - beta_1^t;
//   nadam:  opt[0] = u_t, opt[1] = u_{t+1}, opt[2] = u_product_t,
//           opt[3] = u_product_t * u_{t+1}, opt[4] = 1 - beta_2^t;
//   lamb:   opt[0] = 1 - beta_1^t, opt[1] = 1 - beta_2^t.
MR_HD void update_element(UpdateRule rule, float& w, float g, float& s0, float& s1,
                          const StepScalars& s, const UpdateHyper& h) {
  const float lr = s.lr;
  if (s.wd_lr > 0.0f) w -= w * s.wd_lr;
  switch (rule) {
    case UpdateRule::adagrad:
      s0 = s0 + g * g;
      w = w - (lr * g) / sqrtf(s0 + h.epsilon);
      return;
    case UpdateRule::adadelta: {
      const float rho = h.rho;
      s0 = rho * s0 + (1.0f - rho) * (g * g);
      const float delta = -((sqrtf(s1 + h.epsilon) * g) / sqrtf(s0 + h.epsilon));
      s1 = rho * s1 + (1.0f - rho) * (delta * delta);
      w = w + lr * delta;
      return;
    }
    case UpdateRule::adamax: {
      s0 = s0 + (g - s0) * (1.0f - h.beta_1);
      const float bu = h.beta_2 * s1, ag = fabsf(g);
      s1 = bu > ag ? bu : ag;  // ops.maximum
      w = w - (lr * s0) / (s.opt[0] * (s1 + h.epsilon));
      return;
    }
    case UpdateRule::nadam: {
      const float u_t = s.opt[0], u_t1 = s.opt[1], up_t = s.opt[2], up_t1 = s.opt[3];
      s0 = s0 + (g - s0) * (1.0f - h.beta_1);
      s1 = s1 + (g * g - s1) * (1.0f - h.beta_2);
      const float m_hat = (u_t1 * s0) / (1.0f - up_t1) + ((1.0f - u_t) * g) / (1.0f - up_t);
      const float v_hat = s1 / s.opt[4];
      w = w - (m_hat * lr) / (sqrtf(v_hat) + h.epsilon);
      return;
    }
    case UpdateRule::ftrl: {
      const float l2_reg = h.l2 + h.beta / (2.0f * lr);
      const float grad_to_use = g + (2.0f * h.l2_shrinkage) * w;
      const float new_accum = s0 + g * g;
      const float p_new = powf(new_accum, -h.lr_power), p_old = powf(s0, -h.lr_power);
      s1 = s1 + (grad_to_use - ((p_new - p_old) / lr) * w);
      const float quadratic = p_new / lr + 2.0f * l2_reg;
      const float clipped = clip_value(s1, h.l1);
      w = (clipped - s1) / quadratic;
      s0 = new_accum;
      return;
    }
    case UpdateRule::lion: {
      const float c = s0 * h.beta_1 + g * (1.0f - h.beta_1);
      const float sign = c > 0.0f ? 1.0f : (c < 0.0f ? -1.0f : (c == 0.0f ? 0.0f : c));
      w = w - lr * sign;
      s0 = s0 * h.beta_2 + g * (1.0f - h.beta_2);
      return;
    }
  }
}

// Lamb's first part: Adam's moments and the bias-corrected update r.
MR_HD void lamb_moments_element(float& w, float g, float& m, float& v, float& r,
                                const StepScalars& s, const UpdateHyper& h) {
  if (s.wd_lr > 0.0f) w -= w * s.wd_lr;
  m = m + (g - m) * (1.0f - h.beta_1);
  v = v + (g * g - v) * (1.0f - h.beta_2);
  const float m_hat = m / s.opt[0];
  const float v_sqrt = sqrtf(v / s.opt[1]) + h.epsilon;
  r = m_hat / v_sqrt;
}

// Lamb's trust ratio of a segment from the sums of squares of w and r.
MR_HD float lamb_ratio(double w_sq, double r_sq) {
  const float wn = static_cast<float>(sqrt(w_sq)), rn = static_cast<float>(sqrt(r_sq));
  return wn > 0.0f ? (rn > 0.0f ? wn / rn : 1.0f) : 1.0f;
}

}  // namespace kmath
}  // namespace mr
