# Metrics that are weighted means of a per-sample value (Keras 3's
# MeanMetricWrapper metrics): regression errors, top-k accuracies and the
# cross-entropies. Their state is (sum of w * value, sum of w).

# Errors for arguments given to `...` that the metric does not take (keras3
# passes them on to Keras, which rejects them).
check_metric_dots <- function(dots, call) {
  if (length(dots)) {
    nm <- names(dots) %||% rep("", length(dots))
    what <- ifelse(nzchar(nm), paste0("`", nm, "`"), "an unnamed argument")
    abort_value("Unknown argument{?s} {what}.", call = call)
  }
}

# A mean metric built by a keras3 constructor that also computes per-sample
# values when given `y_true` and `y_pred`.
mean_metric <- function(kind, class_name, name, y_true, y_pred, dots, call, params = list(),
                        config = list()) {
  check_metric_dots(dots, call)
  new_metric(kind, class_name, name, 0.5, y_true, y_pred, call, params = params, config = config)
}

arg_or_null <- function(missing, x) if (missing) NULL else x

# Per-sample values of the metrics of this file, computed in R (double).
metric_mean_per_sample <- function(metric, y_true, p) {
  t <- as.matrix(y_true)
  p <- as.matrix(p)
  eps <- 1e-7
  in_top_k <- function(y, k) {
    vapply(seq_len(nrow(p)), function(i) {
      row <- p[i, ]
      if (y[i] < 0 || y[i] >= ncol(p) || !all(is.finite(row))) return(0)
      as.numeric(sum(row > row[y[i] + 1]) < k)
    }, numeric(1))
  }
  pr <- metric$params
  switch(metric$kind,
    mean_squared_error = rowMeans((p - t)^2),
    mean_absolute_percentage_error = 100 * rowMeans(abs(t - p) / pmax(abs(t), eps)),
    top_k_categorical_accuracy = in_top_k(max.col(t, ties.method = "first") - 1L, pr$k),
    sparse_top_k_categorical_accuracy = in_top_k(trunc(as.numeric(y_true)), pr$k),
    binary_crossentropy = {
      s <- pr$label_smoothing
      t <- t * (1 - s) + 0.5 * s
      if (pr$from_logits) rowMeans(pmax(p, 0) - p * t + log1p(exp(-abs(p))))
      else {
        q <- pmin(pmax(p, eps), 1 - eps)
        -rowMeans(t * log(q) + (1 - t) * log(1 - q))
      }
    },
    categorical_crossentropy = {
      s <- pr$label_smoothing
      t <- t * (1 - s) + s / ncol(p)
      if (pr$from_logits) {
        m <- apply(p, 1, max)
        lse <- m + log(rowSums(exp(p - m)))
        rowSums(t * (lse - p))
      } else {
        q <- pmin(pmax(p / rowSums(p), eps), 1 - eps)
        -rowSums(t * log(q))
      }
    },
    sparse_categorical_crossentropy = {
      y <- as.integer(y_true)
      if (pr$from_logits) {
        m <- apply(p, 1, max)
        m + log(rowSums(exp(p - m))) - p[cbind(seq_along(y), y + 1L)]
      } else {
        q <- pmin(pmax(p, eps), 1 - eps)
        log(rowSums(q)) - log(q[cbind(seq_along(y), y + 1L)])
      }
    },
    abort_value("{.fn {paste0('metric_', metric$kind)}} has no per-sample values: compile() it into a model.")
  )
}

#' Regression, top-k and cross-entropy metrics
#'
#' Weighted means of a per-sample value, as Keras 3 computes them: mean
#' squared error, its root (the square root of the running mean), mean
#' absolute percentage error (`100 * mean(|y_true - y_pred| / max(|y_true|,
#' epsilon))`), top-k accuracies (the true class is among the `k` highest
#' scores; ties at the boundary count as in, as `tf.math.in_top_k`) and the
#' cross-entropies. Without `y_true` and `y_pred` they return a metric
#' object for [compile.mirrored_model()] (`metrics` or `weighted_metrics`);
#' with them, the per-sample values computed in R.
#'
#' @param y_true Targets (class indices for the sparse metrics).
#' @param y_pred Predictions, samples in rows.
#' @param k How many of the highest scores count as a hit.
#' @param from_logits Whether `y_pred` are logits rather than probabilities.
#' @param label_smoothing Smoothing of the targets in `[0, 1]`: binary
#'   targets become `t * (1 - s) + s / 2`, categorical ones
#'   `t * (1 - s) + s / classes`.
#' @param axis The class axis; only `-1` (the last) is supported.
#' @param ignore_class Not supported yet (must be `NULL`).
#' @param from_sorted_ids Not supported yet (must be `FALSE`).
#' @param ... Must be empty.
#' @param name Name of the metric in logs.
#' @param dtype Unused (float32).
#' @return A metric object, or per-sample values.
#' @family metrics
#' @seealso [compile.mirrored_model()]
#' @examples
#' metric_mean_squared_error(c(1, 2), c(1.5, 2))
#' metric_top_k_categorical_accuracy(rbind(c(0, 1, 0)), rbind(c(0.5, 0.2, 0.3)), k = 2)
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(2)
#' model |> compile(loss = "mse", metrics = list(metric_root_mean_squared_error(), "mape"))
#' @export
metric_mean_squared_error <- function(y_true, y_pred, ..., name = "mean_squared_error", dtype = NULL) {
  mean_metric("mean_squared_error", "MeanSquaredError", name, arg_or_null(missing(y_true), y_true),
              arg_or_null(missing(y_pred), y_pred), list(...), sys.call())
}

#' @rdname metric_mean_squared_error
#' @export
metric_root_mean_squared_error <- function(..., name = "root_mean_squared_error", dtype = NULL) {
  mean_metric("root_mean_squared_error", "RootMeanSquaredError", name, NULL, NULL, list(...), sys.call())
}

#' @rdname metric_mean_squared_error
#' @export
metric_mean_absolute_percentage_error <- function(y_true, y_pred, ..., name = "mean_absolute_percentage_error",
                                                  dtype = NULL) {
  mean_metric("mean_absolute_percentage_error", "MeanAbsolutePercentageError", name,
              arg_or_null(missing(y_true), y_true), arg_or_null(missing(y_pred), y_pred), list(...), sys.call())
}

#' @rdname metric_mean_squared_error
#' @export
metric_top_k_categorical_accuracy <- function(y_true, y_pred, k = 5L, ..., name = "top_k_categorical_accuracy",
                                              dtype = NULL) {
  k <- check_int(k, "k", min = 1)
  mean_metric("top_k_categorical_accuracy", "TopKCategoricalAccuracy", name,
              arg_or_null(missing(y_true), y_true), arg_or_null(missing(y_pred), y_pred), list(...), sys.call(),
              params = list(k = k), config = list(k = k))
}

#' @rdname metric_mean_squared_error
#' @export
metric_sparse_top_k_categorical_accuracy <- function(y_true, y_pred, k = 5L, ...,
                                                     name = "sparse_top_k_categorical_accuracy", dtype = NULL,
                                                     from_sorted_ids = FALSE) {
  k <- check_int(k, "k", min = 1)
  if (!identical(from_sorted_ids, FALSE)) {
    abort_not_yet("{.arg from_sorted_ids} = TRUE is not supported yet; give class scores.")
  }
  mean_metric("sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy", name,
              arg_or_null(missing(y_true), y_true), arg_or_null(missing(y_pred), y_pred), list(...), sys.call(),
              params = list(k = k), config = list(k = k))
}

check_metric_axis <- function(axis, call) {
  if (!identical(as.numeric(axis), -1)) {
    abort_value("{.arg axis} must be -1 (the last axis), not {describe(axis)}.", call = call)
  }
}

#' @rdname metric_mean_squared_error
#' @export
metric_binary_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0, axis = -1L, ...,
                                       name = "binary_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_metric_axis(axis, call)
  fl <- check_bool(from_logits, "from_logits", call = call)
  ls <- check_num(label_smoothing, "label_smoothing", min = 0, max = 1, call = call)
  mean_metric("binary_crossentropy", "BinaryCrossentropy", name, arg_or_null(missing(y_true), y_true),
              arg_or_null(missing(y_pred), y_pred), list(...), call,
              params = list(from_logits = fl, label_smoothing = ls),
              config = list(from_logits = fl, label_smoothing = ls))
}

#' @rdname metric_mean_squared_error
#' @export
metric_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0,
                                            axis = -1L, ..., name = "categorical_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_metric_axis(axis, call)
  fl <- check_bool(from_logits, "from_logits", call = call)
  ls <- check_num(label_smoothing, "label_smoothing", min = 0, max = 1, call = call)
  mean_metric("categorical_crossentropy", "CategoricalCrossentropy", name, arg_or_null(missing(y_true), y_true),
              arg_or_null(missing(y_pred), y_pred), list(...), call,
              params = list(from_logits = fl, label_smoothing = ls),
              config = list(from_logits = fl, label_smoothing = ls, axis = -1L))
}

#' @rdname metric_mean_squared_error
#' @export
metric_sparse_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, ignore_class = NULL,
                                                   axis = -1L, ..., name = "sparse_categorical_crossentropy",
                                                   dtype = NULL) {
  call <- sys.call()
  check_metric_axis(axis, call)
  check_not_yet_null(list(ignore_class = ignore_class), call = call)
  fl <- check_bool(from_logits, "from_logits", call = call)
  mean_metric("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", name,
              arg_or_null(missing(y_true), y_true), arg_or_null(missing(y_pred), y_pred), list(...), call,
              params = list(from_logits = fl),
              config = list(from_logits = fl, ignore_class = NULL, axis = -1L))
}

# The metric strings Keras 3 resolves besides the accuracies (keras.metrics.get:
# function names and the names of classes that take no required argument):
# each logs under the string and is saved as it.
metric_strings <- function() {
  list(AUC = metric_auc, Precision = metric_precision, Recall = metric_recall,
       TruePositives = metric_true_positives, FalsePositives = metric_false_positives,
       TrueNegatives = metric_true_negatives, FalseNegatives = metric_false_negatives,
       MeanSquaredError = metric_mean_squared_error, RootMeanSquaredError = metric_root_mean_squared_error,
       MeanAbsolutePercentageError = metric_mean_absolute_percentage_error,
       TopKCategoricalAccuracy = metric_top_k_categorical_accuracy,
       SparseTopKCategoricalAccuracy = metric_sparse_top_k_categorical_accuracy,
       F1Score = metric_f1_score, FBetaScore = metric_fbeta_score,
       BinaryCrossentropy = metric_binary_crossentropy, CategoricalCrossentropy = metric_categorical_crossentropy,
       SparseCategoricalCrossentropy = metric_sparse_categorical_crossentropy,
       mse = metric_mean_squared_error, mean_squared_error = metric_mean_squared_error,
       root_mean_squared_error = metric_root_mean_squared_error,
       mape = metric_mean_absolute_percentage_error,
       mean_absolute_percentage_error = metric_mean_absolute_percentage_error,
       top_k_categorical_accuracy = metric_top_k_categorical_accuracy,
       sparse_top_k_categorical_accuracy = metric_sparse_top_k_categorical_accuracy,
       binary_crossentropy = metric_binary_crossentropy,
       categorical_crossentropy = metric_categorical_crossentropy,
       sparse_categorical_crossentropy = metric_sparse_categorical_crossentropy,
       auc = metric_auc, precision = metric_precision, recall = metric_recall,
       f1_score = metric_f1_score)
}
