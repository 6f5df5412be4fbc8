# Keras' Mean and Sum metrics as R objects: the running trackers custom
# training code and callbacks keep (`loss_tracker <- metric_mean(name =
# "loss")`), updated from R values. Metrics of y_true and y_pred computed
# in the core during fit() are the other metric_*() functions.

StandaloneMetric <- R6::R6Class("mirrored_standalone_metric",
  public = list(
    name = NULL,
    class_name = NULL,
    initialize = function(name, class_name, mean) {
      self$name <- name
      self$class_name <- class_name
      private$mean <- mean
      self$reset_state()
    },
    # values: a number, vector or array; sample_weight: NULL, one weight per
    # value, or one per sample (the first axis: each sample's values are
    # averaged first, as Keras reduces them to sample-wise values).
    update_state = function(values, sample_weight = NULL) {
      if (!(is.numeric(values) || is.logical(values))) {
        abort_value("{.arg values} must be numeric, not {describe(values)}.", call = sys.call())
      }
      v <- as.double(values)
      if (is.null(sample_weight)) {
        private$total <- private$total + sum(v)
        private$count <- private$count + length(v)
        return(invisible(self))
      }
      if (!is.numeric(sample_weight) || anyNA(sample_weight)) {
        abort_value("{.arg sample_weight} must be numbers, not {describe(sample_weight)}.", call = sys.call())
      }
      w <- as.double(sample_weight)
      if (length(w) == 1L) w <- rep(w, length(v))
      if (length(w) != length(v)) {
        n <- if (is.null(dim(values))) length(values) else dim(values)[[1]]
        if (length(w) != n || length(v) %% n != 0) {
          abort_value("{.arg sample_weight} has {length(w)} value{?s}; expected 1, one per value ({length(v)}) or one per sample ({n}).",
                      call = sys.call())
        }
        v <- rowMeans(matrix(v, nrow = n))
      }
      private$total <- private$total + sum(v * w)
      private$count <- private$count + sum(w)
      invisible(self)
    },
    result = function() {
      if (!private$mean) return(private$total)
      if (private$count == 0) 0 else private$total / private$count  # Keras' divide_no_nan
    },
    reset_state = function() {
      private$total <- 0
      private$count <- 0
      invisible(self)
    },
    print = function(...) {
      cat("<", self$class_name, " metric '", self$name, "': ", format(self$result()), ">\n", sep = "")
      invisible(self)
    }
  ),
  private = list(mean = TRUE, total = 0, count = 0)
)

#' Running mean and sum of values
#'
#' keras3's `metric_mean()` and `metric_sum()`: objects that track the
#' weighted mean (or sum) of the values given to their `update_state()`
#' method, as custom training code and callbacks keep them. `$result()`
#' returns the mean (0 before any weight, as Keras' `divide_no_nan`) or the
#' sum, `$reset_state()` (or `reset_state(m)`) starts over.
#' `update_state(values, sample_weight = NULL)` takes numbers, a vector or an
#' array, with `NULL`, one weight, one per value or one per sample (the
#' first axis; each sample's values are averaged first, as Keras does).
#'
#' These are not metrics of targets and predictions: for those, give
#' [compile.mirrored_model()] a `metric_*()` function or an R function of
#' `y_true` and `y_pred`.
#'
#' @param ... Must be empty.
#' @param name The metric's name.
#' @param dtype `NULL` or `"float32"` (values are summed in double precision).
#' @returns A metric object with `update_state()`, `result()`,
#'   `reset_state()` and `name`.
#' @family metrics
#' @examples
#' m <- metric_mean(name = "loss")
#' m$update_state(c(1, 2, 3))
#' m$update_state(10, sample_weight = 2)
#' m$result()  # (1 + 2 + 3 + 20) / 5
#' reset_state(m)
#' m$result()
#' s <- metric_sum()
#' s$update_state(c(1, 2))
#' s$result()
#' @export
metric_mean <- function(..., name = "mean", dtype = NULL) {
  standalone_metric(list(...), name, dtype, "Mean", TRUE, sys.call())
}

#' @rdname metric_mean
#' @export
metric_sum <- function(..., name = "sum", dtype = NULL) {
  standalone_metric(list(...), name, dtype, "Sum", FALSE, sys.call())
}

standalone_metric <- function(dots, name, dtype, class_name, mean, call) {
  if (length(dots)) {
    abort_value("{.fn {tolower(paste0('metric_', class_name))}} takes no other arguments; got {.arg {names(dots) %||% 'an unnamed value'}}.",
                call = call)
  }
  name <- check_string(name, "name", call = call)
  if (!is.null(dtype) && !identical(dtype, "float32")) {
    abort_not_yet("{.arg dtype} = {.val {dtype}} is not supported yet; use NULL or \"float32\".", call = call)
  }
  StandaloneMetric$new(name, class_name, mean)
}

#' Reset a metric's state
#'
#' keras3's `reset_state()`: a metric made by [metric_mean()] or
#' [metric_sum()] starts over.
#'
#' @param object A metric object.
#' @returns `object`, invisibly.
#' @family metrics
#' @examples
#' m <- metric_sum()
#' m$update_state(3)
#' reset_state(m)
#' m$result()
#' @export
reset_state <- function(object) {
  if (!inherits(object, "mirrored_standalone_metric")) {
    abort_not_yet("{.fn reset_state} works on {.fn metric_mean} and {.fn metric_sum} objects only so far, not {describe(object)}.")
  }
  object$reset_state()
  invisible(object)
}
