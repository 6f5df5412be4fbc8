# Preprocessing layers (Keras 3's Normalization and Rescaling) and adapt().
#
# Where adapted values live: Keras keeps a Normalization layer's adapted mean
# and variance in three non-trainable variables (mean, variance, count) of the
# layer; the config keeps mean = NULL. mirrored's weights live in the models'
# replicas, not in layers (R/layer.R), so adapt() stores the values on the
# layer object (`layer$state_values`, in the layer's weights order) and writes
# them into the state buffer of every model built with the layer: at build
# (attach_layer_states(), called by the model when its core is created, after
# the initializers ran, so the new model starts from them and get_weights()
# shows them), and at once into models already built (as Keras, whose models
# share the layer's variables, see a later adapt()). A model built by
# load_model() takes the file's values instead. Nothing of this goes through
# the layer's config, which stays Keras' (mean = NULL), so .keras files carry
# the adapted values as Keras' do: as the weights "mean", "variance" and
# "count".

#' Normalize continuous features
#'
#' Shifts and scales inputs to mean 0 and standard deviation 1, feature by
#' feature, as Keras' `Normalization`:
#' `(x - mean) / max(sqrt(variance), 1e-7)`, or with `invert = TRUE`
#' `mean + x * max(sqrt(variance), 1e-7)` (which undoes it). The mean and
#' variance are either given (`mean`, `variance`) or computed from data by
#' [adapt()], which must then be called before the model is trained or used.
#'
#' @inheritParams layer_dense
#' @param axis The axis that keeps a mean and variance per index: the last
#'   one (`-1`, the default), or `NULL` for one mean and variance over all
#'   values. Other axes are not supported yet (a `mirrored_not_yet_error`).
#' @param mean,variance The values to use (given together): a number, or one
#'   value per index of `axis`. `NULL` (the default): computed by [adapt()].
#' @param invert Whether to apply the inverse transformation.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family preprocessing layers
#' @seealso [adapt()], [layer_rescaling()]
#' @examples
#' x <- matrix(c(0, 2, 0, 2, 7, 9, 7, 9, 4, 6, 4, 6), nrow = 4)
#' norm <- layer_normalization()
#' adapt(norm, x)
#' model <- keras_model_sequential(input_shape = 3)
#' model$add(norm)
#' predict(model, x, verbose = 0)  # each column: -1, 1, -1, 1
#'
#' # Given values; invert = TRUE maps normalized values back.
#' layer_normalization(mean = 3, variance = 2, invert = TRUE)
#' @export
layer_normalization <- function(object, axis = -1L, mean = NULL, variance = NULL, invert = FALSE,
                                ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (!is.null(axis)) {
    if (!(is.numeric(axis) && length(axis) >= 1 && all(is.finite(axis)) && all(axis == round(axis)))) {
      abort_value("{.arg axis} must be a whole number, a vector of them, or NULL, not {describe(axis)}.")
    }
    if (length(axis) > 1) {
      abort_not_yet("{.arg axis} with several axes ({axis}) is not supported yet; use -1 or NULL.")
    }
  }
  check_bool(invert, "invert")
  if (is.null(mean) != is.null(variance)) {
    abort_value("{.arg mean} and {.arg variance} must be given together (or both NULL); got {.arg {if (is.null(mean)) 'variance' else 'mean'}} only.")
  }
  if (!is.null(mean)) {
    check_stat <- function(x, arg) {
      if (!(is.numeric(x) && length(x) >= 1 && all(is.finite(x)))) {
        abort_value("{.arg {arg}} must be a number or a numeric vector of finite values, not {describe(x)}.",
                    call = sys.call(-2))
      }
    }
    check_stat(mean, "mean")
    check_stat(variance, "variance")
    if (length(mean) != length(variance)) {
      abort_value("{.arg mean} and {.arg variance} must have the same length, not {length(mean)} and {length(variance)}.")
    }
    if (any(variance < 0)) abort_value("{.arg variance} must be >= 0, not {describe(variance)}.")
    if (is.null(axis) && length(mean) != 1) {
      abort_value("{.arg mean} must be a single number when {.arg axis} is NULL, not {length(mean)} values.")
    }
  }
  as_stat <- function(x) if (is.null(x)) NULL else if (length(x) == 1) as.numeric(x) else as.list(as.numeric(x))
  config <- list(axis = if (is.null(axis)) list() else list(as.integer(axis)), invert = invert,
                 mean = as_stat(mean), variance = as_stat(variance))
  layer <- new_layer("Normalization", config, dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Rescale inputs
#'
#' `output = input * scale + offset`, element-wise, as Keras' `Rescaling`
#' (for instance `scale = 1/255` maps pixel values to \[0, 1\], and
#' `scale = 1/127.5, offset = -1` to \[-1, 1\]).
#'
#' @inheritParams layer_dense
#' @param scale The factor, a number. (Keras also takes one factor per
#'   channel; mirrored does not yet: a `mirrored_not_yet_error`.)
#' @param offset The offset, a number.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family preprocessing layers
#' @seealso [layer_normalization()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_rescaling(scale = 1 / 255)
#' predict(model, matrix(c(0, 51, 102, 255), 1), verbose = 0)
#' @export
layer_rescaling <- function(object, scale, offset = 0, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  for (arg in c("scale", "offset")) {
    x <- get(arg)
    if (is.numeric(x) && length(x) > 1) {
      abort_not_yet("{.arg {arg}} with one value per channel is not supported yet; give a number.")
    }
  }
  scale <- check_num(scale, "scale")
  offset <- check_num(offset, "offset")
  layer <- new_layer("Rescaling", list(scale = scale, offset = offset), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Fit the state of a preprocessing layer to data
#'
#' Computes what a preprocessing layer needs from data, as keras3's
#' `adapt()`: for [layer_normalization()], the mean and the (population)
#' variance of the data over every axis but the layer's `axis`, accumulated
#' in double precision (over a dataset, batch by batch with the exact
#' pairwise combination of batch means and variances Keras uses).
#'
#' The values become the layer's `mean` and `variance` weights: a model built
#' with the layer afterwards starts with them, and a model already built with
#' it sees them at once (as in Keras, where models share the layer's
#' variables); `get_weights()` and saved `.keras` files show them.
#'
#' @param object A layer made by [layer_normalization()] (without `mean` and
#'   `variance`).
#' @param data The data: an R array or matrix whose first axis indexes the
#'   samples (a plain vector is a column of samples of one feature), or a
#'   dataset ([tensor_slices_dataset()], ...) whose elements are batches,
#'   their first axis the samples, as Keras assumes (batch a dataset of
#'   single samples with [dataset_batch()] first; of an element with several
#'   components, such as `(x, y)`, only the first is used).
#' @param ... Unused; must be empty.
#' @param batch_size For an array: the rows per batch of the pass (the
#'   result is the same up to rounding). Ignored for a dataset.
#' @param steps For a dataset: the number of batches to read (default: all).
#' @return `object`, invisibly (the layer is changed in place).
#' @family preprocessing layers
#' @seealso [layer_normalization()]
#' @examples
#' x <- matrix(c(1, 2, 3, 4, 10, 20, 30, 40), ncol = 2)
#' norm <- layer_normalization()
#' adapt(norm, x)
#' model <- keras_model_sequential(input_shape = 2)
#' model$add(norm)
#' get_weights(model)[1:2]  # mean 2.5, 25; variance 1.25, 125
#'
#' # Over a dataset, batch by batch:
#' norm2 <- layer_normalization()
#' adapt(norm2, tensor_slices_dataset(x) |> dataset_batch(3))
#' @export
adapt <- function(object, data, ..., batch_size = NULL, steps = NULL) UseMethod("adapt")

#' @export
adapt.default <- function(object, data, ..., batch_size = NULL, steps = NULL) {
  abort_value("{.fn adapt} needs a preprocessing layer such as {.fn layer_normalization}, not {describe(object)}.")
}

#' @export
adapt.mirrored_layer <- function(object, data, ..., batch_size = NULL, steps = NULL) {
  if (...length() > 0) abort_value("{.fn adapt} takes no arguments in {.arg ...}; got {...length()}.")
  if (!identical(object$class_name, "Normalization")) {
    abort_value("{.fn adapt} works on {.fn layer_normalization} layers; layer {.val {object$name}} is a {object$class_name}.")
  }
  if (!is.null(object$config$mean)) {
    abort_value("Layer {.val {object$name}} was given {.arg mean} and {.arg variance}; {.fn adapt} is for layers without them.")
  }
  check_int(batch_size, "batch_size", min = 1, null_ok = TRUE)
  steps <- check_int(steps, "steps", min = 1, null_ok = TRUE)
  per_index <- length(object$config$axis) > 0
  stats <- if (is_dataset(data)) {
    adapt_moments_dataset(data, per_index, steps)
  } else {
    adapt_moments_array(data, per_index, batch_size)
  }
  # mean, variance, count (Keras never updates count: it stays 0).
  values <- list(stats$mean, stats$variance, 0)
  # Every built model must take the values before any is changed.
  built <- Filter(function(m) m$is_built(), object$models)
  for (model in built) layer_weight_offset(model, object, values)
  for (model in built) write_layer_state(model, object, values)
  object$state_values <- values
  invisible(object)
}

# The data as an n x features matrix of doubles (features = 1 without axis).
adapt_matrix <- function(x, per_index, arg = "data", call = sys.call(-1)) {
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!(is.numeric(x) || is.logical(x)) || length(x) == 0) {
    abort_value("{.arg {arg}} must be a non-empty numeric array or a dataset, not {describe(x)}.", call = call)
  }
  if (anyNA(x) || any(!is.finite(x))) abort_value("{.arg {arg}} must hold finite values (no NA, NaN or Inf).", call = call)
  d <- dim(x)
  if (is.null(d)) d <- length(x)
  if (!per_index) return(matrix(as.double(x), ncol = 1))
  # The last axis is R's slowest: columns of this matrix are its indices.
  matrix(as.double(x), ncol = if (length(d) == 1) 1L else d[length(d)])
}

# Two-pass moments of each column, in double: list(mean, variance, n).
column_moments_r <- function(m) {
  mean <- colMeans(m)
  list(mean = mean, variance = colMeans(sweep(m, 2, mean)^2), n = nrow(m))
}

# Keras' pairwise combination of running and batch moments.
combine_moments <- function(total, batch) {
  if (is.null(total)) return(batch)
  n <- total$n + batch$n
  wt <- total$n / n
  wb <- batch$n / n
  mean <- total$mean * wt + batch$mean * wb
  variance <- (total$variance + (total$mean - mean)^2) * wt +
    (batch$variance + (batch$mean - mean)^2) * wb
  list(mean = mean, variance = variance, n = n)
}

adapt_moments_array <- function(data, per_index, batch_size, call = sys.call(-1)) {
  if (is.data.frame(data)) data <- as.matrix(data)
  m <- adapt_matrix(data, per_index, call = call)
  samples <- if (is.null(dim(data))) length(data) else dim(data)[1]
  if (is.null(batch_size) || batch_size >= samples) return(column_moments_r(m))
  # Batches are cut on the array (a sample's values are interleaved with
  # the others' in R's column-major order, not contiguous rows of m).
  total <- NULL
  for (start in seq(1, samples, by = batch_size)) {
    idx <- start:min(samples, start + batch_size - 1)
    part <- if (is.null(dim(data))) data[idx] else
      array(take_rows(data, idx), dim = c(length(idx), dim(data)[-1]))
    total <- combine_moments(total, column_moments_r(adapt_matrix(part, per_index, call = call)))
  }
  total
}

# x[idx, , ..., drop = FALSE] for an array of any rank.
take_rows <- function(x, idx) {
  d <- dim(x)
  do.call(`[`, c(list(x, idx), rep(list(TRUE), length(d) - 1), list(drop = FALSE)))
}

adapt_moments_dataset <- function(data, per_index, steps, call = sys.call(-1)) {
  if (identical(length(data), Inf) && is.null(steps)) {
    abort_value("{.arg data} is an infinite dataset: give {.arg steps}.", call = call)
  }
  it <- as_array_iterator(data)
  total <- NULL
  k <- 0L
  while ((is.null(steps) || k < steps) && !is.null(el <- iter_next(it))) {
    k <- k + 1L
    x <- el[[1]]
    total <- combine_moments(total, column_moments_r(adapt_matrix(x, per_index, "data", call = call)))
  }
  if (is.null(total)) abort_value("{.arg data} has no elements to adapt to.", call = call)
  total
}

# Called by a model when its core is created: registers the model with its
# adaptable layers (so a later adapt() reaches it) and, when `write`, writes
# their adapted values into its weights.
attach_layer_states <- function(model, write = TRUE) {
  for (layer in lapply(model$layers, layer_object)) {
    if (!identical(layer$class_name, "Normalization")) next
    if (!any(vapply(layer$models, function(m) identical(m, model), logical(1)))) {
      layer$models <- c(layer$models, list(model))
    }
    if (write && !is.null(layer$state_values)) write_layer_state(model, layer, layer$state_values)
  }
  invisible(model)
}

# Where the weights of `layer` start in `model$get_weights()` (0-based; NA
# when the model does not hold the layer); a shape error unless they take
# `values`.
layer_weight_offset <- function(model, layer, values, w = model$get_weights(), call = sys.call(-1)) {
  g <- model$graph()
  k <- 0L
  for (n in g$nodes) {
    if (!length(n$inputs)) next
    shapes <- lapply(n$inputs, function(i) g$nodes[[i + 1L]]$shape)
    nw <- length(n$layer$spec(shapes, call = call)$weights$name)
    if (identical(layer_object(n$layer), layer_object(layer))) {
      if (nw != length(values) || length(w[[k + 1L]]) != length(values[[1]]) ||
          length(w[[k + 2L]]) != length(values[[2]])) {
        abort_kind("shape", c("Layer {.val {layer$name}} was adapted to {length(values[[1]])} feature{?s}, but model {.val {model$name}} gives it {length(w[[k + 1L]])}."),
                   call = call)
      }
      return(k)
    }
    k <- k + nw
  }
  NA_integer_
}

# Replaces the weights of `layer` in `model` with `values` (Keras order).
write_layer_state <- function(model, layer, values, call = sys.call(-1)) {
  w <- model$get_weights()
  k <- layer_weight_offset(model, layer, values, w, call = call)
  if (is.na(k)) return(invisible(model))
  for (j in seq_along(values)) {
    target <- w[[k + j]]  # keeps the shape get_weights() gives
    target[] <- as.numeric(values[[j]])
    w[[k + j]] <- target
  }
  model$set_weights(w)
  invisible(model)
}
