# Metrics: running means of per-sample values, reduced across replicas as
# sums and counts; the metrics with a state of counts (AUC, precision, ...)
# are in R/metrics-confusion.R, the other means in R/metrics-means.R.

# `params`: the core's parameters the metric sets (R/metrics-core.R);
# `config`: the entries of Keras' get_config() after name and dtype, for
# .keras files.
new_metric <- function(kind, class_name, name, threshold, y_true, y_pred, call, params = list(),
                       config = NULL) {
  if (is.null(config) && kind == "binary_accuracy") config <- list(threshold = as.numeric(threshold))
  obj <- structure(list(kind = kind, class_name = class_name, name = check_string(name, "name", call = call),
                        threshold = threshold, params = params, config = config),
                   class = c(paste0("mirrored_metric_", kind), "mirrored_metric"))
  if (is.null(y_true) && is.null(y_pred)) return(obj)
  if (is.null(y_true) || is.null(y_pred)) abort_value("Give both {.arg y_true} and {.arg y_pred}, or neither.", call = call)
  metric_per_sample(obj, y_true, as.matrix(y_pred))
}

metric_per_sample <- function(metric, y_true, p) {
  argmax <- function(m) max.col(m, ties.method = "first") - 1L
  switch(metric$kind,
    sparse_categorical_accuracy = as.numeric(argmax(p) == as.integer(y_true)),
    categorical_accuracy = as.numeric(argmax(p) == argmax(as.matrix(y_true))),
    binary_accuracy = rowMeans((p > metric$threshold) == (as.matrix(y_true) > 0.5)),
    mean_absolute_error = rowMeans(abs(as.matrix(y_true) - p)),
    traced = traced_per_sample(metric$fn, y_true, p, paste0("The metric function ", metric$name), NULL),
    metric_mean_per_sample(metric, y_true, p)
  )
}

#' Metrics
#'
#' Running means of per-sample values, shown in the logs of [fit()] and
#' returned by [evaluate()]. Without `y_true` and `y_pred` they return a
#' metric object for [compile.mirrored_model()]; with them, the per-sample
#' values computed in R. The string `"accuracy"` (or `"acc"`) in `compile()`
#' picks the accuracy that fits the loss, as Keras does.
#'
#' @param y_true Targets (class indices for the sparse metric).
#' @param y_pred Predictions, samples in rows.
#' @param threshold Decision threshold of `metric_binary_accuracy()`.
#' @param ... Unused.
#' @param name Name of the metric in logs.
#' @param dtype Unused (float32).
#' @return A metric object, or per-sample values.
#' @family metrics
#' @seealso [compile.mirrored_model()]
#' @examples
#' metric_sparse_categorical_accuracy()
#' metric_sparse_categorical_accuracy(c(1, 0), rbind(c(0.2, 0.8), c(0.4, 0.6)))
#' @export
metric_sparse_categorical_accuracy <- function(y_true, y_pred, ..., name = "sparse_categorical_accuracy",
                                               dtype = NULL) {
  new_metric("sparse_categorical_accuracy", "SparseCategoricalAccuracy", name, 0.5,
             if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname metric_sparse_categorical_accuracy
#' @export
metric_categorical_accuracy <- function(y_true, y_pred, ..., name = "categorical_accuracy", dtype = NULL) {
  new_metric("categorical_accuracy", "CategoricalAccuracy", name, 0.5,
             if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname metric_sparse_categorical_accuracy
#' @export
metric_binary_accuracy <- function(y_true, y_pred, threshold = 0.5, ..., name = "binary_accuracy",
                                   dtype = NULL) {
  new_metric("binary_accuracy", "BinaryAccuracy", name, check_num(threshold, "threshold"),
             if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname metric_sparse_categorical_accuracy
#' @export
metric_mean_absolute_error <- function(y_true, y_pred, ..., name = "mean_absolute_error", dtype = NULL) {
  new_metric("mean_absolute_error", "MeanAbsoluteError", name, 0.5,
             if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

as_metric <- function(x, loss, arg = "metrics", name = "", call = sys.call(-1)) {
  if (inherits(x, "mirrored_metric")) return(x)
  # A Metric() class's instance, or the class itself (R/metrics-custom-class.R).
  if (inherits(x, "mirrored_custom_metric_class")) x <- x()
  if (inherits(x, "mirrored_custom_metric")) return(state_metric(x, call))
  # A function written with op_* (R/losses-custom.R).
  if (is.function(x)) {
    # keras3 takes a metric constructor uncalled (metrics = list(metric_auc)).
    ctors <- c(list(metric_sparse_categorical_accuracy, metric_categorical_accuracy, metric_binary_accuracy,
                    metric_mean_absolute_error), metric_strings())
    ctor <- Find(function(f) identical(f, x), ctors)
    if (!is.null(ctor)) return(ctor())
    return(custom_metric(if (nzchar(name)) name else "custom_metric", x))
  }
  if (is.character(x) && length(x) == 1) {
    if (x %in% c("accuracy", "acc")) {
      m <- switch(loss$kind,
        sparse_categorical_crossentropy = metric_sparse_categorical_accuracy(),
        categorical_crossentropy = metric_categorical_accuracy(),
        binary_crossentropy = metric_binary_accuracy(),
        abort_value("{.val {x}} has no meaning for loss {.val {loss$name}}; name the metric.", call = call))
      m$name <- if (x == "acc") "acc" else "accuracy"
      m$string <- x
      return(m)
    }
    known <- c(list(sparse_categorical_accuracy = metric_sparse_categorical_accuracy,
                    categorical_accuracy = metric_categorical_accuracy,
                    binary_accuracy = metric_binary_accuracy,
                    mean_absolute_error = metric_mean_absolute_error, mae = metric_mean_absolute_error),
               metric_strings())
    # Keras 3 names a metric given by a string after the string ("mae"
    # logs as "mae") and saves the string.
    if (x %in% names(known)) {
      m <- known[[x]](name = x)
      m$string <- x
      return(m)
    }
  }
  abort_value("Each of {.arg {arg}} must be a metric object or one of {.val {c('accuracy', 'sparse_categorical_accuracy', 'categorical_accuracy', 'binary_accuracy', 'mean_absolute_error', names(metric_strings()))}}, not {describe(x)}.",
              call = call)
}
