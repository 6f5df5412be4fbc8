// The per-row terms of the metric op (Backend::metric), shared by the CPU and
// CUDA backends (MR_HD): state element j of a metric gains w_r * term(j, r)
// from row r. Keras 3 semantics (keras/src/metrics/*.py, TensorFlow backend):
// - means: the per-sample value (j = 0) and 1 (j = 1); Keras' Mean adds
//   sum(w * value) and sum(w).
// - accuracies, MAE, MSE (RMSE finalizes with a sqrt), MAPE = 100 * mean of
//   |t - p| / max(|t|, eps) over the row.
// - top-k: tf.math.in_top_k: the true class is in when fewer than k classes
//   score strictly higher, and never when a score of the row is not finite or
//   the class is out of range. The dense variant takes argmax(target).
// - cross-entropies: Keras' functions with label smoothing applied to the
//   target first (binary: t (1 - s) + s / 2; categorical: t (1 - s) + s / cols).
// - auc (multi_label = FALSE, evenly spaced thresholds): every element of the
//   row is a sample; its label is (t != 0); p is clipped to [0, 1] (after a
//   sigmoid when from_logits) and falls in bucket max(0, ceil(p (n - 1)) - 1),
//   computed in float as Keras does; it counts as predicted positive at
//   thresholds i <= bucket. Blocks of n: TP, FP, TN, FN.
// - precision/recall: elements of the row (only column class_id when set);
//   with top_k, elements outside the row's top k (ties: the lower index wins,
//   as tf.math.top_k) score -1e10; predicted positive when the score exceeds
//   the threshold; label (t != 0). Elements: TP, FP, FN.
// - true/false positives/negatives: every element of the row, predicted
//   positive when p > threshold, label (t != 0) (Keras casts y_true to bool);
//   one element, the count of its kind.
// - fbeta_score: by class c, predicted positive when p_c > threshold, or with
//   no threshold (NaN) when p_c is the row's maximum and |p_c| > 1e-9; blocks
//   of cols: TP = pp t, FP = pp (1 - t), FN = (1 - pp) t, and t.
// - mean_iou: confusion matrix of (true class, predicted class) pairs, true
//   major; classes are labels (sparse) or argmax over the row; pairs with a
//   label outside 0..num_classes-1 (or a true label equal to ignore_class)
//   count 0; labels are truncated to integers as Keras' cast does.
#pragma once

#include <math.h>

#include <cstdint>

#include "backends/common/kernel_math.h"
#include "core/hd.h"
#include "core/metric_spec.h"

namespace mr {
namespace mmath {

constexpr float kNegInf = -1e10f;  // Keras' metrics_utils.NEG_INF

MR_HD bool is_finite(float x) { return x == x && x - x == 0.0f; }

// tf.math.in_top_k for one row.
MR_HD bool in_top_k(const float* p, int64_t cols, int64_t y, int k) {
  if (y < 0 || y >= cols) return false;
  const float v = p[y];
  if (!is_finite(v)) return false;
  int64_t above = 0;
  for (int64_t c = 0; c < cols; ++c) {
    if (!is_finite(p[c])) return false;
    if (p[c] > v) ++above;
  }
  return above < k;
}

// Whether element c of the row is among tf.math.top_k's k (ties: lower index first).
MR_HD bool in_top_k_filter(const float* p, int64_t cols, int64_t c, int k) {
  int64_t before = 0;
  for (int64_t j = 0; j < cols; ++j)
    if (p[j] > p[c] || (p[j] == p[c] && j < c)) ++before;
  return before < k;
}

MR_HD double binary_ce(int64_t cols, const float* z, const float* t, bool logits, float smooth) {
  double sum = 0.0;
  for (int64_t c = 0; c < cols; ++c) {
    const double tc = static_cast<double>(t[c]) * (1.0 - smooth) + 0.5 * smooth;
    if (logits) {
      const double x = z[c];
      sum += (x > 0.0 ? x : 0.0) - x * tc + log1p(exp(-fabs(x)));
    } else {
      const double p = kmath::clip(z[c]);
      sum -= tc * log(p) + (1.0 - tc) * log(1.0 - p);
    }
  }
  return sum / static_cast<double>(cols);
}

MR_HD double categorical_ce(int64_t cols, const float* z, const float* t, bool logits,
                            float smooth) {
  const double add = static_cast<double>(smooth) / static_cast<double>(cols);
  double loss = 0.0;
  if (logits) {
    const double lse = kmath::logsumexp(z, cols);
    for (int64_t c = 0; c < cols; ++c)
      loss += (static_cast<double>(t[c]) * (1.0 - smooth) + add) * (lse - z[c]);
    return loss;
  }
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += z[c];
  for (int64_t c = 0; c < cols; ++c) {
    const double q = kmath::clip(static_cast<float>(z[c] / s));
    loss -= (static_cast<double>(t[c]) * (1.0 - smooth) + add) * log(q);
  }
  return loss;
}

// The per-sample value of a mean metric for row r.
MR_HD double mean_value(const MetricSpec& m, int64_t r, int64_t cols, const float* pred,
                        const float* target) {
  const float* p = pred + r * cols;
  const float* t = target + r * cols;
  const double inv = 1.0 / static_cast<double>(cols);
  switch (m.kind) {
    case MetricKind::sparse_categorical_accuracy:
      // Keras casts argmax to the label's dtype and compares: a label out of
      // range simply never matches.
      return static_cast<float>(kmath::argmax(p, cols)) == target[r] ? 1.0 : 0.0;
    case MetricKind::categorical_accuracy:
      return kmath::argmax(p, cols) == kmath::argmax(t, cols) ? 1.0 : 0.0;
    case MetricKind::binary_accuracy: {
      int64_t hits = 0;
      for (int64_t c = 0; c < cols; ++c) hits += t[c] == (p[c] > m.threshold ? 1.0f : 0.0f);
      return static_cast<double>(hits) * inv;
    }
    case MetricKind::mean_absolute_error: {
      double e = 0.0;
      for (int64_t c = 0; c < cols; ++c) e += fabs(static_cast<double>(p[c]) - t[c]);
      return e * inv;
    }
    case MetricKind::mean_squared_error:
    case MetricKind::root_mean_squared_error: {
      double e = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double d = static_cast<double>(p[c]) - t[c];
        e += d * d;
      }
      return e * inv;
    }
    case MetricKind::mean_absolute_percentage_error: {
      double e = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const double a = fabs(static_cast<double>(t[c]));
        e += fabs(static_cast<double>(t[c]) - p[c]) / (a > kmath::kEps ? a : kmath::kEps);
      }
      return 100.0 * e * inv;
    }
    case MetricKind::top_k_categorical_accuracy:
      return in_top_k(p, cols, kmath::argmax(t, cols), m.k) ? 1.0 : 0.0;
    case MetricKind::sparse_top_k_categorical_accuracy: {
      const float y = target[r];
      // Keras casts the label to int32 (truncation); NaN never matches.
      const int64_t yi =
          y == y && y > -1.0f && y < static_cast<float>(cols) ? static_cast<int64_t>(y) : -1;
      return in_top_k(p, cols, yi, m.k) ? 1.0 : 0.0;
    }
    case MetricKind::binary_crossentropy:
      return static_cast<float>(binary_ce(cols, p, t, m.from_logits, m.label_smoothing));
    case MetricKind::categorical_crossentropy:
      return static_cast<float>(categorical_ce(cols, p, t, m.from_logits, m.label_smoothing));
    case MetricKind::sparse_categorical_crossentropy: {
      bool bad = false;
      const double v =
          kmath::sparse_ce_row(cols, p, target + r, 0.0f, nullptr, m.from_logits, &bad);
      return bad ? 0.0 : static_cast<float>(v);
    }
    default:
      return 0.0;
  }
}

// Whether element c of row p counts as predicted positive at AUC threshold i.
MR_HD bool auc_positive(const MetricSpec& m, float p, int64_t i) {
  if (m.from_logits) p = kmath::sigmoid(p);
  if (!(p == p)) return false;  // NaN: in no bucket (Keras' segment_sum drops it)
  p = p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p);
  float bucket = ceilf(p * static_cast<float>(m.num_thresholds - 1)) - 1.0f;
  if (bucket < 0.0f) bucket = 0.0f;
  return static_cast<int64_t>(bucket) >= i;
}

// Mean IoU: the class pair of element e of row r (false when it counts 0).
MR_HD bool iou_pair(const MetricSpec& m, int64_t r, int64_t e, int64_t cols, const float* pred,
                    const float* target, int64_t* yt, int64_t* yp) {
  float t, p;
  if (m.sparse_y_pred) {
    p = pred[r * cols + e];
    t = m.sparse_y_true ? target[r * cols + e]
                        : static_cast<float>(kmath::argmax(target + r * cols, cols));
  } else {
    p = static_cast<float>(kmath::argmax(pred + r * cols, cols));
    t = m.sparse_y_true ? target[r] : static_cast<float>(kmath::argmax(target + r * cols, cols));
  }
  const float nc = static_cast<float>(m.num_classes);
  if (!(t >= 0.0f && t < nc && p >= 0.0f && p < nc)) return false;
  *yt = static_cast<int64_t>(t);
  *yp = static_cast<int64_t>(p);
  if (m.ignore_class >= 0 && t == static_cast<float>(m.ignore_class)) return false;
  return true;
}

// Row r's weight: 1 without weights; mean_iou truncates it to an integer,
// as Keras 3's MeanIoU (whose dtype is int64) casts it.
MR_HD double row_weight(const MetricSpec& m, const float* w, int64_t r) {
  if (w == nullptr) return 1.0;
  return m.kind == MetricKind::mean_iou ? trunc(static_cast<double>(w[r]))
                                        : static_cast<double>(w[r]);
}

// Row r's (unweighted) contribution to state element j.
MR_HD double term(const MetricSpec& m, int64_t j, int64_t r, int64_t cols, const float* pred,
                  const float* target) {
  const float* p = pred + r * cols;
  const float* t = target + r * cols;
  switch (m.kind) {
    case MetricKind::auc: {
      const int64_t n = m.num_thresholds, block = j / n, i = j % n;
      double s = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const bool label = t[c] != 0.0f, pos = auc_positive(m, p[c], i);
        const bool hit = block == 0   ? (label && pos)
                         : block == 1 ? (!label && pos)
                         : block == 2 ? (!label && !pos)
                                      : (label && !pos);
        s += hit ? 1.0 : 0.0;
      }
      return s;
    }
    case MetricKind::precision:
    case MetricKind::recall: {
      const int64_t c0 = m.class_id >= 0 ? m.class_id : 0;
      const int64_t c1 = m.class_id >= 0 ? m.class_id + 1 : cols;
      double s = 0.0;
      for (int64_t c = c0; c < c1; ++c) {
        const float v = m.top_k > 0 && !in_top_k_filter(p, cols, c, m.top_k) ? kNegInf : p[c];
        const bool pos = v > m.threshold, label = t[c] != 0.0f;
        s += (j == 0 ? (label && pos) : j == 1 ? (!label && pos) : (label && !pos)) ? 1.0 : 0.0;
      }
      return s;
    }
    case MetricKind::true_positives:
    case MetricKind::false_positives:
    case MetricKind::true_negatives:
    case MetricKind::false_negatives: {
      const bool want_pos =
          m.kind == MetricKind::true_positives || m.kind == MetricKind::false_positives;
      const bool want_label =
          m.kind == MetricKind::true_positives || m.kind == MetricKind::false_negatives;
      double s = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const bool pos = p[c] > m.threshold, label = t[c] != 0.0f;
        s += pos == want_pos && label == want_label ? 1.0 : 0.0;
      }
      return s;
    }
    case MetricKind::fbeta_score: {
      const int64_t block = j / cols, c = j % cols;
      bool pp;
      if (m.threshold != m.threshold) {
        float mx = p[0];
        for (int64_t q = 1; q < cols; ++q) mx = p[q] > mx ? p[q] : mx;
        pp = p[c] >= mx && fabsf(p[c]) > 1e-9f;
      } else {
        pp = p[c] > m.threshold;
      }
      const double tc = t[c], pc = pp ? 1.0 : 0.0;
      return block == 0   ? pc * tc
             : block == 1 ? pc * (1.0 - tc)
             : block == 2 ? (1.0 - pc) * tc
                          : tc;
    }
    case MetricKind::mean_iou: {
      const int64_t a = j / m.num_classes, b = j % m.num_classes;
      const int64_t elements = m.sparse_y_pred ? cols : 1;
      double s = 0.0;
      for (int64_t e = 0; e < elements; ++e) {
        int64_t yt = 0, yp = 0;
        if (iou_pair(m, r, e, cols, pred, target, &yt, &yp) && yt == a && yp == b) s += 1.0;
      }
      return s;
    }
    default:
      return j == 0 ? mean_value(m, r, cols, pred, target) : 1.0;
  }
}

}  // namespace mmath
}  // namespace mr
