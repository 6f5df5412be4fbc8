#' Train a model
#'
#' Runs `epochs` passes over the data. Each epoch is handed whole to the C++
#' core, which splits every global batch across the model's replicas,
#' all-reduces the gradients and applies one optimizer update; R is called
#' back only to draw the progress bar (at most every 0.05 s) and for
#' callbacks that define per-batch methods. Interrupting (Ctrl-C) stops at a
#' step boundary: the model keeps the weights of the last finished step.
#'
#' @param object A compiled model.
#' @param x Inputs: an array with samples along the first dimension.
#' @param y Targets: class indices (0-based) for sparse losses, else an array.
#' @param ... Unused.
#' @param batch_size Samples per global batch (default 32).
#' @param epochs Index of the last epoch to train.
#' @param callbacks A list of callbacks (see [callback_early_stopping()]).
#' @param validation_split Fraction of the samples, taken from the end of
#'   `x`/`y` before shuffling, held out for validation.
#' @param validation_data `list(x_val, y_val)`, evaluated after each epoch
#'   (wins over `validation_split`).
#' @param shuffle Whether to shuffle the training samples each epoch.
#' @param class_weight,sample_weight Not supported yet (must be `NULL`).
#' @param initial_epoch Epoch to start at (1-based, as in keras3), e.g. to
#'   resume training.
#' @param steps_per_epoch Batches per epoch (default: all of them).
#' @param validation_steps Batches of validation data per evaluation.
#' @param validation_batch_size Batch size of validation (default `batch_size`).
#' @param validation_freq Validate every `validation_freq` epochs, or on the
#'   epochs listed.
#' @param verbose 0 (silent), 1 (progress bar), 2 (one line per epoch), or
#'   `"auto"`: 2 in knitr, 0 under testthat, else 1.
#' @param view_metrics Unused.
#' @return A `keras_training_history` (invisibly) with `params` and the
#'   per-epoch `metrics`; `plot()` it.
#' @family training functions
#' @seealso [compile.mirrored_model()], [evaluate.mirrored_model()],
#'   [predict.mirrored_model()]
#' @examples
#' set_random_seed(1)
#' x <- matrix(runif(200), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |>
#'   layer_dense(units = 8, activation = "relu") |>
#'   layer_dense(units = 2)
#' model |> compile(optimizer = optimizer_adam(0.01), metrics = "accuracy",
#'                  loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
#' history <- model |> fit(x, y, epochs = 3, verbose = 2)
#' history
#' @importFrom generics fit
#' @export
fit.mirrored_model <- function(object, x = NULL, y = NULL, ..., batch_size = NULL, epochs = 1L,
                               callbacks = NULL, validation_split = 0, validation_data = NULL,
                               shuffle = TRUE, class_weight = NULL, sample_weight = NULL,
                               initial_epoch = 1L, steps_per_epoch = NULL, validation_steps = NULL,
                               validation_batch_size = NULL, validation_freq = 1L,
                               verbose = getOption("keras.verbose", default = "auto"),
                               view_metrics = getOption("keras.view_metrics", default = "auto")) {
  model <- object
  require_compiled(model)
  check_model_strategy(model)
  check_unsupported(class_weight = class_weight, sample_weight = sample_weight)
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  epochs <- check_int(epochs, "epochs", min = 0)
  initial_epoch <- check_int(initial_epoch, "initial_epoch", min = 1)
  validation_split <- check_num(validation_split, "validation_split", min = 0, max = 1, max_open = TRUE)
  check_bool(shuffle, "shuffle")
  steps_per_epoch <- check_int(steps_per_epoch, "steps_per_epoch", min = 1, null_ok = TRUE)
  validation_steps <- check_int(validation_steps, "validation_steps", min = 1, null_ok = TRUE)
  validation_batch_size <- check_int(validation_batch_size %||% batch_size, "validation_batch_size", min = 1)
  if (!is.numeric(validation_freq) || length(validation_freq) < 1 || anyNA(validation_freq) ||
      any(validation_freq < 1)) {
    abort_value("{.arg validation_freq} must be a positive whole number or a vector of epochs, not {describe(validation_freq)}.")
  }
  verbose <- resolve_verbose(verbose)
  if (is.null(x) || is.null(y)) abort_value("{.arg x} and {.arg y} are required.")
  x <- as_sample_array(x, "x")
  y <- as_sample_array(y, "y")
  check_inputs(model, x)
  check_loss_output(model)
  check_targets(model, y, dim(x)[1])
  val <- NULL
  if (!is.null(validation_data)) {
    val <- validation_arrays(model, validation_data)
  } else if (validation_split > 0) {
    n <- dim(x)[1]
    k <- floor(n * (1 - validation_split))
    if (k < 1 || k >= n) {
      abort_value("{.arg validation_split} = {validation_split} leaves no samples for training or validation ({n} samples).")
    }
    val <- list(x = take_rows(x, (k + 1):n), y = take_rows(y, (k + 1):n))
    x <- take_rows(x, seq_len(k))
    y <- take_rows(y, seq_len(k))
  }
  train <- array_source(list(x, y), c("x", "y"), batch_size, shuffle = shuffle)
  val_data <- if (!is.null(val)) {
    array_source(list(val$x, val$y), c("validation x", "validation y"), validation_batch_size)
  }
  steps <- steps_per_epoch %||% ceiling(dim(x)[1] / batch_size)

  history <- callback_history()
  cbl <- callback_list(c(as_callback_list(callbacks), list(history, callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = epochs, steps = steps))
  hooks <- loop_hooks(cbl, "train")
  model$stop_training <- FALSE
  logs <- cbl$on_train_begin(list())
  for (epoch in seq_len(max(0L, epochs - initial_epoch + 1L)) + initial_epoch - 1L) {
    cbl$on_epoch_begin(epoch, list())
    res <- with_core(cpp_fit_epoch(model$ptr(), train, epoch - 1, steps_per_epoch %||% -1,
                                   hooks$begin, hooks$end, hooks$progress, 0.05))
    if (res$interrupted) {
      model$history <- history$history()
      signal_interrupt()
    }
    logs <- as.list(res$logs)
    if (!is.null(val_data) && validation_due(epoch, validation_freq)) {
      vlogs <- run_evaluation(model, val_data, validation_steps %||% -1, cbl)
      logs[paste0("val_", names(vlogs))] <- vlogs
    }
    logs <- cbl$on_epoch_end(epoch, logs)
    if (isTRUE(model$stop_training)) break
  }
  cbl$on_train_end(logs)
  model$history <- history$history()
  invisible(model$history)
}

#' Evaluate a model
#'
#' Computes the loss and the metrics on data, in inference mode (dropout
#' off), on all replicas of the model.
#'
#' @inheritParams fit.mirrored_model
#' @param steps Batches to evaluate (default: all).
#' @param sample_weight Not supported yet (must be `NULL`).
#' @return A named list: `loss` and one entry per metric.
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' x <- matrix(runif(40), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 2)
#' model |> compile(optimizer = "adam", metrics = "accuracy",
#'                  loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
#' model |> evaluate(x, y, verbose = 0)
#' @export
evaluate.mirrored_model <- function(object, x = NULL, y = NULL, ..., batch_size = NULL,
                                    verbose = getOption("keras.verbose", default = "auto"),
                                    sample_weight = NULL, steps = NULL, callbacks = NULL) {
  model <- object
  require_compiled(model)
  check_model_strategy(model)
  check_unsupported(sample_weight = sample_weight)
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  steps <- check_int(steps, "steps", min = 1, null_ok = TRUE)
  verbose <- resolve_verbose(verbose)
  if (is.null(x) || is.null(y)) abort_value("{.arg x} and {.arg y} are required.")
  x <- as_sample_array(x, "x")
  y <- as_sample_array(y, "y")
  check_inputs(model, x)
  check_loss_output(model)
  check_targets(model, y, dim(x)[1])
  data <- array_source(list(x, y), c("x", "y"), batch_size)
  nsteps <- steps %||% ceiling(dim(x)[1] / batch_size)
  cbl <- callback_list(c(as_callback_list(callbacks), list(callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = 1L, steps = nsteps))
  run_evaluation(model, data, steps %||% -1, cbl)
}

#' Generate predictions
#'
#' Runs the model forward in inference mode on all replicas and returns the
#' outputs in the order of the samples.
#'
#' @inheritParams fit.mirrored_model
#' @param object A model.
#' @param x Inputs: an array with samples along the first dimension.
#' @param steps Batches to predict (default: all).
#' @return A matrix with one row per sample (an array for outputs of rank > 1).
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 2)
#' predict(model, matrix(1:6, nrow = 2), verbose = 0)
#' @importFrom stats predict
#' @export
predict.mirrored_model <- function(object, x, ..., batch_size = NULL,
                                   verbose = getOption("keras.verbose", default = "auto"),
                                   steps = NULL, callbacks = NULL) {
  model <- object
  check_model_strategy(model)
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  steps <- check_int(steps, "steps", min = 1, null_ok = TRUE)
  verbose <- resolve_verbose(verbose)
  if (missing(x) || is.null(x)) abort_value("{.arg x} is required.")
  x <- as_sample_array(x, "x")
  check_inputs(model, x)
  data <- array_source(list(x), "x", batch_size)
  nsteps <- steps %||% ceiling(dim(x)[1] / batch_size)
  cbl <- callback_list(c(as_callback_list(callbacks), list(callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = 1L, steps = nsteps))
  hooks <- loop_hooks(cbl, "predict")
  cbl$on_predict_begin(list())
  out <- with_core(cpp_predict(model$ptr(), data, steps %||% -1, hooks$progress, 0.05))
  if (is.null(out)) signal_interrupt()
  cbl$on_predict_end(list())
  out
}

run_evaluation <- function(model, data, max_batches, cbl) {
  hooks <- loop_hooks(cbl, "test")
  cbl$on_test_begin(list())
  res <- with_core(cpp_evaluate(model$ptr(), data, max_batches, hooks$begin, hooks$end,
                                hooks$progress, 0.05))
  if (res$interrupted) signal_interrupt()
  logs <- as.list(res$logs)
  cbl$on_test_end(logs)
  logs
}

# The R functions the C++ loop may call: per-batch callbacks only when a
# callback defines them, progress only when a progress bar draws.
loop_hooks <- function(cbl, kind) {
  begin <- end <- progress <- NULL
  if (kind != "predict" && cbl$wants_batch_events(kind)) {
    on_begin <- cbl[[paste0("on_", kind, "_batch_begin")]]
    on_end <- cbl[[paste0("on_", kind, "_batch_end")]]
    begin <- function(batch) on_begin(batch + 1, list())
    end <- function(batch, logs) on_end(batch + 1, as.list(logs))
  }
  if (cbl$wants_progress_updates()) progress <- function(done, logs) cbl$update(done, as.list(logs))
  list(begin = begin, end = end, progress = progress)
}

validation_due <- function(epoch, freq) {
  if (length(freq) == 1) epoch %% freq == 0 else epoch %in% freq
}

validation_arrays <- function(model, validation_data, call = sys.call(-1)) {
  if (!is.list(validation_data) || length(validation_data) < 2) {
    abort_value("{.arg validation_data} must be {.code list(x_val, y_val)}, not {describe(validation_data)}.",
                call = call)
  }
  vx <- as_sample_array(validation_data[[1]], "validation_data[[1]]", call = call)
  vy <- as_sample_array(validation_data[[2]], "validation_data[[2]]", call = call)
  check_inputs(model, vx, call = call)
  check_targets(model, vy, dim(vx)[1], call = call)
  list(x = vx, y = vy)
}

as_callback_list <- function(callbacks) {
  if (is.null(callbacks)) return(list())
  if (inherits(callbacks, "R6")) return(list(callbacks))
  callbacks
}

require_compiled <- function(model, call = sys.call(-1)) {
  if (!inherits(model, "mirrored_model")) abort_value("{.arg object} must be a model, not {describe(model)}.", call = call)
  if (is.null(model$optimizer)) {
    abort_value("You must call {.fn compile} before training or evaluating model {.val {model$name}}.", call = call)
  }
}

# After a clean stop at a step boundary: re-raise the user's interrupt.
signal_interrupt <- function() {
  cond <- structure(class = c("interrupt", "condition"),
                    list(message = "training interrupted; the model keeps the weights of the last finished step",
                         call = NULL))
  signalCondition(cond)
  invokeRestart("abort")
}
