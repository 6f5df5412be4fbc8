# Regression losses: mean squared / absolute / absolute percentage / squared
# logarithmic error, Huber, log-cosh and cosine similarity. Constructors and
# their plain R formulas (Keras 3; the core's are in src/mr/backends/common/).

loss_formulas_regression <- list(
  mean_squared_error = function(a, y_true, p, call) rowMeans((dense_targets(y_true, p, call) - p)^2),
  mean_absolute_error = function(a, y_true, p, call) rowMeans(abs(dense_targets(y_true, p, call) - p)),
  mean_absolute_percentage_error = function(a, y_true, p, call) {
    t <- dense_targets(y_true, p, call)
    100 * rowMeans(abs((t - p) / pmax(abs(t), loss_eps)))
  },
  mean_squared_logarithmic_error = function(a, y_true, p, call) {
    t <- dense_targets(y_true, p, call)
    rowMeans((log(pmax(p, loss_eps) + 1) - log(pmax(t, loss_eps) + 1))^2)
  },
  huber = function(a, y_true, p, call) {
    e <- abs(p - dense_targets(y_true, p, call))
    d <- a$delta
    v <- 0.5 * e^2  # a NaN error stays NaN (ifelse() would give NA)
    far <- !is.na(e) & e > d
    v[far] <- d * e[far] - 0.5 * d^2
    rowMeans(v)
  },
  log_cosh = function(a, y_true, p, call) {
    x <- p - dense_targets(y_true, p, call)
    # x + softplus(-2x) - log(2), as Keras writes log(cosh(x)).
    rowMeans(x + pmax(-2 * x, 0) + log1p(exp(-abs(2 * x))) - log(2))
  },
  cosine_similarity = function(a, y_true, p, call) {
    t <- dense_targets(y_true, p, call)
    # Keras' l2 normalization: x * min(1 / sqrt(sum(x^2)), 1 / epsilon).
    unit <- function(x) x * pmin(1 / sqrt(rowSums(x^2)), 1 / loss_eps)
    -rowSums(unit(t) * unit(p))
  }
)

#' Regression losses
#'
#' Mean squared, absolute, absolute percentage and squared logarithmic
#' error, the Huber loss, log-cosh and the cosine similarity. Without
#' `y_true` and `y_pred` these return a loss object for
#' [compile.mirrored_model()] (callable as
#' `loss(y_true, y_pred, sample_weight = NULL)`); with them they compute the
#' loss in R, reduced with `reduction`.
#'
#' Formulas (Keras 3), per sample, as the mean over the last axis of, with
#' `e = y_pred - y_true`:
#' - `loss_mean_squared_error()`: `e^2`;
#' - `loss_mean_absolute_error()`: `|e|`;
#' - `loss_mean_absolute_percentage_error()`: `100 |e| / max(|y_true|, 1e-7)`;
#' - `loss_mean_squared_logarithmic_error()`:
#'   `(log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))^2`;
#' - `loss_huber()`: `e^2 / 2` where `|e| <= delta`, else
#'   `delta |e| - delta^2 / 2`;
#' - `loss_log_cosh()`: `log(cosh(e))`;
#' - `loss_cosine_similarity()`: minus the sum of the products of the
#'   L2-normalized `y_true` and `y_pred` (between -1 and 1; -1 is best).
#'
#' @inheritParams loss_sparse_categorical_crossentropy
#' @param y_true Targets, an array shaped like `y_pred`.
#' @param delta Where the Huber loss turns from quadratic to linear.
#' @return A loss object, or the computed loss.
#' @family losses
#' @seealso [compile.mirrored_model()]
#' @examples
#' y_true <- rbind(c(0, 1), c(0, 0))
#' y_pred <- rbind(c(0.6, 0.4), c(0.4, 0.6))
#' loss_huber(y_true, y_pred)
#' loss_mean_absolute_error(y_true, y_pred, reduction = "none")
#' loss_log_cosh(y_true, y_pred)
#' loss_cosine_similarity(rbind(c(0, 1), c(1, 1)), rbind(c(1, 0), c(1, 1)))
#' mape <- loss_mean_absolute_percentage_error()
#' mape(rbind(c(1, 2)), rbind(c(1.5, 2)), sample_weight = 2)
#' @export
loss_mean_squared_error <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                    name = "mean_squared_error", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("mean_squared_error", "MeanSquaredError", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_mean_absolute_error <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                     name = "mean_absolute_error", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("mean_absolute_error", "MeanAbsoluteError", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_mean_absolute_percentage_error <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                                name = "mean_absolute_percentage_error", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("mean_absolute_percentage_error", "MeanAbsolutePercentageError", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_mean_squared_logarithmic_error <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                                name = "mean_squared_logarithmic_error", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("mean_squared_logarithmic_error", "MeanSquaredLogarithmicError", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_huber <- function(y_true, y_pred, delta = 1, ..., reduction = "sum_over_batch_size",
                       name = "huber_loss", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("huber", "Huber", name, reduction,
           list(delta = check_num(delta, "delta", min = 0, min_open = TRUE, call = call)),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_log_cosh <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "log_cosh",
                          dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("log_cosh", "LogCosh", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_mean_squared_error
#' @export
loss_cosine_similarity <- function(y_true, y_pred, axis = -1L, ..., reduction = "sum_over_batch_size",
                                   name = "cosine_similarity", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  check_axis_last(axis, call)
  new_loss("cosine_similarity", "CosineSimilarity", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}
