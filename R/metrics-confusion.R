# Metrics whose state is a table of weighted counts (Keras 3's confusion
# metrics, F-scores and IoU): AUC, precision, recall, F1/F-beta and mean
# IoU. The counts are summed over steps and replicas in the core, and turned
# into the metric's value as Keras' result() does (src/mr/nn/metric.cpp).

confusion_metric <- function(kind, class_name, name, dots, call, params, config) {
  check_metric_dots(dots, call)
  new_metric(kind, class_name, name, params$threshold %||% 0.5, NULL, NULL, call,
             params = params, config = config)
}

# Keras' `thresholds` of precision and recall: NULL (0.5, or -1e10 with
# top_k, as Keras) or one number in [0, 1].
metric_threshold <- function(thresholds, top_k, call) {
  if (is.null(thresholds)) return(if (is.null(top_k)) 0.5 else -1e10)
  if (is.numeric(thresholds) && length(thresholds) > 1) {
    abort_not_yet("{.arg thresholds} with several values is not supported yet; give one threshold.", call = call)
  }
  check_num(thresholds, "thresholds", min = 0, max = 1, call = call)
}

#' Classification metrics from counts: AUC, precision, recall, F-scores, mean IoU
#'
#' Metrics computed from weighted counts accumulated over an epoch (summed
#' across replicas), with Keras 3's semantics:
#' - `metric_auc()`: the area under the ROC or precision-recall curve over
#'   `num_thresholds` evenly spaced thresholds, every element of the output a
#'   sample (`multi_label = FALSE`).
#' - `metric_precision()` / `metric_recall()`: `TP / (TP + FP)` and
#'   `TP / (TP + FN)` with predictions above `thresholds` positive; `top_k`
#'   keeps only each row's `k` highest scores, `class_id` one column.
#' - `metric_true_positives()`, `metric_false_positives()`,
#'   `metric_true_negatives()`, `metric_false_negatives()`: the weighted count
#'   of such elements over the epoch (every element of the output a sample,
#'   positive when above `thresholds`, labels other than 0 true), as Keras'
#'   `TruePositives` and the others.
#' - `metric_f1_score()` / `metric_fbeta_score()`: per class, combined by
#'   `average`. With `average = NULL` (Keras' default) Keras returns one score
#'   per class; mirrored's logs are scalars, so they show one entry per
#'   class, `f1_score_0`, `f1_score_1`, ... (classes numbered from 0).
#' - `metric_mean_iou()`: the mean over classes of the intersection over
#'   union, from the confusion matrix of class labels. As in Keras 3 (whose
#'   MeanIoU counts in int64), sample weights are truncated to integers.
#'
#' @param ... Must be empty.
#' @param num_thresholds Number of thresholds (> 1) of the AUC.
#' @param curve `"ROC"` or `"PR"`.
#' @param summation_method `"interpolation"`, `"minoring"` or `"majoring"`.
#' @param name Name of the metric in logs (Keras' default when `NULL`).
#' @param dtype Unused (float32).
#' @param thresholds For `metric_auc()`: not supported yet (must be `NULL`);
#'   for precision, recall and the counts: one decision threshold (default 0.5).
#' @param multi_label Must be `FALSE` (labels are flattened).
#' @param num_labels,label_weights Not supported yet (must be `NULL`).
#' @param from_logits Whether predictions are logits (a sigmoid is applied).
#' @param top_k Count only the `top_k` highest scores of each row as positive.
#' @param class_id Count only this class (a 0-based column).
#' @param average `NULL` (per class), `"micro"`, `"macro"` or `"weighted"`.
#' @param beta The F-score's beta (> 0).
#' @param threshold Scores above it are positive; `NULL`: each row's highest
#'   score is.
#' @param num_classes Number of classes of the IoU.
#' @param ignore_class A class label whose samples are not counted, or `NULL`.
#' @param sparse_y_true,sparse_y_pred Whether targets / predictions are class
#'   labels (`TRUE`) or per-class scores (`FALSE`: argmax).
#' @param axis The class axis; only `-1`.
#' @return A metric object for [compile.mirrored_model()].
#' @family metrics
#' @seealso [compile.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |>
#'   layer_dense(1, activation = "sigmoid")
#' model |> compile(loss = "binary_crossentropy",
#'                  metrics = list(metric_auc(), metric_precision(), metric_recall(),
#'                                 metric_f1_score(threshold = 0.5)))
#' x <- matrix(runif(30), 10)
#' evaluate(model, x, as.numeric(x[, 1] > 0.5), verbose = 0)
#' @export
metric_auc <- function(..., num_thresholds = 200L, curve = "ROC", summation_method = "interpolation",
                       name = NULL, dtype = NULL, thresholds = NULL, multi_label = FALSE, num_labels = NULL,
                       label_weights = NULL, from_logits = FALSE) {
  call <- sys.call()
  check_not_yet_null(list(thresholds = thresholds, num_labels = num_labels, label_weights = label_weights),
                     call = call)
  if (!identical(multi_label, FALSE)) {
    abort_not_yet("{.arg multi_label} = TRUE is not supported yet; labels are flattened.", call = call)
  }
  n <- check_int(num_thresholds, "num_thresholds", min = 2, call = call)
  curve <- check_choice(curve, "curve", c("ROC", "PR", "roc", "pr"), call = call)
  curve <- toupper(curve)
  sm <- check_choice(summation_method, "summation_method", c("interpolation", "minoring", "majoring"),
                     call = call)
  fl <- check_bool(from_logits, "from_logits", call = call)
  confusion_metric("auc", "AUC", name %||% "auc", list(...), call,
                   params = list(num_thresholds = n, curve = curve, summation_method = sm, from_logits = fl),
                   config = list(num_thresholds = n, curve = curve, summation_method = sm, multi_label = FALSE,
                                 num_labels = NULL, label_weights = NULL, from_logits = fl))
}

precision_recall <- function(kind, class_name, dots, thresholds, top_k, class_id, name, call) {
  top_k <- check_int(top_k, "top_k", min = 1, null_ok = TRUE, call = call)
  class_id <- check_int(class_id, "class_id", min = 0, null_ok = TRUE, call = call)
  th <- metric_threshold(thresholds, top_k, call)
  confusion_metric(kind, class_name, name %||% kind, dots, call,
                   params = list(threshold = th, top_k = top_k %||% 0, class_id = class_id %||% -1),
                   config = list(thresholds = thresholds, top_k = top_k, class_id = class_id))
}

# Keras' TruePositives, FalsePositives, TrueNegatives, FalseNegatives.
confusion_count <- function(kind, class_name, dots, thresholds, name, call) {
  th <- metric_threshold(thresholds, NULL, call)
  confusion_metric(kind, class_name, name %||% kind, dots, call, params = list(threshold = th),
                   config = list(thresholds = thresholds))
}

#' @rdname metric_auc
#' @export
metric_true_positives <- function(..., thresholds = NULL, name = NULL, dtype = NULL) {
  confusion_count("true_positives", "TruePositives", list(...), thresholds, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_false_positives <- function(..., thresholds = NULL, name = NULL, dtype = NULL) {
  confusion_count("false_positives", "FalsePositives", list(...), thresholds, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_true_negatives <- function(..., thresholds = NULL, name = NULL, dtype = NULL) {
  confusion_count("true_negatives", "TrueNegatives", list(...), thresholds, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_false_negatives <- function(..., thresholds = NULL, name = NULL, dtype = NULL) {
  confusion_count("false_negatives", "FalseNegatives", list(...), thresholds, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_precision <- function(..., thresholds = NULL, top_k = NULL, class_id = NULL, name = NULL, dtype = NULL) {
  precision_recall("precision", "Precision", list(...), thresholds, top_k, class_id, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_recall <- function(..., thresholds = NULL, top_k = NULL, class_id = NULL, name = NULL, dtype = NULL) {
  precision_recall("recall", "Recall", list(...), thresholds, top_k, class_id, name, sys.call())
}

fbeta_metric <- function(class_name, dots, average, beta, threshold, name, call) {
  if (!is.null(average)) average <- check_choice(average, "average", c("micro", "macro", "weighted"), call = call)
  beta <- check_num(beta, "beta", min = 0, min_open = TRUE, call = call)
  threshold <- check_num(threshold, "threshold", min = 0, max = 1, min_open = TRUE, null_ok = TRUE, call = call)
  config <- list(average = average, beta = beta, threshold = threshold)
  if (class_name == "F1Score") config$beta <- NULL
  confusion_metric("fbeta_score", class_name, name, dots, call,
                   params = list(average = average %||% "none", beta = beta, threshold = threshold %||% NaN),
                   config = config)
}

#' @rdname metric_auc
#' @export
metric_f1_score <- function(..., average = NULL, threshold = NULL, name = "f1_score", dtype = NULL) {
  fbeta_metric("F1Score", list(...), average, 1, threshold, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_fbeta_score <- function(..., average = NULL, beta = 1, threshold = NULL, name = "fbeta_score",
                               dtype = NULL) {
  fbeta_metric("FBetaScore", list(...), average, beta, threshold, name, sys.call())
}

#' @rdname metric_auc
#' @export
metric_mean_iou <- function(..., num_classes, name = NULL, dtype = NULL, ignore_class = NULL, sparse_y_true = TRUE,
                            sparse_y_pred = TRUE, axis = -1L) {
  call <- sys.call()
  if (missing(num_classes)) abort_value("{.arg num_classes} is required.", call = call)
  nc <- check_int(num_classes, "num_classes", min = 1, call = call)
  ic <- check_int(ignore_class, "ignore_class", null_ok = TRUE, call = call)
  st <- check_bool(sparse_y_true, "sparse_y_true", call = call)
  sp <- check_bool(sparse_y_pred, "sparse_y_pred", call = call)
  check_metric_axis(axis, call)
  if (!st && sp) {
    abort_value("{.arg sparse_y_true} = FALSE needs {.arg sparse_y_pred} = FALSE: class scores in both.", call = call)
  }
  confusion_metric("mean_iou", "MeanIoU", name %||% "mean_io_u", list(...), call,
                   params = list(num_classes = nc, ignore_class = if (is.null(ic) || ic < 0) -1 else ic,
                                 sparse_y_true = st, sparse_y_pred = sp),
                   config = list(num_classes = nc, ignore_class = ic, sparse_y_true = st, sparse_y_pred = sp,
                                 axis = -1L))
}
