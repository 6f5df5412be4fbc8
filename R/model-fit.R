#' Train a model
#'
#' Runs `epochs` passes over the data. Each epoch is handed whole to the C++
#' core, which splits every global batch across the model's replicas,
#' all-reduces the gradients and applies one optimizer update; R is called
#' back only to draw the progress bar (at most every 0.05 s) and for
#' callbacks that define per-batch methods. Interrupting (Ctrl-C) stops at a
#' step boundary: the model keeps the weights of the last finished step. A
#' step still running 5 seconds after the interrupt (one stuck in a collective
#' or on a GPU) is stopped with a `mirrored_interrupted_error`.
#'
#' @param object A compiled model.
#' @param x Inputs: an array with samples along the first dimension (for a
#'   model of several inputs, a list of arrays in input order or a list
#'   named by the inputs' names), or a dataset (see [tensor_slices_dataset()])
#'   whose elements are batches `list(x, y)` or `list(x, y, sample_weight)`
#'   (several inputs or outputs: `list(list(a, b), list(y1, y2))`, or those
#'   arrays as one flat list; sample weights as one array for all outputs or
#'   one per output); then `y`, `batch_size` and `sample_weight` must be
#'   `NULL`, `shuffle` is ignored (shuffle the dataset) and `validation_data`
#'   may be a dataset too. A NaN or Inf in a batch is an error naming the
#'   component, the batch and the row.
#' @param y Targets: class indices (0-based) for sparse losses, else an
#'   array; for a model of several outputs a list of them in output order or
#'   named by output.
#' @param ... Must be empty: an unknown argument is an error (as in keras3,
#'   whose Python methods reject unknown keywords).
#' @param batch_size Samples per global batch (default 32).
#' @param epochs Index of the last epoch to train.
#' @param callbacks A list of callbacks (see [callback_early_stopping()]).
#' @param validation_split Fraction of the samples, taken from the end of
#'   `x`/`y` before shuffling, held out for validation.
#' @param validation_data `list(x_val, y_val)`, `list(x_val, y_val,
#'   val_sample_weight)` or a dataset, evaluated after each epoch (wins over
#'   `validation_split`).
#' @param shuffle Whether to shuffle the training samples each epoch:
#'   `TRUE`, `FALSE`, or `"batch"` (Keras' option: batches of consecutive
#'   samples, in order, each one's samples shuffled among themselves).
#' @param class_weight Weights of the classes, applied to the training loss
#'   (not to validation): a named list (or named numeric vector) mapping
#'   0-based class indices to weights, e.g. `list("0" = 1, "1" = 5)`; an
#'   unnamed numeric vector gives classes 0, 1, ... in order. Each sample
#'   weighs its class's weight (its label, or the argmax of a one-hot or
#'   probability target); classes not named weigh 1. Only for models of one
#'   output, and not together with `sample_weight`.
#' @param sample_weight Weights of the training samples: a numeric vector
#'   with one weight per sample (for a model of several outputs, one vector
#'   for all outputs or a list of one per output). The loss of a batch is
#'   `sum(w * loss) / rows` (Keras' `"sum_over_batch_size"`), on any number
#'   of replicas. For an output of rank > 2 per sample (a sequence, an
#'   image), losses and metrics reduce the last axis only and the batch's
#'   loss is divided by the number of loss values (samples x positions), as
#'   in Keras; the weights may then also be an array of one weight per
#'   position (dimensions n x the output's shape without its last axis,
#'   Keras' "temporal" weights), and a vector of one weight per sample weighs
#'   each of the sample's positions (Keras wants it as n x 1 there). `validation_split` holds out the weights of the held-out
#'   samples with them. Not with a dataset: put the weights in its elements.
#' @param initial_epoch Epoch to start at (1-based, as in keras3), e.g. to
#'   resume training.
#' @param steps_per_epoch Batches per epoch (default: all of them).
#' @param validation_steps Batches of validation data per evaluation.
#' @param validation_batch_size Batch size of validation (default `batch_size`).
#' @param validation_freq Validate every `validation_freq` epochs, or on the
#'   epochs listed.
#' @param verbose 0 (silent), 1 (progress bar), 2 (one line per epoch, and
#'   after training one line saying where the steps' time went: compute,
#'   all-reduce, input and host shares, peak memory; see
#'   [callback_device_monitor()]), or `"auto"`: 2 in knitr, 0 under
#'   testthat, else 1.
#' @param view_metrics Unused.
#' @return A `keras_training_history` (invisibly) with `params` and the
#'   per-epoch `metrics`; `plot()` it.
#' @section Input on the device:
#' In-memory arrays `x` and `y` (and `sample_weight`) whose total size fits
#' `options(mirrored.resident_bytes)` (`NULL`, the default: 1 GiB; on a GPU
#' the copies of the replicas sharing it also at most half of its free
#' memory) are copied to each replica's device once per call, and each step
#' gathers its rows there (the same rows, in the same shuffled order, as
#' copying them from R's memory); larger arrays are streamed. The validation
#' data become resident beside the training data only when both fit;
#' otherwise they are streamed, and nothing resident is dropped before the
#' call returns. `options(mirrored.resident_input = FALSE)` streams them
#' always. Batches that are streamed to a GPU are uploaded two steps ahead on
#' a second CUDA stream while the current step computes;
#' `options(mirrored.device_input = FALSE)` uploads each batch at the start
#' of its step instead (`TRUE` uses the same protocol on CPU replicas, where
#' it only adds a copy). These options are read by each `fit()` and
#' `evaluate()` and change no result: the same weights and metrics, and a
#' malformed batch fails at its own step, after the steps before it.
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
#' # Weighting the samples, or the classes (here the same weights):
#' model |> fit(x, y, sample_weight = ifelse(y == 1, 2, 1), epochs = 1, verbose = 0)
#' model |> fit(x, y, class_weight = list("0" = 1, "1" = 2), epochs = 1, verbose = 0)
#' @importFrom generics fit
#' @export
fit.mirrored_model <- function(object, x = NULL, y = NULL, ..., batch_size = NULL, epochs = 1L,
                               callbacks = NULL, validation_split = 0, validation_data = NULL,
                               shuffle = TRUE, class_weight = NULL, sample_weight = NULL,
                               initial_epoch = 1L, steps_per_epoch = NULL, validation_steps = NULL,
                               validation_batch_size = NULL, validation_freq = 1L,
                               verbose = getOption("keras.verbose", default = "auto"),
                               view_metrics = getOption("keras.view_metrics", default = "auto")) {
  check_dots_empty(list(...), "fit", names(formals(fit.mirrored_model)))
  model <- object
  require_compiled(model)
  check_model_strategy(model)
  if (is_dataset(x)) check_dataset_call(batch_size, y, "x", sample_weight)
  if (!is.null(class_weight) && !is.null(sample_weight)) {
    abort_value("{.arg class_weight} and {.arg sample_weight} can not be used at the same time; give one of them.")
  }
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  epochs <- check_int(epochs, "epochs", min = 0)
  initial_epoch <- check_int(initial_epoch, "initial_epoch", min = 1)
  validation_split <- check_num(validation_split, "validation_split", min = 0, max = 1, max_open = TRUE)
  shuffle <- check_shuffle(shuffle)
  steps_per_epoch <- check_int(steps_per_epoch, "steps_per_epoch", min = 1, null_ok = TRUE)
  validation_steps <- check_int(validation_steps, "validation_steps", min = 1, null_ok = TRUE)
  validation_batch_size <- check_int(validation_batch_size %||% batch_size, "validation_batch_size", min = 1)
  if (!is.numeric(validation_freq) || length(validation_freq) < 1 || anyNA(validation_freq) ||
      any(validation_freq < 1)) {
    abort_value("{.arg validation_freq} must be a positive whole number or a vector of epochs, not {describe(validation_freq)}.")
  }
  verbose <- resolve_verbose(verbose)
  # validation_data wins over validation_split, which then holds nothing out.
  data <- fit_training_data(model, x, y, batch_size, shuffle, steps_per_epoch,
                            if (is.null(validation_data)) validation_split else 0,
                            sample_weight, class_weight)
  train <- data$source
  steps <- data$steps
  val_data <- fit_validation_data(model, validation_data %||% data$held_out, validation_batch_size,
                                  validation_steps)

  apply_cuda_graphs_option(model)  # options(mirrored.cuda_graphs) (R/cuda-graphs.R)
  apply_device_input_option(model)  # options(mirrored.device_input) (R/device-input.R)
  on.exit(release_resident_input(model), add = TRUE)
  history <- callback_history()
  cbl <- callback_list(c(as_callback_list(callbacks), list(history, callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = epochs, steps = steps))
  hooks <- loop_hooks(cbl, "train")
  model$stop_training <- FALSE
  logs <- cbl$on_train_begin(list())
  # However fit() ends from here (an interrupt raised while R code runs,
  # such as verbose = 1's progress bar or a callback; an error in a later
  # step), the model keeps the history of the epochs finished so far, as
  # Keras' model.history does.
  on.exit(model$history <- history$history(), add = TRUE)
  # Continuing a saved run (load_model(), callback_backup_and_restore()):
  # its epoch, data order and the batches of that epoch already done.
  pos <- resume_position(model, initial_epoch, data$seed, steps)
  initial_epoch <- pos$initial_epoch
  if (!is.null(data$seed) && !identical(pos$data_seed, data$seed)) train <- data$remake(pos$data_seed)
  note_fit_start(model, pos$data_seed)
  monitored <- NULL
  quit_job_on_interrupt(model, "fit()", {
    for (epoch in seq_len(max(0L, epochs - initial_epoch + 1L)) + initial_epoch - 1L) {
      cbl$on_epoch_begin(epoch, list())
      skip <- if (epoch == initial_epoch) pos$skip else 0L
      src <- if (skip > 0) with_core(cpp_skip_source(train, epoch - 1, skip)) else train
      ehooks <- if (skip > 0) loop_hooks(cbl, "train", offset = skip) else hooks
      res <- with_core(cpp_fit_epoch(model$ptr(), src, epoch - 1,
                                     if (is.null(steps_per_epoch)) -1 else steps_per_epoch - skip,
                                     ehooks$begin, ehooks$end, ehooks$progress, 0.05))
      if (res$interrupted) {
        model$history <- history$history()
        signal_interrupt()
      }
      note_epoch_done(model, epoch)
      # verbose = 2's summary after training (R/device-monitor.R).
      if (verbose == 2L) monitored <- rbind(monitored, device_epoch_report(model, epoch))
      logs <- as.list(res$logs)
      if (!is.null(val_data) && validation_due(epoch, validation_freq)) {
        vlogs <- run_evaluation(model, val_data, validation_steps %||% -1, cbl)
        logs[paste0("val_", names(vlogs))] <- vlogs
      }
      logs <- cbl$on_epoch_end(epoch, logs)
      if (isTRUE(model$stop_training)) break
    }
  })
  if (epochs > 0) finalize_optimizer(model)  # EMA weights (R/optimizers-common.R)
  cbl$on_train_end(logs)
  if (verbose == 2L && !is.null(line <- device_summary_line(monitored))) cat(line, "\n", sep = "")
  # Nested model objects receive what the outer model learned.
  sync_nested_weights(model)
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
#' @param sample_weight Weights of the samples (one per sample; for a model
#'   of several outputs one vector for all or a list of one per output; for
#'   an output of rank > 2, also one per position, as in [fit()]): the loss
#'   is `sum(w * loss) / samples` (samples x positions for an output of
#'   rank above 2). Not with a dataset: put the weights
#'   in its elements (`list(x, y, sample_weight)`).
#' @return A named list: `loss` and one entry per metric; for a model of
#'   several outputs Keras 3's keys, sorted: `loss` (the weighted total),
#'   `<output>_loss` and `<output>_<metric>`.
#' @section Input on the device:
#' As in [fit.mirrored_model()]: `options(mirrored.resident_input)`,
#' `options(mirrored.resident_bytes)` and `options(mirrored.device_input)`
#' choose how batches reach the devices (arrays resident on the device,
#' batches uploaded ahead, or each batch at its step); the results are the
#' same, and a batch of no rows is skipped on every path.
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' x <- matrix(runif(40), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 2)
#' model |> compile(optimizer = "adam", metrics = "accuracy",
#'                  loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
#' model |> evaluate(x, y, verbose = 0)
#' model |> evaluate(x, y, sample_weight = runif(20), verbose = 0)
#' @export
evaluate.mirrored_model <- function(object, x = NULL, y = NULL, ..., batch_size = NULL,
                                    verbose = getOption("keras.verbose", default = "auto"),
                                    sample_weight = NULL, steps = NULL, callbacks = NULL) {
  check_dots_empty(list(...), "evaluate", names(formals(evaluate.mirrored_model)))
  model <- object
  require_compiled(model)
  check_model_strategy(model)
  if (is_dataset(x)) check_dataset_call(batch_size, y, "x", sample_weight)
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  steps <- check_int(steps, "steps", min = 1, null_ok = TRUE)
  verbose <- resolve_verbose(verbose)
  input <- inference_data(model, x, y, batch_size, steps, targets = TRUE, sample_weight = sample_weight)
  data <- input[[1]]
  nsteps <- input[[2]]
  cbl <- callback_list(c(as_callback_list(callbacks), list(callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = 1L, steps = nsteps))
  apply_device_input_option(model)  # options(mirrored.device_input) (R/device-input.R)
  on.exit(release_resident_input(model), add = TRUE)
  run_evaluation(model, data, steps %||% -1, cbl)
}

#' Generate predictions
#'
#' Runs the model forward in inference mode on all replicas and returns the
#' outputs in the order of the samples.
#'
#' @inheritParams fit.mirrored_model
#' @param object A model.
#' @param x Inputs: an array with samples along the first dimension, or a
#'   dataset of batches `list(x)` or `list(x, y)` (`y` is ignored).
#' @param steps Batches to predict (default: all).
#' @return A matrix with one row per sample (an array for outputs of rank >
#'   1); for a model of several outputs a list of them (named when
#'   [keras_model()] was given a named list of outputs).
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
  check_dots_empty(list(...), "predict", names(formals(predict.mirrored_model)))
  model <- object
  check_model_strategy(model)
  if (!missing(x) && is_dataset(x)) check_dataset_call(batch_size, NULL, "x")
  batch_size <- check_int(batch_size %||% 32L, "batch_size", min = 1)
  steps <- check_int(steps, "steps", min = 1, null_ok = TRUE)
  verbose <- resolve_verbose(verbose)
  input <- inference_data(model, if (missing(x)) NULL else x, NULL, batch_size, steps, targets = FALSE)
  data <- input[[1]]
  nsteps <- input[[2]]
  cbl <- callback_list(c(as_callback_list(callbacks), list(callback_progbar_logger())), model,
                       list(verbose = verbose, epochs = 1L, steps = nsteps))
  hooks <- loop_hooks(cbl, "predict")
  cbl$on_predict_begin(list())
  out <- with_core(cpp_predict(model$ptr(), data, steps %||% -1, hooks$begin, hooks$end, hooks$progress, 0.05))
  if (is.null(out)) signal_interrupt()
  cbl$on_predict_end(list())
  predict_result(model, out)
}

# The training batches of fit(): a source, the steps of an epoch, and for
# arrays the data-order seed (and how to rebuild the source with another one,
# for a resumed run) plus the samples validation_split held out.
fit_training_data <- function(model, x, y, batch_size, shuffle, steps_per_epoch, validation_split,
                              sample_weight = NULL, class_weight = NULL, call = sys.call(-1)) {
  if (is_dataset(x)) {
    if (validation_split > 0) {
      abort_value("{.arg validation_split} is not supported when {.arg x} is a dataset; give {.arg validation_data}.",
                  call = call)
    }
    source <- dataset_batch_source(model, x, "x", targets = TRUE, continue = !is.null(steps_per_epoch),
                                   call = call)
    source <- class_weight_source(model, source, class_weight_table(model, class_weight, call = call), "x",
                                  call = call)
    return(list(source = source, steps = steps_per_epoch %||% source_steps(source, x, "x", what = "steps_per_epoch"),
                seed = NULL, held_out = NULL))
  }
  if (is.null(x) || is.null(y)) abort_value("{.arg x} and {.arg y} are required.", call = call)
  xs <- as_input_arrays(model, x, "x", call = call)
  check_inputs(model, xs, call = call)
  ys <- as_target_arrays(model, y, "y", call = call)
  n <- dim(xs[[1]])[1]
  check_targets(model, ys, n, call = call)
  ws <- as_sample_weights(model, sample_weight, n, call = call)
  table <- class_weight_table(model, class_weight, call = call)
  held_out <- NULL
  if (validation_split > 0) {
    k <- floor(n * (1 - validation_split))
    if (k < 1 || k >= n) {
      abort_value("{.arg validation_split} = {validation_split} leaves no samples for training or validation ({n} samples).",
                  call = call)
    }
    held_out <- structure(list(xs = take_rows_all(xs, (k + 1):n), ys = take_rows_all(ys, (k + 1):n),
                               ws = if (!is.null(ws)) take_weights(ws, (k + 1):n)),
                          class = "mirrored_held_out")
    xs <- take_rows_all(xs, seq_len(k))
    ys <- take_rows_all(ys, seq_len(k))
    if (!is.null(ws)) ws <- take_weights(ws, seq_len(k))
    n <- k
  }
  d <- data_parts(xs, ys, ws)
  remake <- function(seed) {
    class_weight_source(model, array_source(d$parts, d$labels, batch_size, shuffle = shuffle, seed = seed),
                        table, "x", call = call)
  }
  seed <- if (!isFALSE(shuffle)) draw_seed() else 0
  list(source = remake(seed), steps = steps_per_epoch %||% ceiling(n / batch_size), seed = seed,
       remake = remake, held_out = held_out)
}

# The validation batches: a dataset, or arrays list(x_val, y_val) (given, or
# held out by validation_split); NULL without validation.
fit_validation_data <- function(model, validation_data, batch_size, validation_steps, call = sys.call(-1)) {
  if (is.null(validation_data)) return(NULL)
  if (is_dataset(validation_data)) {
    return(dataset_batch_source(model, validation_data, "validation_data", targets = TRUE,
                                continue = !is.null(validation_steps), call = call))
  }
  val <- if (inherits(validation_data, "mirrored_held_out")) validation_data else validation_arrays(model, validation_data, call = call)
  d <- data_parts(val$xs, val$ys, val$ws)
  array_source(d$parts, d$labels, batch_size)
}

# The batches of evaluate() (targets = TRUE) or predict(): a source and the
# number of steps for the progress bar.
inference_data <- function(model, x, y, batch_size, steps, targets, sample_weight = NULL, call = sys.call(-1)) {
  if (is_dataset(x)) {
    source <- dataset_batch_source(model, x, "x", targets = targets, call = call)
    return(list(source, steps %||% source_steps(source, x, "x", what = "steps", call = call)))
  }
  if (is.null(x) || (targets && is.null(y))) {
    abort_value(if (targets) "{.arg x} and {.arg y} are required." else "{.arg x} is required.", call = call)
  }
  xs <- as_input_arrays(model, x, "x", call = call)
  check_inputs(model, xs, call = call)
  ys <- ws <- NULL
  if (targets) {
    ys <- as_target_arrays(model, y, "y", call = call)
    check_targets(model, ys, dim(xs[[1]])[1], call = call)
    ws <- as_sample_weights(model, sample_weight, dim(xs[[1]])[1], call = call)
  }
  d <- data_parts(xs, ys, ws)
  list(array_source(d$parts, d$labels, batch_size), steps %||% ceiling(dim(xs[[1]])[1] / batch_size))
}

run_evaluation <- function(model, data, max_batches, cbl, call = sys.call(-1)) {
  hooks <- loop_hooks(cbl, "test")
  cbl$on_test_begin(list())
  res <- quit_job_on_interrupt(model, "evaluate()", {
    res <- with_core(cpp_evaluate(model$ptr(), data, max_batches, hooks$begin, hooks$end, hooks$progress, 0.05),
                     call = call)
    if (res$interrupted) signal_interrupt()
    res
  })
  logs <- as.list(res$logs)
  cbl$on_test_end(logs)
  logs
}

# The R functions the C++ loop may call: per-batch callbacks only when a
# callback defines them, progress only when a progress bar draws.
# `offset`: batches of the epoch skipped before the loop starts (a resumed
# epoch), so that callbacks and the progress bar see the epoch's numbering.
# In training, the hooks return TRUE once a callback set the model's
# `stop_training`: the C++ loop then ends the epoch after that step, as Keras
# does. callback_terminate_on_nan() watches the logs at each progress report
# (at most every 0.05 s and at the epoch's end), when the loop reads the
# metrics anyway, so it costs no per-step device sync.
loop_hooks <- function(cbl, kind, offset = 0L) {
  begin <- end <- progress <- NULL
  training <- kind == "train"
  stopping <- function() training && isTRUE(cbl$model$stop_training)
  if (kind == "predict" && cbl$wants_batch_events(kind)) {
    # keras3's on_predict_batch_end(batch, logs): logs$outputs holds the
    # batch's predictions (a list of them for a model of several outputs).
    begin <- function(batch) cbl$on_predict_batch_begin(batch + 1, empty_logs())
    end <- function(batch, logs) {
      # The core hands the batch's outputs as the logs.
      cbl$on_predict_batch_end(batch + 1, list(outputs = if (length(logs) == 1) logs[[1]] else logs))
      FALSE
    }
  } else if (kind != "predict" && cbl$wants_batch_events(kind)) {
    on_begin <- cbl[[paste0("on_", kind, "_batch_begin")]]
    on_end <- cbl[[paste0("on_", kind, "_batch_end")]]
    begin <- function(batch) on_begin(batch + 1 + offset, list())
    end <- function(batch, logs) {
      on_end(batch + 1 + offset, as.list(logs))
      stopping()
    }
  }
  watchers <- if (training) Filter(function(cb) inherits(cb, "TerminateOnNaN"), cbl$callbacks) else list()
  bar <- cbl$wants_progress_updates()
  if (bar || length(watchers)) {
    progress <- function(done, logs) {
      logs <- as.list(logs)
      if (bar) cbl$update(done + offset, logs)
      for (cb in watchers) cb$check_logs(done + offset, logs)
      stopping()
    }
  }
  list(begin = begin, end = end, progress = progress)
}

validation_due <- function(epoch, freq) {
  if (length(freq) == 1) epoch %% freq == 0 else epoch %in% freq
}

validation_arrays <- function(model, validation_data, call = sys.call(-1)) {
  if (!is.list(validation_data) || !(length(validation_data) %in% 2:3)) {
    abort_value("{.arg validation_data} must be {.code list(x_val, y_val)} or {.code list(x_val, y_val, val_sample_weight)}, not {describe(validation_data)}.",
                call = call)
  }
  xs <- as_input_arrays(model, validation_data[[1]], "validation_data[[1]]", call = call)
  check_inputs(model, xs, call = call)
  ys <- as_target_arrays(model, validation_data[[2]], "validation_data[[2]]", call = call)
  check_targets(model, ys, dim(xs[[1]])[1], call = call, retrace = FALSE)
  ws <- if (length(validation_data) == 3) {
    as_sample_weights(model, validation_data[[3]], dim(xs[[1]])[1], "validation_data[[3]]", call = call)
  }
  list(xs = xs, ys = ys, ws = ws)
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

# ---- datasets as fit()/evaluate()/predict() input ---------------------------

# keras3: a dataset carries its own batches (and targets).
check_dataset_call <- function(batch_size, y, arg, sample_weight = NULL, call = sys.call(-1)) {
  if (!is.null(batch_size)) {
    abort_value("{.arg batch_size} can not be specified when {.arg {arg}} is a dataset: batch the dataset with {.fn dataset_batch}.",
                call = call)
  }
  if (!is.null(y)) {
    abort_value("{.arg y} must be {.code NULL} when {.arg {arg}} is a dataset: the targets come from its elements ({.code list(x, y)}).",
                call = call)
  }
  if (!is.null(sample_weight)) {
    abort_value("{.arg sample_weight} must be {.code NULL} when {.arg {arg}} is a dataset: the weights come from its elements ({.code list(x, y, sample_weight)}).",
                call = call)
  }
}

# The batch source over a dataset. Elements are (x, y) for training and
# evaluation, (x) or (x, y) for predict (y ignored); checked here when the
# structure is known before iterating, else by the core on the first batch.
dataset_batch_source <- function(model, ds, arg, targets, continue = FALSE, call = sys.call(-1)) {
  check_element_dataset(ds, call_name(call), call)
  info <- dataset_info(ds)
  n <- info$components
  n_in <- if (is.null(model$graph())) 1L else length(model$graph()$inputs)
  n_out <- model_output_count(model)
  check_dataset_structure(model, ds$structure, n_in, n_out, arg, targets, call)
  if (!is.na(n)) {
    want_n <- n_in + n_out
    # Sample weights may follow the targets: one array, or one per output.
    with_weights <- unique(c(want_n, want_n + 1L, want_n + n_out))
    form <- if (n_in + n_out == 2) "{.code list(x, y)} or {.code list(x, y, sample_weight)}" else
      paste0("{n_in} input{?s} then {n_out} target{?s} (a flat list of {want_n} arrays), optionally followed by sample weights")
    if (targets && !(n %in% with_weights)) {
      abort_value(paste0("The elements of {.arg {arg}} must be ", form, " (features and targets); they have {n} component{?s}."),
                  call = call)
    }
    if (!targets && !(n %in% c(n_in, with_weights))) {
      abort_value("The elements of {.arg {arg}} must hold the model's {n_in} input{?s} (and optionally its {n_out} target{?s}); they have {n} component{?s}.",
                  call = call)
    }
    lead <- vapply(info$shapes, function(s) if (length(s)) s[1] else NA_real_, numeric(1))
    if (anyNA(lead) || length(unique(lead[lead >= 0])) > 1) {
      abort_kind("shape", "The elements of {.arg {arg}} are not batches: use {.fn dataset_batch} first.", call = call)
    }
  }
  if (inherits(model, "mirrored_sequential") && is.null(model$graph())) {
    if (is.na(n)) {
      abort_value("The model is not built and the element shapes of {.arg {arg}} are only known by iterating: give the model an {.arg input_shape}.",
                  call = call)
    }
    model$build(info$shapes[[1]][-1])
  }
  if (!is.na(n)) {
    g <- model$graph()
    names <- model_input_names(model)
    if (targets) {  # traced losses and metrics take the targets' shape (R/losses-custom.R)
      ys <- lapply(info$shapes[n_in + seq_len(n_out)], function(s) if (length(s) && all(s[-1] >= 0)) s[-1])
      ensure_target_shapes(model, ys, call = call)
    }
    for (k in seq_len(n_in)) {
      want <- g$nodes[[g$inputs[k] + 1L]]$shape
      got <- info$shapes[[k]][-1]
      if (all(got >= 0) && !shape_compatible(got, want)) {
        abort_kind("shape", "The features of {.arg {arg}}{if (n_in > 1) paste0(' (component ', k, ')')} have samples of shape {shape_str(got)}; the model's input {.val {names[k]}} expects {shape_str(want)}.",
                   call = call)
      }
    }
  }
  extra <- if (is.na(n)) as.integer(n_out == 1) else max(0L, n - n_in - n_out)
  # fit() and evaluate() of a multi-worker job: each worker may read its own
  # files of a dataset stored in parts (predict() computes every row everywhere).
  with_core(cpp_dataset_source(ds$ptr, continue, arg, dataset_roles(model, extra), if (targets) -1 else n_in,
                               if (targets) model$ptr(), input_value_kinds(model, n_in)),
            call = call)
}

# Steps of a pass over a dataset's batch source: a multi-worker job's, when
# each worker reads its own files (the most of any worker), else the
# dataset's; NULL when only iterating tells. An infinite dataset needs
# `what` (steps_per_epoch, steps).
source_steps <- function(source, ds, arg, what, call = sys.call(-1)) {
  if (identical(length(ds), Inf)) {
    abort_value("{.arg {arg}} is an infinite dataset (a {.fn dataset_repeat} without count): give {.arg {what}}.",
                call = call)
  }
  steps <- with_core(cpp_source_batches(source), call = call)
  if (is.na(steps)) NULL else steps
}

# Elements of nested lists (list(list(a, b), y), list(x = list(a = , b = ),
# y = ...)): the groups must be the model's inputs and its targets; named
# inner lists must name them in the model's order (the core feeds the flat
# components in order).
check_dataset_structure <- function(model, st, n_in, n_out, arg, targets, call) {
  if (is.null(st)) return(invisible())
  sizes <- st$sizes
  # Groups: the inputs, the targets, then optionally the sample weights (one
  # array for all outputs or one per output).
  weights_ok <- length(sizes) < 3 || (length(sizes) == 3 && sizes[3] %in% c(1L, n_out))
  ok <- length(sizes) >= 1 && sizes[1] == n_in && weights_ok &&
    (if (targets) length(sizes) >= 2 && sizes[2] == n_out else length(sizes) == 1 || sizes[2] == n_out)
  if (!ok) {
    groups <- paste(sizes, collapse = " and ")
    abort_value(c("The elements of {.arg {arg}} hold groups of {groups} arrays; the model takes {n_in} input{?s} and {n_out} output{?s}",
                  "({.code list(list(<inputs>), list(<targets>))}, optionally followed by the sample weights)."), call = call)
  }
  check_names <- function(got, want, what) {
    if (!is.null(got) && !identical(got, want)) {
      abort_value("The {what} of the elements of {.arg {arg}} are named {.val {got}}; name them as the model's {what} in order: {.val {want}}.",
                  call = call)
    }
  }
  check_names(st$inner[[1]], model_input_names(model), "inputs")
  if (length(sizes) >= 2) check_names(st$inner[[2]], model_output_names(model), "outputs")
  invisible()
}

# fit()'s shuffle: TRUE, FALSE or "batch" (any case, as Keras lowers it).
check_shuffle <- function(x, call = sys.call(-1)) {
  if (is.character(x) && length(x) == 1 && !is.na(x) && tolower(x) == "batch") return("batch")
  if (is.logical(x) && length(x) == 1 && !is.na(x)) return(x)
  abort_value("{.arg shuffle} must be TRUE, FALSE or \"batch\", not {describe(x)}.", call = call)
}

# What values each input takes (0 floats, 1 whole numbers, 2 bools), for the
# core's check of a dataset's batches (DatasetSource::set_value_kinds).
input_value_kinds <- function(model, n_in) {
  g <- model$graph()
  if (is.null(g)) return(integer())
  vapply(seq_len(n_in), function(k) {
    dtype <- g$nodes[[g$inputs[k] + 1L]]$layer$config$dtype %||% "float32"
    if (identical(dtype, "bool")) 2L else if (dtype %in% c("int32", "int64")) 1L else 0L
  }, integer(1))
}
