// What a metric is, as the metric op (Backend::metric) and the host-side
// finalize (nn/metric.h) read it: a trivially copyable value passed to device
// kernels as it is.
//
// A metric keeps a state of doubles (metric_state_size()) that the op adds
// into; states of replicas add up (they are sums of per-row terms), and
// finalize turns a state into the logged value. Every state element j is a
// sum over rows r of w_r * term_j(row r), w_r the row's sample weight (1
// without weights), so the op's result does not depend on how rows are
// spread over replicas or threads.
#pragma once

#include <cstdint>

namespace mr {

enum class MetricKind {
  // Means of per-sample values: state (sum of w * value, sum of w).
  sparse_categorical_accuracy,
  categorical_accuracy,
  binary_accuracy,
  mean_absolute_error,
  mean_squared_error,
  root_mean_squared_error,  // sqrt of the weighted mean of per-sample MSE
  mean_absolute_percentage_error,
  top_k_categorical_accuracy,
  sparse_top_k_categorical_accuracy,
  binary_crossentropy,
  categorical_crossentropy,
  sparse_categorical_crossentropy,
  // Confusion counts: see metric_state_size().
  auc,
  precision,
  recall,
  fbeta_score,
  mean_iou,
  // ---- i15-users: a traced function's per-sample values (Keras'
  // MeanMetricWrapper): state (sum of w * value, sum of w), filled by
  // Backend::traced_reduce, never by Backend::metric ----
  mean_metric_wrapper,
  // ---- Keras' TruePositives, FalsePositives, TrueNegatives and
  // FalseNegatives: weighted counts over every element (state: 1) ----
  true_positives,
  false_positives,
  true_negatives,
  false_negatives,
  // ---- a Metric() class written in R (R/metrics-custom-class.R): its
  // traced update_state() gives the increments of its variables (state:
  // state_floats, their sums over the replicas' slices and the batches),
  // its traced result() the logged value from the reset values plus those
  // sums (train/traced_objectives.h) ----
  state_metric
};

enum class AucCurve { roc, pr };
enum class AucSummation { interpolation, minoring, majoring };
enum class FbetaAverage { none, micro, macro, weighted };

struct MetricSpec {
  MetricKind kind = MetricKind::sparse_categorical_accuracy;
  // binary_accuracy, precision, recall (a decision threshold); fbeta_score
  // (NaN: Keras' None, the row's maximum is the positive class).
  float threshold = 0.5f;
  int k = 5;                 // top-k accuracies
  int top_k = 0;             // precision/recall: 0 = Keras' None
  int class_id = -1;         // precision/recall: -1 = Keras' None
  int num_thresholds = 200;  // auc
  AucCurve curve = AucCurve::roc;
  AucSummation summation_method = AucSummation::interpolation;
  FbetaAverage average = FbetaAverage::none;
  float beta = 1.0f;             // fbeta_score
  int num_classes = 0;           // mean_iou
  int ignore_class = -1;         // mean_iou: -1 = Keras' None
  bool sparse_y_true = true;     // mean_iou
  bool sparse_y_pred = true;     // mean_iou
  bool from_logits = false;      // auc, cross-entropies
  float label_smoothing = 0.0f;  // binary and categorical cross-entropy
  int64_t state_floats = 0;      // state_metric: its variables' floats
};

// Doubles of state a metric needs for predictions of `cols` columns:
// means 2; auc 4 x num_thresholds (TP, FP, TN, FN by threshold); precision
// and recall 3 (TP, FP, FN); fbeta_score 4 x cols (TP, FP, FN and the
// weighted count of true labels, by class); mean_iou num_classes^2 (the
// confusion matrix, true class major).
inline int64_t metric_state_size(const MetricSpec& m, int64_t cols) {
  switch (m.kind) {
    case MetricKind::auc:
      return 4 * int64_t{m.num_thresholds};
    case MetricKind::precision:
    case MetricKind::recall:
      return 3;
    case MetricKind::fbeta_score:
      return 4 * cols;
    case MetricKind::mean_iou:
      return int64_t{m.num_classes} * m.num_classes;
    case MetricKind::true_positives:
    case MetricKind::false_positives:
    case MetricKind::true_negatives:
    case MetricKind::false_negatives:
      return 1;
    case MetricKind::state_metric:
      return m.state_floats;
    default:
      return 2;
  }
}

// Floats per target row for predictions of `cols` columns: 1 for the
// metrics that take class indices, else cols.
inline int64_t metric_target_width(const MetricSpec& m, int64_t cols) {
  switch (m.kind) {
    case MetricKind::sparse_categorical_accuracy:
    case MetricKind::sparse_top_k_categorical_accuracy:
    case MetricKind::sparse_categorical_crossentropy:
      return 1;
    case MetricKind::mean_iou:
      return m.sparse_y_true && !m.sparse_y_pred ? 1 : cols;
    default:
      return cols;
  }
}

}  // namespace mr
