#' Train, test or predict on one batch
#'
#' keras3's `train_on_batch()`, `test_on_batch()` and `predict_on_batch()`:
#' the given samples are one batch (split across the replicas like any
#' batch). `train_on_batch()` takes one optimizer step on it and
#' `test_on_batch()` evaluates it; as in Keras 3, the metrics are reset
#' first, so the values returned are this batch's alone (for training,
#' computed with the weights before the step, as `fit()` logs them).
#'
#' @param object A compiled model (any model for `predict_on_batch()`).
#' @param x The batch's inputs: an array, or a list of arrays for several
#'   inputs.
#' @param y Its targets.
#' @param sample_weight Optional per-sample weights.
#' @param class_weight Optional per-class weights (`train_on_batch()`), as
#'   [fit()] takes them; not with `sample_weight`.
#' @param ... Must be empty.
#' @returns `train_on_batch()`, `test_on_batch()`: the loss as a number
#'   when the model has no metrics, else a named list of the loss and
#'   metrics. `predict_on_batch()`: the predictions, as [predict()] returns
#'   them.
#' @family training functions
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(1)
#' model |> compile(optimizer = "sgd", loss = "mse", metrics = "mae")
#' x <- matrix(runif(12), 4)
#' train_on_batch(model, x, c(0, 1, 0, 1))
#' test_on_batch(model, x, c(0, 1, 0, 1))
#' predict_on_batch(model, x)
#' @export
train_on_batch <- function(object, x, y = NULL, sample_weight = NULL, class_weight = NULL) {
  n <- batch_rows(x)
  h <- fit(object, x, y, batch_size = n, epochs = 1L, shuffle = FALSE, verbose = 0,
           sample_weight = sample_weight, class_weight = class_weight)
  on_batch_logs(lapply(h$metrics, function(v) v[[length(v)]]))
}

#' @rdname train_on_batch
#' @export
test_on_batch <- function(object, x, y = NULL, sample_weight = NULL, ...) {
  check_dots_empty(list(...), "test_on_batch", c("object", "x", "y", "sample_weight"))
  n <- batch_rows(x)
  on_batch_logs(as.list(evaluate(object, x, y, batch_size = n, verbose = 0, sample_weight = sample_weight)))
}

#' @rdname train_on_batch
#' @export
predict_on_batch <- function(object, x) {
  predict(object, x, batch_size = batch_rows(x), verbose = 0)
}

# The samples of a batch given as arrays (the first of several inputs).
batch_rows <- function(x, call = sys.call(-1)) {
  first <- if (is.list(x) && !is.data.frame(x)) x[[1]] else x
  if (is_dataset(x) || is.null(first) || !(is.numeric(first) || is.logical(first) || is.data.frame(first))) {
    abort_value("{.arg x} must be an array (or a list of arrays) holding one batch, not {describe(x)}.",
                call = call)
  }
  n <- if (is.data.frame(first)) nrow(first) else if (is.null(dim(first))) length(first) else dim(first)[[1]]
  if (n < 1) abort_value("{.arg x} holds no samples.", call = call)
  n
}

# keras3 returns the loss alone when it is the only value.
on_batch_logs <- function(logs) {
  if (length(logs) == 1L) return(logs[[1]])
  logs
}
