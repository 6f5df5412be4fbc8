#include "nn/metric.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace mr {

namespace {

constexpr double kEpsilon = 1e-7;  // keras.config.epsilon()

// ops.divide_no_nan
double div0(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

// keras.metrics.AUC.result() with multi_label = False.
double auc_result(const MetricSpec& m, const double* s) {
  const int64_t n = m.num_thresholds;
  const double *tp = s, *fp = s + n, *tn = s + 2 * n, *fn = s + 3 * n;
  double total = 0.0;
  if (m.curve == AucCurve::pr && m.summation_method == AucSummation::interpolation) {
    // Davis & Goadrich's interpolation, as interpolate_pr_auc().
    for (int64_t i = 0; i + 1 < n; ++i) {
      const double dtp = tp[i] - tp[i + 1];
      const double p0 = tp[i] + fp[i], p1 = tp[i + 1] + fp[i + 1];
      const double slope = div0(dtp, std::max(p0 - p1, 0.0));
      const double intercept = tp[i + 1] - slope * p1;
      const double ratio = p0 > 0.0 && p1 > 0.0 ? div0(p0, std::max(p1, 0.0)) : 1.0;
      total +=
          div0(slope * (dtp + intercept * std::log(ratio)), std::max(tp[i + 1] + fn[i + 1], 0.0));
    }
    return total;
  }
  std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double recall = div0(tp[i], tp[i] + fn[i]);
    if (m.curve == AucCurve::roc) {
      x[i] = div0(fp[i], fp[i] + tn[i]);
      y[i] = recall;
    } else {
      x[i] = recall;
      y[i] = div0(tp[i], tp[i] + fp[i]);
    }
  }
  for (int64_t i = 0; i + 1 < n; ++i) {
    const double h = m.summation_method == AucSummation::interpolation ? (y[i] + y[i + 1]) / 2.0
                     : m.summation_method == AucSummation::minoring    ? std::min(y[i], y[i + 1])
                                                                       : std::max(y[i], y[i + 1]);
    total += (x[i] - x[i + 1]) * h;
  }
  return total;
}

double fbeta(double tp, double fp, double fn, double beta) {
  const double precision = tp / (tp + fp + kEpsilon);
  const double recall = tp / (tp + fn + kEpsilon);
  const double b2 = beta * beta;
  return precision * recall / (b2 * precision + recall + kEpsilon) * (1.0 + b2);
}

// keras.metrics.FBetaScore.result(): blocks of cols TP, FP, FN, true counts.
void fbeta_result(const MetricSpec& m, int64_t cols, const double* s, double* out) {
  const double *tp = s, *fp = s + cols, *fn = s + 2 * cols, *iw = s + 3 * cols;
  if (m.average == FbetaAverage::micro) {
    double a = 0.0, b = 0.0, c = 0.0;
    for (int64_t k = 0; k < cols; ++k) a += tp[k], b += fp[k], c += fn[k];
    out[0] = fbeta(a, b, c, m.beta);
    return;
  }
  if (m.average == FbetaAverage::none) {
    for (int64_t k = 0; k < cols; ++k) out[k] = fbeta(tp[k], fp[k], fn[k], m.beta);
    return;
  }
  double sum = 0.0, weights = 0.0;
  for (int64_t k = 0; k < cols; ++k) weights += iw[k];
  for (int64_t k = 0; k < cols; ++k) {
    const double f = fbeta(tp[k], fp[k], fn[k], m.beta);
    sum += m.average == FbetaAverage::weighted ? f * iw[k] / (weights + kEpsilon) : f;
  }
  out[0] = m.average == FbetaAverage::weighted ? sum : sum / static_cast<double>(cols);
}

// keras.metrics.MeanIoU.result(): cm[true * nc + pred].
double mean_iou_result(const MetricSpec& m, const double* cm) {
  const int64_t nc = m.num_classes;
  double sum = 0.0, valid = 0.0;
  for (int64_t c = 0; c < nc; ++c) {
    double row = 0.0, col = 0.0;
    for (int64_t q = 0; q < nc; ++q) row += cm[c * nc + q], col += cm[q * nc + c];
    const double tp = cm[c * nc + c], denom = row + col - tp;
    if (denom > 1e-9) {
      valid += 1.0;
      sum += tp / (denom + kEpsilon);
    }
  }
  return div0(sum, valid);
}

}  // namespace

MetricKind metric_kind(const std::string& name) {
  static const struct {
    const char* name;
    MetricKind kind;
  } kinds[] = {
      {"sparse_categorical_accuracy", MetricKind::sparse_categorical_accuracy},
      {"categorical_accuracy", MetricKind::categorical_accuracy},
      {"binary_accuracy", MetricKind::binary_accuracy},
      {"mean_absolute_error", MetricKind::mean_absolute_error},
      {"mean_squared_error", MetricKind::mean_squared_error},
      {"root_mean_squared_error", MetricKind::root_mean_squared_error},
      {"mean_absolute_percentage_error", MetricKind::mean_absolute_percentage_error},
      {"top_k_categorical_accuracy", MetricKind::top_k_categorical_accuracy},
      {"sparse_top_k_categorical_accuracy", MetricKind::sparse_top_k_categorical_accuracy},
      {"binary_crossentropy", MetricKind::binary_crossentropy},
      {"categorical_crossentropy", MetricKind::categorical_crossentropy},
      {"sparse_categorical_crossentropy", MetricKind::sparse_categorical_crossentropy},
      {"auc", MetricKind::auc},
      {"precision", MetricKind::precision},
      {"recall", MetricKind::recall},
      {"fbeta_score", MetricKind::fbeta_score},
      {"mean_iou", MetricKind::mean_iou},
      {"true_positives", MetricKind::true_positives},
      {"false_positives", MetricKind::false_positives},
      {"true_negatives", MetricKind::true_negatives},
      {"false_negatives", MetricKind::false_negatives},
  };
  for (const auto& k : kinds)
    if (name == k.name) return k.kind;
  fail(ErrorKind::value, "unknown metric '", name, "'");
}

void validate_metric(const MetricSpec& m, int64_t cols) {
  switch (m.kind) {
    case MetricKind::top_k_categorical_accuracy:
    case MetricKind::sparse_top_k_categorical_accuracy:
      MR_CHECK(m.k >= 1, value, "k must be at least 1, got ", m.k);
      break;
    case MetricKind::auc:
      MR_CHECK(m.num_thresholds > 1, value, "num_thresholds must be an integer > 1, got ",
               m.num_thresholds);
      break;
    case MetricKind::precision:
    case MetricKind::recall:
      MR_CHECK(m.class_id < cols, value, "class_id ", m.class_id,
               " is out of range for predictions of ", cols, " columns");
      MR_CHECK(m.top_k >= 0, value, "top_k must be at least 1, got ", m.top_k);
      break;
    case MetricKind::mean_iou:
      MR_CHECK(m.num_classes >= 1, value, "num_classes must be at least 1, got ", m.num_classes);
      MR_CHECK(m.sparse_y_true || !m.sparse_y_pred, value,
               "sparse_y_true = FALSE needs sparse_y_pred = FALSE (class scores in both)");
      break;
    default:
      break;
  }
}

int64_t metric_value_count(const MetricSpec& m, int64_t cols) {
  return m.kind == MetricKind::fbeta_score && m.average == FbetaAverage::none ? cols : 1;
}

void metric_finalize(const MetricSpec& m, int64_t cols, const double* s, double* out) {
  switch (m.kind) {
    case MetricKind::auc:
      out[0] = auc_result(m, s);
      return;
    case MetricKind::precision:
      out[0] = div0(s[0], s[0] + s[1]);
      return;
    case MetricKind::recall:
      out[0] = div0(s[0], s[0] + s[2]);
      return;
    case MetricKind::fbeta_score:
      fbeta_result(m, cols, s, out);
      return;
    case MetricKind::mean_iou:
      out[0] = mean_iou_result(m, s);
      return;
    case MetricKind::true_positives:
    case MetricKind::false_positives:
    case MetricKind::true_negatives:
    case MetricKind::false_negatives:
      out[0] = s[0];  // Keras' result(): the count itself
      return;
    case MetricKind::root_mean_squared_error:
      out[0] = std::sqrt(div0(s[0], s[1]));
      return;
    default:
      out[0] = div0(s[0], s[1]);
      return;
  }
}

}  // namespace mr
