# Callbacks: the `Callback()` class constructor, `callback_lambda()` and the
# built-in callbacks that need no C++ (early stopping, CSV logger, learning
# rate reduction on plateau).
#
# Index base: like keras3, every R callback method receives 1-based indices.
# `epoch` is the absolute epoch number (honouring `initial_epoch`) and `batch`
# the step number within the epoch, both counted from 1. keras3 achieves this
# by wrapping each R method as `fn(idx + 1, logs)`; here the training loop
# passes 1-based numbers directly (see `callback_list()`).

# Names of all methods a callback may define, with the kind of signature.
callback_method_signatures <- c(
  on_epoch_begin = "idx_logs", on_epoch_end = "idx_logs",
  on_train_begin = "logs", on_train_end = "logs",
  on_train_batch_begin = "idx_logs", on_train_batch_end = "idx_logs",
  on_test_begin = "logs", on_test_end = "logs",
  on_test_batch_begin = "idx_logs", on_test_batch_end = "idx_logs",
  on_predict_begin = "logs", on_predict_end = "logs",
  on_predict_batch_begin = "idx_logs", on_predict_batch_end = "idx_logs",
  # keras3 keeps these as aliases of on_train_batch_{begin,end}.
  on_batch_begin = "idx_logs", on_batch_end = "idx_logs"
)

# The root R6 class of every callback. It defines no `on_*` method on purpose:
# `callback_list()` detects which events a callback wants by the presence of
# the method, so the training loop only calls into R for those events.
CallbackBase <- R6::R6Class("Callback",
  public = list(
    # @field model The model being trained, set by the training loop.
    model = NULL,
    # @field params Named list `list(verbose, epochs, steps)`, set by the
    #   training loop.
    params = NULL
  )
)

# ---- argument checks --------------------------------------------------------

abort_arg <- function(arg, expected, x, call = parent.frame()) {
  given <- describe_value(x)
  cli::cli_abort(
    c("{.arg {arg}} must be {expected}.", x = "Got {given}."),
    class = c("mirrored_value_error", "mirrored_error"),
    call = call
  )
}

describe_value <- function(x) {
  if (is.null(x)) return("NULL")
  if (is.function(x)) return("a function")
  if (is.environment(x)) return(paste0("an object of class ", class(x)[[1]]))
  if (is.atomic(x) && length(x) == 1L) {
    return(paste0(
      "a ", class(x)[[1]], " value ",
      if (is.character(x)) paste0('"', x, '"') else format(x)
    ))
  }
  paste0("a ", class(x)[[1]], " of length ", length(x))
}

check_string_arg <- function(x, arg, call = parent.frame()) {
  if (!is.character(x) || length(x) != 1L || is.na(x) || !nzchar(x)) {
    abort_arg(arg, "a single non-empty string", x, call)
  }
  x
}

check_number_arg <- function(x, arg, min = -Inf, max = Inf, whole = FALSE,
                             call = parent.frame()) {
  ok <- is.numeric(x) && length(x) == 1L && !is.na(x) && x >= min && x <= max
  if (ok && whole) ok <- is.finite(x) && x == round(x)
  if (!ok) {
    what <- if (whole) "a single whole number" else "a single number"
    if (is.finite(min) && is.finite(max)) {
      what <- paste0(what, " between ", min, " and ", max)
    } else if (is.finite(min)) {
      what <- paste0(what, " >= ", min)
    } else if (is.finite(max)) {
      what <- paste0(what, " <= ", max)
    }
    abort_arg(arg, what, x, call)
  }
  if (whole) as.integer(x) else as.numeric(x)
}

check_flag_arg <- function(x, arg, call = parent.frame()) {
  if (!is.logical(x) || length(x) != 1L || is.na(x)) {
    abort_arg(arg, "TRUE or FALSE", x, call)
  }
  x
}

check_mode_arg <- function(x, arg = "mode", call = parent.frame()) {
  if (!is.character(x) || length(x) != 1L || !x %in% c("auto", "min", "max")) {
    abort_arg(arg, 'one of "auto", "min" or "max"', x, call)
  }
  x
}

check_callback_fns <- function(fns, call = parent.frame()) {
  nms <- names(fns)
  if (length(fns) && (is.null(nms) || any(!nzchar(nms)))) {
    cli::cli_abort(
      "All callback methods must be named (e.g. {.code on_epoch_end = function(epoch, logs) ...}).",
      class = c("mirrored_value_error", "mirrored_error"), call = call
    )
  }
  for (nm in nms) {
    if (!nm %in% names(callback_method_signatures)) {
      cli::cli_abort(
        c("{.arg {nm}} is not a callback method.",
          i = "Valid names: {.val {names(callback_method_signatures)}}."),
        class = c("mirrored_value_error", "mirrored_error"), call = call
      )
    }
    if (!is.function(fns[[nm]])) abort_arg(nm, "a function or NULL", fns[[nm]], call)
  }
  invisible(fns)
}

# ---- Callback() ---------------------------------------------------------------

#' Define a custom `Callback` class
#'
#' Creates a callback class whose instances can be passed to `fit()`,
#' `evaluate()` and `predict()` through their `callbacks` argument. Override
#' the methods for the stages you need; every method is optional.
#'
#' Methods are R6 methods: inside them `self` is the callback instance (with
#' fields `self$model`, the model being trained, and `self$params`, the named
#' list `list(verbose, epochs, steps)`), `private` its private environment and
#' `super` the parent class. `self$model$stop_training <- TRUE` stops `fit()`
#' after the current epoch.
#'
#' Like keras3, `epoch` and `batch` are **1-based**: the first epoch is `1`
#' (the absolute epoch number, so with `initial_epoch = 3` the first call gets
#' `3`) and the first batch of every epoch is `1`. A method that returns a
#' named list has that list merged into `logs`, which the callbacks after it
#' (and the training history) then see.
#'
#' @param classname String, the name of the class (conventionally CamelCase).
#' @param on_epoch_begin,on_epoch_end `function(epoch, logs = NULL)`, called
#'   at the start and at the end of every training epoch. At the end `logs`
#'   holds the epoch's metrics, validation metrics prefixed by `val_`.
#' @param on_train_begin,on_train_end `function(logs = NULL)`, called at the
#'   start and at the end of `fit()`.
#' @param on_train_batch_begin,on_train_batch_end `function(batch, logs =
#'   NULL)`, called around every training batch (at the end `logs` holds the
#'   running metrics of the epoch).
#' @param on_test_begin,on_test_end `function(logs = NULL)`, called around
#'   `evaluate()` and validation.
#' @param on_test_batch_begin,on_test_batch_end `function(batch, logs =
#'   NULL)`, called around every evaluation batch.
#' @param on_predict_begin,on_predict_end `function(logs = NULL)`, called
#'   around `predict()`.
#' @param on_predict_batch_begin,on_predict_batch_end `function(batch, logs =
#'   NULL)`, called around every prediction batch.
#' @param ... Further named public members (methods or fields), e.g.
#'   `initialize`.
#' @param public,private Named lists of additional public and private members.
#' @param inherit A class created by `Callback()` to inherit from (default:
#'   the base callback class).
#' @param parent_env Environment the methods are evaluated in.
#'
#' @returns A class generator: call it (with the arguments of `initialize`,
#'   if any) to create a callback instance. `generator$new(...)` works too.
#' @seealso [callback_lambda()]
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' EpochCounter <- Callback("EpochCounter",
#'   on_train_begin = function(logs = NULL) self$epochs_seen <- 0,
#'   on_epoch_end = function(epoch, logs = NULL) {
#'     self$epochs_seen <- self$epochs_seen + 1
#'     list(epoch_number = epoch)
#'   },
#'   public = list(epochs_seen = 0)
#' )
#' counter <- EpochCounter()
#' counter$on_train_begin()
#' counter$on_epoch_end(1, list(loss = 0.5))
#' counter$epochs_seen
Callback <- function(classname,
                     on_epoch_begin = NULL,
                     on_epoch_end = NULL,
                     on_train_begin = NULL,
                     on_train_end = NULL,
                     on_train_batch_begin = NULL,
                     on_train_batch_end = NULL,
                     on_test_begin = NULL,
                     on_test_end = NULL,
                     on_test_batch_begin = NULL,
                     on_test_batch_end = NULL,
                     on_predict_begin = NULL,
                     on_predict_end = NULL,
                     on_predict_batch_begin = NULL,
                     on_predict_batch_end = NULL,
                     ...,
                     public = list(),
                     private = list(),
                     inherit = NULL,
                     parent_env = parent.frame()) {
  check_string_arg(classname, "classname")
  methods <- list(
    on_epoch_begin = on_epoch_begin, on_epoch_end = on_epoch_end,
    on_train_begin = on_train_begin, on_train_end = on_train_end,
    on_train_batch_begin = on_train_batch_begin,
    on_train_batch_end = on_train_batch_end,
    on_test_begin = on_test_begin, on_test_end = on_test_end,
    on_test_batch_begin = on_test_batch_begin,
    on_test_batch_end = on_test_batch_end,
    on_predict_begin = on_predict_begin, on_predict_end = on_predict_end,
    on_predict_batch_begin = on_predict_batch_begin,
    on_predict_batch_end = on_predict_batch_end
  )
  methods <- methods[!vapply(methods, is.null, logical(1))]
  check_callback_fns(methods)

  dots <- list(...)
  if (length(dots) && (is.null(names(dots)) || any(!nzchar(names(dots))))) {
    cli::cli_abort("All members passed in {.arg ...} must be named.",
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  if (!is.list(public)) abort_arg("public", "a named list", public)
  if (!is.list(private)) abort_arg("private", "a named list", private)
  if (!is.environment(parent_env)) abort_arg("parent_env", "an environment", parent_env)
  members <- utils::modifyList(methods, dots, keep.null = FALSE)
  members <- utils::modifyList(members, public, keep.null = TRUE)
  on_names <- intersect(names(members), names(callback_method_signatures))
  check_callback_fns(members[on_names])

  parent_class <- resolve_callback_parent(inherit)
  generator <- do.call(R6::R6Class, list(
    classname = classname,
    public = members,
    private = if (length(private)) private else NULL,
    inherit = parent_class,
    parent_env = parent_env
  ))
  new_callback_generator(generator)
}

resolve_callback_parent <- function(inherit, call = parent.frame()) {
  if (is.null(inherit)) return(CallbackBase)
  if (inherits(inherit, "mirrored_callback_generator")) {
    inherit <- attr(inherit, "generator")
  }
  gen <- inherit
  while (inherits(gen, "R6ClassGenerator")) {
    if (identical(gen, CallbackBase)) return(inherit)
    gen <- gen$get_inherit()
  }
  abort_arg("inherit", "a class created by `Callback()`", inherit, call)
}

# Wraps an R6 generator in a function (calling it makes an instance, like
# keras3) that still answers `$new()` and friends through `$`.
new_callback_generator <- function(generator) {
  f <- function(...) generator$new(...)
  structure(f, generator = generator,
            class = c("mirrored_callback_generator", "function"))
}

#' @export
`$.mirrored_callback_generator` <- function(x, name) {
  attr(x, "generator", exact = TRUE)[[name]]
}

#' @export
print.mirrored_callback_generator <- function(x, ...) {
  cat("<Callback class: ", attr(x, "generator")$classname, ">\n", sep = "")
  invisible(x)
}

is_callback <- function(x) inherits(x, "Callback") && is.environment(x)

# ---- callback_lambda() --------------------------------------------------------

#' Callback for creating simple, custom callbacks on-the-fly
#'
#' Builds a callback from plain functions. `on_epoch_begin`/`on_epoch_end`
#' take `(epoch, logs)`, `on_train_begin`/`on_train_end` take `(logs)`, the
#' batch methods take `(batch, logs)`. As in keras3 the `epoch` and `batch`
#' numbers are **1-based**. A function that returns a named list has that
#' list merged into `logs` (so it is seen by later callbacks and recorded in
#' the training history).
#'
#' The functions keep their own environment (unlike methods given to
#' [Callback()], they are not R6 methods and have no `self`).
#'
#' @param on_epoch_begin,on_epoch_end Called at the start/end of every epoch.
#' @param on_train_begin,on_train_end Called at the start/end of training.
#' @param on_train_batch_begin,on_train_batch_end Called around every
#'   training batch.
#' @param ... Any other callback method by name, e.g. `on_test_end =
#'   function(logs) ...` (see [Callback()] for the list).
#' @returns A callback instance to pass in `callbacks = list(...)`.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' seen <- integer()
#' cb <- callback_lambda(on_epoch_end = function(epoch, logs) {
#'   seen <<- c(seen, epoch)
#'   list(double_loss = 2 * logs$loss)
#' })
#' cb$on_epoch_end(1, list(loss = 0.25))
#' seen
callback_lambda <- function(on_epoch_begin = NULL,
                            on_epoch_end = NULL,
                            on_train_begin = NULL,
                            on_train_end = NULL,
                            on_train_batch_begin = NULL,
                            on_train_batch_end = NULL,
                            ...) {
  fns <- c(
    list(
      on_epoch_begin = on_epoch_begin, on_epoch_end = on_epoch_end,
      on_train_begin = on_train_begin, on_train_end = on_train_end,
      on_train_batch_begin = on_train_batch_begin,
      on_train_batch_end = on_train_batch_end
    ),
    list(...)
  )
  if (...length() && (is.null(names(list(...))) || any(!nzchar(names(list(...)))))) {
    cli::cli_abort("All callback methods passed in {.arg ...} must be named.",
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  fns <- fns[!vapply(fns, is.null, logical(1))]
  check_callback_fns(fns)
  # R6 rebinds the environment of methods, so the user's functions are kept
  # in a private field and called from generated forwarding methods.
  methods <- lapply(names(fns), lambda_forwarder)
  names(methods) <- names(fns)
  generator <- R6::R6Class("LambdaCallback",
    inherit = CallbackBase,
    public = methods,
    private = list(fns = fns)
  )
  generator$new()
}

lambda_forwarder <- function(name) {
  if (callback_method_signatures[[name]] == "idx_logs") {
    eval(substitute(
      function(idx, logs = NULL) private$fns[[NAME]](idx, logs),
      list(NAME = name)
    ), baseenv())
  } else {
    eval(substitute(
      function(logs = NULL) private$fns[[NAME]](logs),
      list(NAME = name)
    ), baseenv())
  }
}

# ---- helpers shared by the monitoring callbacks ------------------------------

# Direction of a metric for mode = "auto", following the `_direction` of the
# Keras metric classes: "up" for accuracy-like scores, "down" for losses and
# errors. NULL when the name is not recognised.
metric_direction <- function(monitor) {
  name <- sub("^val_", "", monitor)
  if (identical(name, "loss")) return("down")
  up <- "acc|auc|precision|recall|iou|f1_score|fbeta_score|r2_score|cosine_similarity|true_positives|true_negatives"
  down <- "loss|error|crossentropy|hinge|divergence|poisson|logcosh|false_positives|false_negatives"
  if (grepl(up, name)) return("up")
  if (grepl(down, name)) return("down")
  NULL
}

monitor_value <- function(logs, monitor) {
  v <- logs[[monitor]]
  if (is.null(v)) return(NULL)
  as.numeric(v)[[1]]
}

warn_missing_monitor <- function(what, monitor, logs, suffix = "") {
  available <- paste(names(logs), collapse = ",")
  cli::cli_warn(
    paste0(what, " conditioned on metric {.code {monitor}} which is not available. ",
           "Available metrics are: {available}", suffix),
    class = "mirrored_callback_warning"
  )
}

# Rounds a double to the nearest float32 value (Keras compares the learning
# rate with `np.float32(min_lr)`).
as_float32 <- function(x) {
  readBin(writeBin(as.numeric(x), raw(), size = 4L), "double", n = 1L, size = 4L)
}

# ---- callback_early_stopping() -------------------------------------------------

#' Stop training when a monitored metric has stopped improving
#'
#' At the end of every epoch the monitored value is compared with the best one
#' seen so far; after `patience` epochs without an improvement of at least
#' `min_delta`, `model$stop_training` is set and `fit()` stops.
#'
#' `mode = "auto"` minimises `loss`/`val_loss` and infers the direction of
#' other metrics from their name as Keras does from the metric class
#' (accuracy, AUC, precision, recall, IoU, F-scores and R2 are maximised;
#' errors, crossentropies and other losses are minimised); an unknown name is
#' an error asking for `mode = "min"` or `"max"`. Unlike keras3, which
#' truncates `min_delta` with `as.integer()`, a fractional `min_delta` is
#' honoured.
#'
#' @param monitor Quantity to monitor, a key of the epoch logs.
#' @param min_delta Minimum change that counts as an improvement.
#' @param patience Number of epochs without improvement before stopping.
#' @param verbose 0 (silent) or 1 (print a message when stopping/restoring).
#' @param mode One of `"auto"`, `"min"`, `"max"`.
#' @param baseline Baseline value: `wait` is only reset by epochs that also
#'   improve on it. `NULL` for none.
#' @param restore_best_weights Whether to restore the weights of the best
#'   epoch at the end of training.
#' @param start_from_epoch Number of epochs to wait before monitoring.
#' @returns A callback instance.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' cb <- callback_early_stopping(monitor = "loss", patience = 2)
#' cb$patience
callback_early_stopping <- function(monitor = "val_loss", min_delta = 0L,
                                    patience = 0L, verbose = 0L,
                                    mode = "auto", baseline = NULL,
                                    restore_best_weights = FALSE,
                                    start_from_epoch = 0L) {
  monitor <- check_string_arg(monitor, "monitor")
  min_delta <- check_number_arg(min_delta, "min_delta")
  patience <- check_number_arg(patience, "patience", min = 0, whole = TRUE)
  verbose <- check_number_arg(verbose, "verbose", min = 0, whole = TRUE)
  mode <- check_mode_arg(mode)
  if (!is.null(baseline)) baseline <- check_number_arg(baseline, "baseline")
  restore_best_weights <- check_flag_arg(restore_best_weights, "restore_best_weights")
  start_from_epoch <- check_number_arg(start_from_epoch, "start_from_epoch",
                                       min = 0, whole = TRUE)
  EarlyStopping$new(monitor, abs(min_delta), patience, verbose, mode,
                    baseline, restore_best_weights, start_from_epoch)
}

EarlyStopping <- R6::R6Class("EarlyStopping",
  inherit = CallbackBase,
  public = list(
    monitor = NULL, min_delta = NULL, patience = NULL, verbose = NULL,
    mode = NULL, baseline = NULL, restore_best_weights = NULL,
    start_from_epoch = NULL,
    wait = 0L, stopped_epoch = 0L, best = NULL, best_epoch = 0L,
    best_weights = NULL,
    initialize = function(monitor, min_delta, patience, verbose, mode,
                          baseline, restore_best_weights, start_from_epoch) {
      self$monitor <- monitor
      self$min_delta <- min_delta
      self$patience <- patience
      self$verbose <- verbose
      self$mode <- mode
      self$baseline <- baseline
      self$restore_best_weights <- restore_best_weights
      self$start_from_epoch <- start_from_epoch
    },
    on_train_begin = function(logs = NULL) {
      # Allow instances to be reused; `best` deliberately survives (Keras).
      self$wait <- 0L
      self$stopped_epoch <- 0L
      self$best_weights <- NULL
      self$best_epoch <- 0L
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (is.null(private$direction)) private$set_direction()
      epoch0 <- epoch - 1L # Keras' bookkeeping is 0-based
      current <- monitor_value(logs, self$monitor)
      if (is.null(current)) {
        warn_missing_monitor("Early stopping", self$monitor, logs)
        return(invisible(NULL))
      }
      if (epoch0 < self$start_from_epoch) return(invisible(NULL))
      if (self$restore_best_weights && is.null(self$best_weights)) {
        self$best_weights <- self$model$get_weights()
        self$best_epoch <- epoch0
      }
      self$wait <- self$wait + 1L
      if (private$is_improvement(current, self$best)) {
        self$best <- current
        self$best_epoch <- epoch0
        if (self$restore_best_weights) self$best_weights <- self$model$get_weights()
        if (is.null(self$baseline) || private$is_improvement(current, self$baseline)) {
          self$wait <- 0L
        }
        return(invisible(NULL))
      }
      if (self$wait >= self$patience && epoch0 > 0) {
        self$stopped_epoch <- epoch0
        self$model$stop_training <- TRUE
      }
      invisible(NULL)
    },
    on_train_end = function(logs = NULL) {
      if (self$stopped_epoch > 0 && self$verbose > 0) {
        cat(sprintf("Epoch %d: early stopping\n", self$stopped_epoch + 1L))
      }
      if (self$restore_best_weights && !is.null(self$best_weights)) {
        if (self$verbose > 0) {
          cat(sprintf(
            "Restoring model weights from the end of the best epoch: %d.\n",
            self$best_epoch + 1L
          ))
        }
        self$model$set_weights(self$best_weights)
      }
      invisible(NULL)
    }
  ),
  private = list(
    direction = NULL,
    signed_delta = 0,
    set_direction = function() {
      dir <- switch(self$mode, min = "down", max = "up", metric_direction(self$monitor))
      if (is.null(dir)) {
        cli::cli_abort(
          c("{.fn callback_early_stopping} received {.code monitor = \"{self$monitor}\"} but cannot tell whether that metric should be maximized or minimized.",
            i = "Pass {.code mode = \"max\"} or {.code mode = \"min\"}."),
          class = c("mirrored_value_error", "mirrored_error"), call = NULL
        )
      }
      private$direction <- dir
      private$signed_delta <- if (dir == "down") -self$min_delta else self$min_delta
      self$best <- if (dir == "down") Inf else -Inf
    },
    is_improvement = function(value, reference) {
      if (private$direction == "down") {
        (value - private$signed_delta) < reference
      } else {
        (value - private$signed_delta) > reference
      }
    }
  )
)

# ---- callback_csv_logger() -----------------------------------------------------

#' Callback that streams epoch results to a CSV file
#'
#' Writes one row per epoch in Keras' format: a header `epoch` followed by
#' the log keys in sorted order (when the first epoch has no `val_` key, a
#' `val_<key>` column is added for every key, to be filled by later epochs
#' with validation), a 0-based `epoch` column, numbers written as Python
#' writes floats (shortest round-trip form, e.g. `0.1`, `1e-05`), `NA` for a
#' key missing from an epoch, and `\r\n` line ends.
#'
#' @param filename Path of the CSV file.
#' @param separator String used to separate fields.
#' @param append `TRUE` to append to an existing file (no new header when
#'   the file is not empty), `FALSE` to overwrite it.
#' @returns A callback instance.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' path <- tempfile(fileext = ".csv")
#' cb <- callback_csv_logger(path)
#' cb$on_train_begin()
#' cb$on_epoch_end(1, list(loss = 0.5, val_loss = 0.25))
#' cb$on_train_end()
#' readLines(path)
callback_csv_logger <- function(filename, separator = ",", append = FALSE) {
  filename <- check_string_arg(filename, "filename")
  if (!is.character(separator) || length(separator) != 1L || is.na(separator) ||
      nchar(separator) != 1L) {
    abort_arg("separator", "a single character", separator)
  }
  append <- check_flag_arg(append, "append")
  CSVLogger$new(path.expand(filename), separator, append)
}

CSVLogger <- R6::R6Class("CSVLogger",
  inherit = CallbackBase,
  public = list(
    filename = NULL, separator = NULL, append = NULL, keys = NULL,
    initialize = function(filename, separator, append) {
      self$filename <- filename
      self$separator <- separator
      self$append <- append
    },
    on_train_begin = function(logs = NULL) {
      private$write_header <- TRUE
      if (self$append) {
        if (file.exists(self$filename)) {
          first <- readLines(self$filename, n = 1L, warn = FALSE)
          private$write_header <- length(first) == 0L
        }
        if (!file.exists(self$filename)) file.create(self$filename)
      } else {
        file.create(self$filename)
      }
      self$keys <- NULL
      private$header_done <- FALSE
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (is.null(logs)) logs <- list()
      if (is.null(self$keys)) {
        keys <- sort(names(logs), method = "radix") # code-point order, like Python
        if (length(keys) && !any(startsWith(keys, "val_"))) {
          keys <- c(keys, paste0("val_", keys))
        }
        self$keys <- keys
      }
      lines <- character()
      if (!private$header_done) {
        if (private$write_header) {
          lines <- c(lines, csv_row(c("epoch", self$keys), self$separator))
        }
        private$header_done <- TRUE
      }
      fields <- c(
        as.character(epoch - 1L),
        vapply(self$keys, function(k) csv_value(logs[[k]], k %in% names(logs)), "")
      )
      lines <- c(lines, csv_row(fields, self$separator))
      con <- file(self$filename, open = "ab")
      on.exit(close(con))
      writeChar(paste0(lines, "\r\n", collapse = ""), con, eos = NULL, useBytes = TRUE)
      invisible(NULL)
    },
    on_train_end = function(logs = NULL) {
      invisible(NULL)
    }
  ),
  private = list(write_header = TRUE, header_done = FALSE)
)

# One CSV field per log value, as Python's csv module writes Keras' values.
csv_value <- function(v, present) {
  if (!present) return("NA")
  if (is.null(v)) return("")
  if (is.character(v) && length(v) == 1L) return(v)
  if (length(v) != 1L) {
    parts <- vapply(as.list(v), function(e) csv_value(e, TRUE), "")
    return(paste0('"[', paste(parts, collapse = ", "), ']"'))
  }
  if (is.logical(v)) return(if (is.na(v)) "NA" else if (v) "True" else "False")
  if (is.integer(v)) return(if (is.na(v)) "NA" else as.character(v))
  py_float_str(as.numeric(v))
}

# Minimal quoting of Python's csv "excel" dialect.
csv_row <- function(fields, sep) {
  needs <- grepl(sep, fields, fixed = TRUE) | grepl('["\r\n]', fields)
  fields[needs] <- paste0('"', gsub('"', '""', fields[needs], fixed = TRUE), '"')
  paste(fields, collapse = sep)
}

#' Python's `str()` of a float
#'
#' The shortest decimal string that reads back as the same double, written
#' the way Python prints floats: fixed notation with at least one decimal
#' (`1.0`, `0.0001`) for decimal exponents from -4 to 15, otherwise
#' scientific notation with a two-digit exponent (`1e-05`, `1.5e+16`).
#' @param x A single double.
#' @returns A string.
#' @noRd
py_float_str <- function(x) {
  x <- as.numeric(x)
  if (is.nan(x)) return("nan")
  if (is.na(x)) return("NA")
  if (is.infinite(x)) return(if (x > 0) "inf" else "-inf")
  if (x == 0) return(if (1 / x < 0) "-0.0" else "0.0")
  s <- NULL
  for (d in 1:17) {
    s <- sprintf("%.*e", d - 1L, x)
    if (as.numeric(s) == x) break
  }
  mant <- sub("e.*$", "", s)
  e <- as.integer(sub("^.*e", "", s))
  neg <- startsWith(mant, "-")
  digits <- sub("0+$", "", gsub("[-.]", "", mant))
  if (!nzchar(digits)) digits <- "0"
  n <- nchar(digits)
  out <- if (e >= -4 && e < 16) {
    if (e >= 0) {
      int_part <- if (n > e + 1) substr(digits, 1L, e + 1L) else
        paste0(digits, strrep("0", e + 1 - n))
      frac <- if (n > e + 1) substr(digits, e + 2L, n) else "0"
      paste0(int_part, ".", frac)
    } else {
      paste0("0.", strrep("0", -e - 1L), digits)
    }
  } else {
    m <- if (n > 1) paste0(substr(digits, 1L, 1L), ".", substr(digits, 2L, n)) else digits
    paste0(m, "e", sprintf("%+03d", e))
  }
  if (neg) paste0("-", out) else out
}

# ---- callback_reduce_lr_on_plateau() ---------------------------------------------

#' Reduce the learning rate when a metric has stopped improving
#'
#' After `patience` epochs without improvement of the monitored value the
#' optimizer's learning rate is multiplied by `factor` (never below
#' `min_lr`), then the callback waits `cooldown` epochs before counting
#' again. The current learning rate is added to the epoch logs as
#' `learning_rate` (so it is recorded in the history). `mode = "auto"`
#' maximises monitors whose name contains `"acc"` and minimises the others.
#' With `verbose = 1` each reduction prints
#' `Epoch N: ReduceLROnPlateau reducing learning rate to X.`
#'
#' @param monitor Quantity to monitor, a key of the epoch logs.
#' @param factor Factor by which the learning rate is reduced (`< 1`).
#' @param patience Number of epochs without improvement before reducing.
#' @param verbose 0 (quiet) or 1 (print a message at each reduction).
#' @param mode One of `"auto"`, `"min"`, `"max"`.
#' @param min_delta Threshold for measuring a new optimum.
#' @param cooldown Number of epochs to wait after a reduction.
#' @param min_lr Lower bound on the learning rate.
#' @param ... Unused, for compatibility with keras3.
#' @returns A callback instance.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' cb <- callback_reduce_lr_on_plateau(monitor = "loss", factor = 0.5, patience = 2)
#' cb$factor
callback_reduce_lr_on_plateau <- function(monitor = "val_loss", factor = 0.1,
                                          patience = 10L, verbose = 0L,
                                          mode = "auto", min_delta = 1e-4,
                                          cooldown = 0L, min_lr = 0, ...) {
  monitor <- check_string_arg(monitor, "monitor")
  factor <- check_number_arg(factor, "factor", min = 0)
  if (factor >= 1) abort_arg("factor", "a number below 1", factor)
  patience <- check_number_arg(patience, "patience", min = 0, whole = TRUE)
  verbose <- check_number_arg(verbose, "verbose", min = 0, whole = TRUE)
  mode <- check_mode_arg(mode)
  min_delta <- check_number_arg(min_delta, "min_delta")
  cooldown <- check_number_arg(cooldown, "cooldown", min = 0, whole = TRUE)
  min_lr <- check_number_arg(min_lr, "min_lr", min = 0)
  ReduceLROnPlateau$new(monitor, factor, patience, verbose, mode, min_delta,
                        cooldown, min_lr)
}

ReduceLROnPlateau <- R6::R6Class("ReduceLROnPlateau",
  inherit = CallbackBase,
  public = list(
    monitor = NULL, factor = NULL, patience = NULL, verbose = NULL,
    mode = NULL, min_delta = NULL, cooldown = NULL, min_lr = NULL,
    cooldown_counter = 0L, wait = 0L, best = 0,
    initialize = function(monitor, factor, patience, verbose, mode, min_delta,
                          cooldown, min_lr) {
      self$monitor <- monitor
      self$factor <- factor
      self$patience <- patience
      self$verbose <- verbose
      self$mode <- mode
      self$min_delta <- min_delta
      self$cooldown <- cooldown
      self$min_lr <- min_lr
      private$reset()
    },
    on_train_begin = function(logs = NULL) {
      private$reset()
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (is.null(logs)) logs <- list()
      optimizer <- self$model$optimizer
      logs[["learning_rate"]] <- as.numeric(optimizer$learning_rate)
      current <- monitor_value(logs, self$monitor)
      if (is.null(current)) {
        warn_missing_monitor("Learning rate reduction is", self$monitor, logs, ".")
        return(logs)
      }
      if (self$cooldown_counter > 0) {
        self$cooldown_counter <- self$cooldown_counter - 1L
        self$wait <- 0L
      }
      if (private$better(current, self$best)) {
        self$best <- current
        self$wait <- 0L
      } else if (!(self$cooldown_counter > 0)) {
        self$wait <- self$wait + 1L
        if (self$wait >= self$patience) {
          old_lr <- as.numeric(optimizer$learning_rate)
          if (old_lr > as_float32(self$min_lr)) {
            new_lr <- max(old_lr * self$factor, self$min_lr)
            optimizer$learning_rate <- new_lr
            if (self$verbose > 0) {
              cat(sprintf("\nEpoch %d: ReduceLROnPlateau reducing learning rate to %s.\n",
                          as.integer(epoch), py_float_str(new_lr)))
            }
            self$cooldown_counter <- self$cooldown
            self$wait <- 0L
          }
        }
      }
      logs
    }
  ),
  private = list(
    maximize = FALSE,
    reset = function() {
      private$maximize <- self$mode == "max" ||
        (self$mode == "auto" && grepl("acc", self$monitor, fixed = TRUE))
      self$best <- if (private$maximize) -Inf else Inf
      self$cooldown_counter <- 0L
      self$wait <- 0L
    },
    better = function(a, b) {
      if (private$maximize) a > b + self$min_delta else a < b - self$min_delta
    }
  )
)
