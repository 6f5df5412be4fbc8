// Per-row loss formulas shared by the CPU and CUDA loss kernels (MR_HD), and
// the dispatcher both call: one row's per-sample value, its sample weight
// and its gradient. The crossentropies and MSE are in kernel_math.h; the
// losses of issue 13 are here. Keras 3 (TensorFlow backend) formulas, with
// e = pred - target, eps = 1e-7, K = cols, "mean" the mean over the K columns:
// - huber: mean of 0.5 e^2 where |e| <= delta, else delta |e| - 0.5 delta^2;
// - mean_absolute_error: mean |e|;
// - mean_absolute_percentage_error: 100 mean |e / max(|t|, eps)|;
// - mean_squared_logarithmic_error: mean (log(max(p, eps) + 1) -
//   log(max(t, eps) + 1))^2;
// - log_cosh: mean of e + softplus(-2 e) - log 2;
// - kl_divergence: sum_j t_j log(t_j / p_j), t and p clipped to [eps, 1];
// - poisson: mean of p - t log(p + eps);
// - cosine_similarity: -sum_j tn_j pn_j, xn = x * min(rsqrt(sum x^2), 1/eps);
// - hinge, squared_hinge: mean of max(1 - t p, 0) (squared), t mapped to
//   2t - 1 when the batch's targets are all 0 or 1 (LossParams::binary_labels);
// - categorical_hinge: max(max_j (1 - t_j) p_j - sum_j t_j p_j + 1, 0);
// - binary_focal_crossentropy: mean of (1 - p_t)^gamma bce (times
//   t alpha + (1 - t)(1 - alpha) with apply_class_balancing), p_t = t y +
//   (1 - t)(1 - y), y = p or sigmoid(p); bce from the logits when
//   from_logits (TensorFlow reads the sigmoid's input), else from clip(y);
// - categorical_focal_crossentropy: sum_j alpha (1 - o_j)^gamma (-t_j log o_j),
//   o = clip(y / sum y), y = p or softmax(p).
// Label smoothing replaces t by t (1 - s) + s / 2 (binary) or + s / K
// (categorical). Gradients are TensorFlow's: max(x, c) and clip pass the
// gradient where x >= c (inside [lo, hi]), |x| has gradient sign(x), a
// max over columns shares it equally among ties. NaN propagates to the loss
// (nan_max below keeps it where a plain comparison would drop it).
#pragma once

#include <math.h>

#include <cstdint>

#include "backends/common/kernel_math.h"
#include "core/backend.h"
#include "core/hd.h"

namespace mr {
namespace kmath {

// max(a, b) that returns NaN when either is NaN (tf.maximum); the gradient
// mask "a >= b" is false for a NaN a, as TensorFlow's is.
MR_HD double nan_max(double a, double b) { return a != a || b != b ? a + b : (a >= b ? a : b); }
MR_HD double sign_of(double x) { return x > 0.0 ? 1.0 : (x < 0.0 ? -1.0 : x); }
// softplus(x) = log(1 + exp(x)), stable on both tails.
MR_HD double softplus(double x) { return (x > 0.0 ? x : 0.0) + log1p(exp(-fabs(x))); }
MR_HD double sigmoid_d(double x) {
  return x >= 0.0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}
constexpr double kLog2 = 0.69314718055994530942;

// Element-wise losses: the value of one element and, when want_grad, its
// derivative with respect to the prediction in *g.
MR_HD double element_loss(LossKind kind, const LossParams& q, double p, double t, double* g) {
  const double e = p - t;
  switch (kind) {
    case LossKind::huber: {
      const double a = fabs(e), dl = q.delta;
      if (a <= dl) {
        *g = e;
        return 0.5 * e * e;
      }
      *g = dl * sign_of(e);
      return dl * a - 0.5 * dl * dl;
    }
    case LossKind::mean_absolute_error:
      *g = sign_of(e);
      return fabs(e);
    case LossKind::mean_absolute_percentage_error: {
      const double m = nan_max(fabs(t), kEps);
      *g = 100.0 * sign_of(e) / m;
      return 100.0 * fabs(e / m);
    }
    case LossKind::mean_squared_logarithmic_error: {
      const double mp = nan_max(p, kEps);
      const double f = log(mp + 1.0) - log(nan_max(t, kEps) + 1.0);
      *g = p >= kEps ? 2.0 * f / (mp + 1.0) : 0.0;
      return f * f;
    }
    case LossKind::log_cosh:
      *g = tanh(e);
      return e + softplus(-2.0 * e) - kLog2;
    case LossKind::kl_divergence: {
      const double tc = t < kEps ? kEps : (t > 1.0 ? 1.0 : t);
      const double pc = p < kEps ? kEps : (p > 1.0 ? 1.0 : p);
      *g = p < kEps || p > 1.0 ? 0.0 : -tc / pc;
      return tc * log(tc / pc);
    }
    case LossKind::poisson:
      *g = 1.0 - t / (p + kEps);
      return p - t * log(p + kEps);
    case LossKind::hinge:
    case LossKind::squared_hinge: {
      const double y = q.binary_labels ? 2.0 * t - 1.0 : t;
      const double m = 1.0 - y * p;
      const bool pass = m >= 0.0;
      if (kind == LossKind::hinge) {
        *g = pass ? -y : 0.0;
        return nan_max(m, 0.0);
      }
      *g = pass ? -2.0 * m * y : 0.0;
      const double h = nan_max(m, 0.0);
      return h * h;
    }
    default:
      *g = 0.0;
      return 0.0;
  }
}

// The element-wise losses averaged over the row (kl_divergence summed).
MR_HD double elementwise_row(LossKind kind, const LossParams& q, int64_t cols, const float* z,
                             const float* t, float gs, float* d) {
  const double scale = kind == LossKind::kl_divergence ? 1.0 : 1.0 / static_cast<double>(cols);
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    double g = 0.0;
    sum += element_loss(kind, q, z[c], t[c], &g);
    if (d) d[c] = static_cast<float>(gs * g * scale);
  }
  return sum * scale;
}

MR_HD double cosine_row(int64_t cols, const float* z, const float* t, float gs, float* d) {
  constexpr double kCap = 1.0 / kEps;  // 1e7: Keras' 1 / epsilon
  double sp = 0.0, st = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    sp += static_cast<double>(z[c]) * z[c];
    st += static_cast<double>(t[c]) * t[c];
  }
  const double rp = 1.0 / sqrt(sp), rt = 1.0 / sqrt(st);
  const bool p_free = rp <= kCap;  // TF's minimum passes the gradient to rsqrt on ties
  const double ip = p_free ? rp : kCap, it = rt <= kCap ? rt : kCap;
  double dot = 0.0;  // sum tn_j p_j
  for (int64_t c = 0; c < cols; ++c) dot += t[c] * it * z[c];
  if (d)
    for (int64_t c = 0; c < cols; ++c) {
      const double tn = t[c] * it;
      const double gr = p_free ? ip * tn - dot * rp * rp * rp * z[c] : kCap * tn;
      d[c] = static_cast<float>(-gs * gr);
    }
  // The min keeps a NaN norm (rsqrt of NaN fails both comparisons above).
  return -(sp != sp ? sp : dot * ip);
}

MR_HD double categorical_hinge_row(int64_t cols, const float* z, const float* t, float gs,
                                   float* d) {
  double pos = 0.0, neg = 0.0;
  bool nan_seen = false;
  for (int64_t c = 0; c < cols; ++c) {
    pos += static_cast<double>(t[c]) * z[c];
    const double v = (1.0 - t[c]) * z[c];
    if (v != v) nan_seen = true;
    if (c == 0 || v > neg) neg = v;
  }
  if (nan_seen) neg = NAN;
  const double m = neg - pos + 1.0;
  if (d) {
    int64_t ties = 0;
    for (int64_t c = 0; c < cols; ++c) ties += (1.0 - t[c]) * z[c] == neg;
    for (int64_t c = 0; c < cols; ++c) {
      double g = 0.0;
      if (m >= 0.0) {
        g = -static_cast<double>(t[c]);
        if ((1.0 - t[c]) * z[c] == neg) g += (1.0 - t[c]) / static_cast<double>(ties);
      }
      d[c] = static_cast<float>(gs * g);
    }
  }
  return nan_max(m, 0.0);
}

MR_HD double binary_focal_row(const LossParams& q, int64_t cols, const float* z, const float* t,
                              float gs, float* d) {
  const double inv_cols = 1.0 / static_cast<double>(cols);
  const double gm = q.gamma;
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double ts = smoothed(t[c], q.label_smoothing, 2.0);
    const double x = z[c];
    const double y = q.from_logits ? sigmoid_d(x) : x;
    double bce, dbce;  // dbce: d bce / d y (probabilities) or d bce / d x (logits)
    if (q.from_logits) {
      bce = (x > 0.0 ? x : 0.0) - x * ts + log1p(exp(-fabs(x)));
      dbce = y - ts;
    } else {
      const double pc = clip(z[c]);
      bce = -(ts * log(pc) + (1.0 - ts) * log(1.0 - pc));
      dbce = inside_clip(z[c]) ? -ts / pc + (1.0 - ts) / (1.0 - pc) : 0.0;
    }
    const double pt = ts * y + (1.0 - ts) * (1.0 - y);
    const double focal = pow(1.0 - pt, gm);
    const double wb = q.apply_class_balancing ? ts * q.alpha + (1.0 - ts) * (1.0 - q.alpha) : 1.0;
    sum += wb * focal * bce;
    if (d) {
      // d focal / d y = -gamma (1 - p_t)^(gamma - 1) (2 t - 1).
      const double dfocal = gm == 0.0 ? 0.0 : -gm * pow(1.0 - pt, gm - 1.0) * (2.0 * ts - 1.0);
      const double g =
          q.from_logits ? dfocal * y * (1.0 - y) * bce + focal * dbce : dfocal * bce + focal * dbce;
      d[c] = static_cast<float>(gs * wb * g * inv_cols);
    }
  }
  return sum * inv_cols;
}

MR_HD double categorical_focal_row(const LossParams& q, int64_t cols, const float* z,
                                   const float* t, float gs, float* d) {
  const double k = static_cast<double>(cols), gm = q.gamma, al = q.alpha;
  // y = softmax(z) (logits) or z; s = sum y; o = clip(y / s).
  const double lse = q.from_logits ? logsumexp(z, cols) : 0.0;
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += q.from_logits ? exp(z[c] - lse) : z[c];
  double loss = 0.0, gq_dot_q = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double y = q.from_logits ? exp(z[c] - lse) : z[c];
    const float qc = static_cast<float>(y / s);
    const double o = clip(qc), ts = smoothed(t[c], q.label_smoothing, k);
    const double ce = -ts * log(o), mod = pow(1.0 - o, gm);
    loss += al * mod * ce;
    if (d) {
      // dL/dq_c (zero where the clip holds), kept in d for the Jacobians.
      const double dmod = gm == 0.0 ? 0.0 : -gm * pow(1.0 - o, gm - 1.0);
      const double gq = inside_clip(qc) ? al * (dmod * ce - mod * ts / o) : 0.0;
      gq_dot_q += gq * (y / s);
      d[c] = static_cast<float>(gq);
    }
  }
  if (d) {
    // q = y / s: dL/dy_i = (dL/dq_i - sum_j dL/dq_j q_j) / s; then, from
    // logits, the softmax's: dL/dz_i = y_i (dL/dy_i - sum_j dL/dy_j y_j).
    double gy_dot_y = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double gy = (static_cast<double>(d[c]) - gq_dot_q) / s;
      if (q.from_logits) gy_dot_y += gy * exp(z[c] - lse);
      d[c] = static_cast<float>(gy);
    }
    for (int64_t c = 0; c < cols; ++c) {
      const double gy = d[c];
      d[c] = static_cast<float>(gs * (q.from_logits ? exp(z[c] - lse) * (gy - gy_dot_y) : gy));
    }
  }
  return loss;
}

// The per-sample loss of row r times its weight w (w = sample_weight[r], or
// 1 when sample_weight is null), with gs * w * d(loss)/d(pred) written into
// dpred's row r when dpred is not null. The per-sample value is computed in
// double and rounded to float, as Keras' per-sample losses are float32, and
// the weight multiplies it in float (Keras: values * sample_weight). Sums of
// float values in double are exact while they span fewer than 2^29 ulps of
// the smallest, so a running mean (an epoch's loss) does not depend on the
// order of the samples: a shuffle, or the split over replicas, leaves it
// bit-identical. Sparse CE with p.has_ignore: a row labelled ignore_class
// weighs 0 (value 0, gradient 0, whatever its prediction), the others
// p.valid_weight times w.
MR_HD double loss_row(LossKind kind, const LossParams& p, int64_t r, int64_t cols,
                      const float* pred, const float* target, const float* sample_weight, float gs,
                      float* dpred, bool* bad) {
  const float* z = pred + r * cols;
  const float* t = target + r * cols;
  float* d = dpred ? dpred + r * cols : nullptr;
  float w = sample_weight ? sample_weight[r] : 1.0f;
  if (p.position_weight != 1.0f) w *= p.position_weight;
  if (kind == LossKind::sparse_categorical_crossentropy && p.has_ignore) {
    if (target[r] == p.ignore_class) {
      if (d)
        for (int64_t c = 0; c < cols; ++c) d[c] = 0.0f;
      return 0.0;
    }
    w *= p.valid_weight;
  }
  const float g = gs * w;
  const float ls = p.label_smoothing;
  double v = 0.0;
  switch (kind) {
    case LossKind::sparse_categorical_crossentropy:
      v = sparse_ce_row(cols, z, target + r, g, d, p.from_logits, bad);
      break;
    case LossKind::categorical_crossentropy:
      v = categorical_ce_row(cols, z, t, g, d, p.from_logits, ls);
      break;
    case LossKind::binary_crossentropy:
      v = binary_ce_row(cols, z, t, g, d, p.from_logits, ls);
      break;
    case LossKind::mean_squared_error:
      v = mse_row(cols, z, t, g, d);
      break;
    case LossKind::cosine_similarity:
      v = cosine_row(cols, z, t, g, d);
      break;
    case LossKind::categorical_hinge:
      v = categorical_hinge_row(cols, z, t, g, d);
      break;
    case LossKind::binary_focal_crossentropy:
      v = binary_focal_row(p, cols, z, t, g, d);
      break;
    case LossKind::categorical_focal_crossentropy:
      v = categorical_focal_row(p, cols, z, t, g, d);
      break;
    default:
      v = elementwise_row(kind, p, cols, z, t, g, d);
      break;
  }
  return static_cast<double>(static_cast<float>(v) * w);
}

}  // namespace kmath
}  // namespace mr
