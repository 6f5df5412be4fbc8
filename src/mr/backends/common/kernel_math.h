// Per-row loss, metric and activation formulas and per-element optimizer
// updates, shared by the CPU and CUDA backends (MR_HD):
// both backends compute the same arithmetic in the same order for a row; they
// differ only in how rows are spread over threads and how row values are summed.
// Keras 3 (TensorFlow backend) semantics:
// - sparse CE, logits: logsumexp(z) - z[y]; probabilities: c = clip(p, eps,
//   1 - eps), loss = log(sum c) - log(c[y]) (Keras clips, takes the log and
//   feeds it to sparse_softmax_cross_entropy_with_logits, which normalises).
// - categorical CE, logits: sum_j t_j (logsumexp(z) - z_j); probabilities:
//   q = p / sum(p), c = clip(q, eps, 1 - eps), loss = -sum_j t_j log(c_j).
// - binary CE, per element then the mean over cols; probabilities:
//   c = clip(p), -(t log c + (1 - t) log(1 - c)); logits: the stable
//   max(z, 0) - z t + log(1 + exp(-|z|)).
// - MSE: mean over cols of (p - t)^2.
// Label smoothing s (categorical, binary) replaces each target t by
// t (1 - s) + s / cols (categorical) or t (1 - s) + s / 2 (binary).
// Gradients are those of the per-sample value (clip passes gradient where its
// input lies inside [eps, 1 - eps], as tf.clip_by_value does), times grad_scale.
// eps = 1e-7 (keras.config.epsilon()).
//
// Device code cannot throw: a class index outside 0..cols-1 makes a row
// function return 0 and set *bad; each backend turns that into mr::Error.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/backend.h"
#include "core/hd.h"

namespace mr {
namespace kmath {

constexpr float kEps = 1e-7f;
constexpr float kOneMinusEps = static_cast<float>(1.0 - 1e-7);

MR_HD bool inside_clip(float p) { return p >= kEps && p <= kOneMinusEps; }
MR_HD float clip(float p) { return p < kEps ? kEps : (p > kOneMinusEps ? kOneMinusEps : p); }

// -1 unless v is an integer in 0..cols-1 (NaN fails both comparisons).
MR_HD int64_t class_index(float v, int64_t cols) {
  if (!(v >= 0.0f && v < static_cast<float>(cols) && floorf(v) == v)) return -1;
  return static_cast<int64_t>(v);
}

// log(sum_j exp(z_j)), max-subtracted, in double.
MR_HD double logsumexp(const float* z, int64_t cols) {
  float mx = z[0];
  for (int64_t c = 1; c < cols; ++c) mx = z[c] > mx ? z[c] : mx;
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += exp(static_cast<double>(z[c]) - mx);
  return static_cast<double>(mx) + log(s);
}

// One row: z = pred row, t = target row (sparse CE: t[0] is the class), d =
// gradient row or null. Returns the per-sample loss.
MR_HD double sparse_ce_row(int64_t cols, const float* z, const float* t, float gs, float* d,
                           bool logits, bool* bad) {
  const int64_t y = class_index(t[0], cols);
  if (y < 0) {
    *bad = true;
    return 0.0;
  }
  if (logits) {
    const double lse = logsumexp(z, cols);
    if (d)
      for (int64_t c = 0; c < cols; ++c) {
        const double p = exp(static_cast<double>(z[c]) - lse);
        d[c] = static_cast<float>(gs * (p - (c == y ? 1.0 : 0.0)));
      }
    return lse - z[y];
  }
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += clip(z[c]);
  const double cy = clip(z[y]);
  if (d)
    for (int64_t c = 0; c < cols; ++c) {
      const double g = 1.0 / s - (c == y ? 1.0 / cy : 0.0);
      d[c] = inside_clip(z[c]) ? static_cast<float>(gs * g) : 0.0f;
    }
  return log(s) - log(cy);
}

// A target after label smoothing s over k classes (s = 0: unchanged).
MR_HD double smoothed(float t, float s, double k) {
  return s != 0.0f ? static_cast<double>(t) * (1.0 - s) + s / k : static_cast<double>(t);
}

MR_HD double categorical_ce_row(int64_t cols, const float* z, const float* t, float gs, float* d,
                                bool logits, float smoothing = 0.0f) {
  const double k = static_cast<double>(cols);
  if (logits) {
    const double lse = logsumexp(z, cols);
    double tsum = 0.0, loss = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double tc = smoothed(t[c], smoothing, k);
      tsum += tc;
      loss += tc * (lse - z[c]);
    }
    if (d)
      for (int64_t c = 0; c < cols; ++c) {
        const double p = exp(static_cast<double>(z[c]) - lse);
        d[c] = static_cast<float>(gs * (p * tsum - smoothed(t[c], smoothing, k)));
      }
    return loss;
  }
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += z[c];
  double loss = 0.0, gq_dot_q = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const float q = static_cast<float>(z[c] / s);
    const double cq = clip(q), tc = smoothed(t[c], smoothing, k);
    loss -= tc * log(cq);
    if (d) {
      // dL/dq_c, kept in d until the normalisation's Jacobian is applied.
      const double gq = inside_clip(q) ? -tc / cq : 0.0;
      gq_dot_q += gq * (z[c] / s);
      d[c] = static_cast<float>(gq);
    }
  }
  // q_j = p_j / s  =>  dL/dp_i = (dL/dq_i - sum_j dL/dq_j q_j) / s.
  if (d)
    for (int64_t c = 0; c < cols; ++c)
      d[c] = static_cast<float>(gs * (static_cast<double>(d[c]) - gq_dot_q) / s);
  return loss;
}

MR_HD double binary_ce_row(int64_t cols, const float* z, const float* t, float gs, float* d,
                           bool logits, float smoothing = 0.0f) {
  const double inv_cols = 1.0 / static_cast<double>(cols);
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double tc = smoothed(t[c], smoothing, 2.0);
    if (logits) {
      const double x = z[c];
      sum += (x > 0.0 ? x : 0.0) - x * tc + log1p(exp(-fabs(x)));
      if (d) {
        const double sg = x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
        d[c] = static_cast<float>(gs * (sg - tc) * inv_cols);
      }
    } else {
      const double p = clip(z[c]);
      sum -= tc * log(p) + (1.0 - tc) * log(1.0 - p);
      if (d)
        d[c] = inside_clip(z[c])
                   ? static_cast<float>(gs * (-tc / p + (1.0 - tc) / (1.0 - p)) * inv_cols)
                   : 0.0f;
    }
  }
  return sum * inv_cols;
}

MR_HD double mse_row(int64_t cols, const float* p, const float* t, float gs, float* d) {
  const double inv_cols = 1.0 / static_cast<double>(cols);
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double e = static_cast<double>(p[c]) - t[c];
    sum += e * e;
    if (d) d[c] = static_cast<float>(gs * 2.0 * e * inv_cols);
  }
  return sum * inv_cols;
}

// Index of the first maximum (as argmax); NaNs never win.
MR_HD int64_t argmax(const float* x, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c)
    if (x[c] > x[best] || (x[best] != x[best] && x[c] == x[c])) best = c;
  return best;
}

// ---- activations ------------------------------------------------------------
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

MR_HD float sigmoid(float x) {
  // Stable on both tails: exp never overflows.
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}
// Exact GELU x Phi(x) with Phi(x) = 0.5 erfc(-x / sqrt(2)), TensorFlow's form
// (tf.nn.gelu, approximate = FALSE): erfc keeps the far negative tail, where
// 1 + erf(x / sqrt(2)) rounds to 0. The one exact-GELU formula of the repo
// (the gelu activation and the traced op gelu_erf both use it).
MR_HD float gelu(float x) { return 0.5f * x * erfcf(-x * kInvSqrt2); }
// d/dx [x Phi(x)] = Phi(x) + x phi(x).
MR_HD float gelu_grad(float x) {
  const float cdf = 0.5f * erfcf(-x * kInvSqrt2);
  const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
  return cdf + x * pdf;
}
// Derivatives shared by act_grad and the traced ops (common/op_math.h): one
// formula each. sigmoid' and tanh' through y = f(x); silu' through x.
MR_HD float sigmoid_grad_y(float y) { return y * (1.0f - y); }
MR_HD float tanh_grad_y(float y) { return 1.0f - y * y; }
MR_HD float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

// ---- element-wise activations of issue 12 (Keras 3 formulas) ---------------------
// act_value(act, x, p) is f(x); act_grad(act, x, y, p) is f'(x) given y = f(x).
// Both are evaluated on x (not y) except where noted, and stay finite for
// finite x: exponentials only ever see non-positive arguments, except in
// `exponential` itself (whose value overflows where exp does).
constexpr float kSeluAlpha = 1.67326324235437728482f;
constexpr float kSeluScale = 1.05070098735548049342f;

MR_HD float param_alpha(Activation act, const ActivationParams& p) {
  if (p.alpha == p.alpha) return p.alpha;  // not NaN: given
  return act == Activation::leaky_relu ? 0.2f : (act == Activation::elu ? 1.0f : 0.0f);
}
// log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)).
// True when relu's parameters are its plain form's (the fast paths apply).
MR_HD bool plain_relu(const ActivationParams& p) {
  return (p.alpha != p.alpha || p.alpha == 0.0f) && p.threshold == 0.0f && p.max_value > 3.0e38f;
}
// The activations computed by act_value / act_grad (the older ones keep
// their own loops, whose arithmetic is unchanged).
MR_HD bool generic_activation(Activation act, const ActivationParams& p) {
  if (act == Activation::relu) return !plain_relu(p);
  return act >= Activation::elu && act != Activation::log_softmax;
}
MR_HD float softplus(float x) { return (x > 0.0f ? x : 0.0f) + log1pf(expf(-fabsf(x))); }
MR_HD float relu6(float x) { return x < 0.0f ? 0.0f : (x > 6.0f ? 6.0f : x); }
MR_HD float hard_sigmoid(float x) { return relu6(x + 3.0f) * (1.0f / 6.0f); }

MR_HD float act_value(Activation act, float x, const ActivationParams& p) {
  switch (act) {
    case Activation::relu: {
      // Keras' relu(x, negative_slope, max_value, threshold). A NaN stays
      // NaN (relu, clip and the negative part all keep it) except with a
      // threshold and no slope, where Keras selects 0 (where(x > t, x, 0)).
      const float a = param_alpha(act, p);
      if (x != x) return p.threshold != 0.0f && a == 0.0f ? 0.0f : x;
      const float pos = x > p.threshold ? (x < p.max_value ? x : p.max_value) : 0.0f;
      return x < p.threshold && a != 0.0f ? pos + a * (x - p.threshold) : pos;
    }
    case Activation::sigmoid:
      return sigmoid(x);
    case Activation::tanh:
      return tanhf(x);
    case Activation::gelu:
      return gelu(x);
    case Activation::elu:
      return x > 0.0f ? x : param_alpha(act, p) * expm1f(x);
    case Activation::selu:
      return kSeluScale * (x > 0.0f ? x : kSeluAlpha * expm1f(x));
    case Activation::silu:
      return x * sigmoid(x);
    case Activation::leaky_relu:
      return x >= 0.0f ? x : param_alpha(act, p) * x;
    case Activation::relu6:
      return relu6(x);
    case Activation::softplus:
      return softplus(x);
    case Activation::softsign:
      return x / (1.0f + fabsf(x));
    case Activation::hard_sigmoid:
      return hard_sigmoid(x);
    case Activation::hard_silu:
      return x * hard_sigmoid(x);
    case Activation::exponential:
      return expf(x);
    case Activation::mish:
      return x * tanhf(softplus(x));
    default:  // linear; softmax and log_softmax are row-wise, never here
      return x;
  }
}

MR_HD float act_grad(Activation act, float x, float y, const ActivationParams& p) {
  switch (act) {
    case Activation::relu:
      if (x < p.threshold) return param_alpha(act, p);
      return x > p.threshold && x < p.max_value ? 1.0f : 0.0f;
    case Activation::sigmoid:
      return sigmoid_grad_y(y);
    case Activation::tanh:
      return tanh_grad_y(y);
    case Activation::gelu:
      return gelu_grad(x);
    case Activation::elu:
      // x <= 0 (not !(x > 0)): at a NaN input TensorFlow's EluGrad passes dy.
      return x <= 0.0f ? param_alpha(act, p) * expf(x) : 1.0f;
    case Activation::selu:
      return x <= 0.0f ? kSeluScale * kSeluAlpha * expf(x) : kSeluScale;
    case Activation::silu:
      return silu_grad(x);
    case Activation::leaky_relu:
      return x >= 0.0f ? 1.0f : param_alpha(act, p);
    case Activation::relu6:
      return x > 0.0f && x < 6.0f ? 1.0f : 0.0f;
    case Activation::softplus:
      return sigmoid(x);
    case Activation::softsign: {
      const float d = 1.0f + fabsf(x);
      return 1.0f / (d * d);
    }
    case Activation::hard_sigmoid:
      return x > -3.0f && x < 3.0f ? 1.0f / 6.0f : 0.0f;
    case Activation::hard_silu:
      return hard_sigmoid(x) + (x > -3.0f && x < 3.0f ? x * (1.0f / 6.0f) : 0.0f);
    case Activation::exponential:
      return y;
    case Activation::mish: {
      // d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
      const float t = tanhf(softplus(x));
      return t + x * sigmoid(x) * (1.0f - t * t);
    }
    default:
      return 1.0f;
  }
}

// ---- optimizer updates, one element (the formulas of core/backend.h) ------------
// The flags are plain arguments: the CPU backend passes template constants
// (the branches fold away and its loops vectorise), the CUDA kernels pass
// the call's values (uniform across a launch). Slots a variant does not use
// are not read or written.

MR_HD void sgd_element(bool decay, bool momentum_on, bool nesterov, float& w, float g, float& m,
                       float lr, float momentum, float wd_lr) {
  if (decay) w -= w * wd_lr;
  if (!momentum_on) {
    w -= lr * g;
  } else {
    const float mi = momentum * m - lr * g;
    m = mi;
    w += nesterov ? momentum * mi - lr * g : mi;
  }
}

MR_HD void adam_element(bool decay, bool amsgrad, float& w, float g, float& m, float& v,
                        float& vhat, float alpha, float one_b1, float one_b2, float epsilon,
                        float wd_lr) {
  if (decay) w -= w * wd_lr;
  m = m + (g - m) * one_b1;
  v = v + (g * g - v) * one_b2;
  float denom_v = v;
  if (amsgrad) {
    denom_v = vhat > v ? vhat : v;
    vhat = denom_v;
  }
  w = w - (m * alpha) / (sqrtf(denom_v) + epsilon);
}

MR_HD void rmsprop_element(bool decay, bool centered, bool momentum_on, float& w, float g, float& v,
                           float& a, float& mom, float lr, float rho, float one_rho, float momentum,
                           float epsilon, float wd_lr) {
  if (decay) w -= w * wd_lr;
  v = rho * v + one_rho * g * g;
  float denom = v + epsilon;
  if (centered) {
    a = rho * a + one_rho * g;
    denom = v - a * a + epsilon;
  }
  const float inc = lr * g / sqrtf(denom);
  if (momentum_on) {
    mom = momentum * mom + inc;
    w -= mom;
  } else {
    w -= inc;
  }
}

}  // namespace kmath
}  // namespace mr
