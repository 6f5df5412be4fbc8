#' Configure a model for training
#'
#' Sets the optimizer, the loss and the metrics. Strings are resolved as
#' Keras does (`"adam"`, `"sparse_categorical_crossentropy"`, `"accuracy"`).
#' The model is changed in place and returned invisibly, so it can be piped.
#'
#' @param object A model.
#' @param optimizer An optimizer object (see [optimizer_adam()]) or name.
#' @param loss A loss object (see [loss_sparse_categorical_crossentropy()]) or
#'   name, applied to every output; or, for a model of several outputs, a list
#'   of them in output order, or a named list by output name.
#' @param metrics A list of metric objects or names; for a model of several
#'   outputs a list with one entry (a list of metrics, or `NULL`) per output,
#'   or a named list by output name. Logs are named as Keras 3 names them:
#'   `loss` (the weighted total), `<output>_loss`, `<output>_<metric>`.
#' @param ... Must be empty: an unknown argument is an error (as in keras3).
#' @param loss_weights Weights of the outputs' losses in the total loss (a
#'   list or vector in output order, or named by output; default 1 each).
#' @param weighted_metrics Metrics (as `metrics`) weighted by the samples'
#'   weights (`sample_weight`, `class_weight`); those in `metrics` ignore
#'   them. A weighted metric whose name an earlier metric has logs as
#'   `weighted_<name>`, as in Keras 3.
#' @param run_eagerly,steps_per_execution Accepted for compatibility; the
#'   step loop always runs in C++.
#' @param jit_compile Recorded only: it names XLA in keras3. The step is
#'   compiled C++ (and a CUDA graph on GPUs) either way.
#' @param auto_scale_loss If `TRUE` (the default) and the model's dtype
#'   policy is `"mixed_float16"` (see [config_set_dtype_policy()]), the
#'   optimizer is wrapped in [optimizer_loss_scale()] (unless it is one), as
#'   in Keras 3.
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
  check_dots_empty(list(...), "compile", names(formals(compile.mirrored_model)))
  if (is.null(loss)) abort_value("{.arg loss} is required: give a loss object or name.")
  check_model_strategy(object)
  # Under "mixed_float16", a LossScaleOptimizer around it (R/optimizer-loss-scale.R).
  opt <- auto_loss_scale(object, as_optimizer(optimizer), check_bool(auto_scale_loss, "auto_scale_loss"))
  outputs <- resolve_outputs(object, loss, metrics, loss_weights, weighted_metrics)
  # A loss function given by name keeps it (Keras: fn.__name__), which
  # names it in .keras files.
  loss_expr <- substitute(loss)
  if (is.symbol(loss_expr) && length(outputs) == 1 && is_traced_target_fn(outputs[[1]]$loss) &&
      is.null(outputs[[1]]$loss$user)) {
    outputs[[1]]$loss$name <- as.character(loss_expr)
  }
  # Losses and metrics written in R are traced before the model changes, so
  # that one that cannot be traced leaves the model as it was.
  if (!is.null(object$graph())) outputs <- pretrace_outputs(object, outputs)
  object$optimizer <- opt
  object$compiled_outputs <- outputs
  # One output: the loss object and the metric list, as before; several: the
  # losses as given (a list or a named list, for the saved compile config).
  object$loss <- if (length(outputs) == 1) outputs[[1]]$loss
                 else stats::setNames(lapply(outputs, function(o) o$loss),
                                      if (is.list(loss) && !is.null(names(loss))) names(loss))
  object$compiled_metrics <- if (length(outputs) == 1) outputs[[1]]$metrics
                             else unlist(lapply(outputs, function(o) o$metrics), recursive = FALSE)
  object$loss_weights <- loss_weights
  object$jit_compile <- jit_compile
  opt$attach(object)
  object$precision_note_due <- TRUE
  if (!is.null(object$graph())) {
    compile_core(object)
  }
  invisible(object)
}

# Sends the compile settings to the core (resets the optimizer's state).
# `keep_state`: keep the optimizer's slots and iteration count (a traced
# loss traced again for targets of another shape, R/losses-custom.R).
compile_core <- function(model, call = sys.call(-1), keep_state = FALSE) {
  # A sequential model compiled before it was built learns its output's name now.
  if (length(model$compiled_outputs) == 1) model$compiled_outputs[[1]]$name <- model_output_names(model)[1]
  with_core(cpp_model_compile(model$ptr(), model$optimizer$core_spec(), outputs_core_spec(model, call),
                              model_frozen_nodes(model), keep_state))
  show_precision_note(model)  # R/mixed-precision.R
}

resolve_verbose <- function(verbose, call = sys.call(-1)) {
  if (identical(verbose, "auto")) {
    if (isTRUE(getOption("knitr.in.progress"))) return(2L)
    if (identical(Sys.getenv("TESTTHAT"), "true")) return(0L)
    return(1L)
  }
  # keras3 takes TRUE / FALSE as 1 / 0.
  if (is.logical(verbose) && length(verbose) == 1 && !is.na(verbose)) return(as.integer(verbose))
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
  if (is.null(dim(x))) dim(x) <- length(x)
  if (anyNA(x) || (is.double(x) && !all(is.finite(x)))) {
    # The first offending sample: its row (the first dimension).
    at <- which(!is.finite(x))[1]
    abort_value("{.arg {arg}} must not contain NA, NaN or Inf values; row {(at - 1) %% dim(x)[1] + 1} has {format(x[at])}.",
                call = call)
  }
  x
}

sample_shape <- function(x) dim(x)[-1]

# A batch source over R arrays (converted once to row-major float32); the
# shuffle order of each epoch is keyed by a seed drawn from R's generator.
# `shuffle`: FALSE, TRUE (all rows) or "batch" (rows within each batch, as
# Keras' shuffle = "batch").
array_source <- function(parts, names, batch_size, shuffle = FALSE,
                         seed = if (!isFALSE(shuffle)) draw_seed() else 0) {
  mode <- if (identical(shuffle, "batch")) "batch" else if (isTRUE(shuffle)) "rows" else "none"
  with_core(cpp_array_source(parts, names, batch_size, mode, seed))
}

# The first n rows of an array (or rows from..to), keeping its other dims.
take_rows <- function(x, rows) {
  d <- dim(x)
  m <- matrix(x, nrow = d[1])[rows, , drop = FALSE]
  array(m, dim = c(length(rows), d[-1]))
}
