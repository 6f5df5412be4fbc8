#' Configure a model for training
#'
#' Sets the optimizer, the loss and the metrics. Strings are resolved as
#' Keras does (`"adam"`, `"sparse_categorical_crossentropy"`, `"accuracy"`).
#' The model is changed in place and returned invisibly, so it can be piped.
#'
#' @param object A model.
#' @param optimizer An optimizer object (see [optimizer_adam()]) or name.
#' @param loss A loss object (see [loss_sparse_categorical_crossentropy()]) or name.
#' @param metrics A list of metric objects or names.
#' @param ... Unused.
#' @param loss_weights,weighted_metrics Not supported yet (must be `NULL`).
#' @param run_eagerly,steps_per_execution Accepted for compatibility; the
#'   step loop always runs in C++.
#' @param jit_compile Recorded only: it names XLA in keras3. The step is
#'   compiled C++ (and a CUDA graph on GPUs) either way.
#' @param auto_scale_loss Unused.
#' @return The model, invisibly.
#' @family training functions
#' @seealso [fit.mirrored_model()], [evaluate.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 3)
#' model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
#'                  metrics = "accuracy")
#' @importFrom generics compile
#' @export
compile.mirrored_model <- function(object, optimizer = "rmsprop", loss = NULL, metrics = NULL, ...,
                                   loss_weights = NULL, weighted_metrics = NULL, run_eagerly = FALSE,
                                   steps_per_execution = 1L, jit_compile = "auto", auto_scale_loss = TRUE) {
  if (is.null(loss)) abort_value("{.arg loss} is required: give a loss object or name.")
  check_unsupported(loss_weights = loss_weights, weighted_metrics = weighted_metrics)
  check_model_strategy(object)
  opt <- as_optimizer(optimizer)
  loss <- as_loss(loss)
  if (!is.null(metrics) && !is.list(metrics)) metrics <- as.list(metrics)
  metrics <- lapply(metrics, as_metric, loss = loss)
  names <- c("loss", vapply(metrics, function(m) m$name, character(1)))
  if (anyDuplicated(names)) abort_value("Metric names must be unique; got {.val {names}}.")
  object$optimizer <- opt
  object$loss <- loss
  object$compiled_metrics <- metrics
  object$jit_compile <- jit_compile
  opt$attach(object)
  if (!is.null(object$graph())) {
    check_loss_output(object)
    compile_core(object)
  }
  invisible(object)
}

# Sends the compile settings to the core (resets the optimizer's state).
compile_core <- function(model) {
  spec <- function(m) list(kind = m$kind, threshold = m$threshold, name = m$name)
  with_core(cpp_model_compile(model$ptr(), model$optimizer$core_spec(),
                              list(kind = model$loss$kind, from_logits = model$loss$from_logits,
                                   name = model$loss$name),
                              lapply(model$compiled_metrics, spec)))
}

check_loss_output <- function(model, call = sys.call(-1)) {
  out <- model$output_shape
  if (length(out) != 1) {
    abort_value("The model output has shape (None, {paste(out, collapse = ', ')}); losses need (None, units).",
                call = call)
  }
}

resolve_verbose <- function(verbose, call = sys.call(-1)) {
  if (identical(verbose, "auto")) {
    if (isTRUE(getOption("knitr.in.progress"))) return(2L)
    if (identical(Sys.getenv("TESTTHAT"), "true")) return(0L)
    return(1L)
  }
  check_int(verbose, "verbose", min = 0, max = 2, call = call)
}

# Arrays given to fit()/evaluate()/predict(): numeric, integer or logical,
# samples along the first dimension, no NA; factors become 0-based codes.
as_sample_array <- function(x, arg, call = sys.call(-1)) {
  if (is.factor(x)) x <- as.integer(x) - 1L
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!(is.numeric(x) || is.logical(x)) || length(x) == 0) {
    abort_value("{.arg {arg}} must be a non-empty numeric array, not {describe(x)}.", call = call)
  }
  if (anyNA(x) || (is.double(x) && !all(is.finite(x)))) {
    abort_value("{.arg {arg}} must not contain NA, NaN or Inf values.", call = call)
  }
  if (is.null(dim(x))) dim(x) <- length(x)
  x
}

sample_shape <- function(x) dim(x)[-1]

check_inputs <- function(model, x, call = sys.call(-1)) {
  if (inherits(model, "mirrored_sequential") && is.null(model$graph())) model$build(sample_shape(x))
  want <- model$input_shape
  got <- sample_shape(x)
  if (!identical(as.integer(prod(got)), as.integer(prod(want))) ||
      (length(got) > 0 && length(want) > 1 && !identical(as.integer(got), as.integer(want)))) {
    abort_kind("shape", "{.arg x} has samples of shape ({paste(got, collapse = ', ')}); the model expects ({paste(want, collapse = ', ')}).",
               call = call)
  }
}

check_targets <- function(model, y, n, call = sys.call(-1)) {
  if (dim(y)[1] != n) {
    abort_value("{.arg x} and {.arg y} must have the same number of samples; {.arg x} has {n}, {.arg y} has {dim(y)[1]}.",
                call = call)
  }
  units <- model$output_shape
  width <- prod(sample_shape(y))
  if (model$loss$kind == "sparse_categorical_crossentropy") {
    if (width != 1) abort_kind("shape", "{.arg y} must hold one class index per sample for {.val {model$loss$name}}, got {width} values per sample.", call = call)
    if (any(y != round(y)) || any(y < 0) || any(y >= units)) {
      bad <- y[y != round(y) | y < 0 | y >= units][1]
      abort_value("{.arg y} must hold class indices in 0..{units - 1} (the model has {units} outputs); found {bad}.",
                  call = call)
    }
  } else if (width != prod(units)) {
    abort_kind("shape", "{.arg y} has {width} values per sample; the model has {prod(units)} outputs.", call = call)
  }
}

# A batch source over R arrays (converted once to row-major float32); the
# shuffle order of each epoch is keyed by a seed drawn from R's generator.
array_source <- function(parts, names, batch_size, shuffle = FALSE, seed = if (shuffle) draw_seed() else 0) {
  with_core(cpp_array_source(parts, names, batch_size, shuffle, seed))
}

# The first n rows of an array (or rows from..to), keeping its other dims.
take_rows <- function(x, rows) {
  d <- dim(x)
  m <- matrix(x, nrow = d[1])[rows, , drop = FALSE]
  array(m, dim = c(length(rows), d[-1]))
}
