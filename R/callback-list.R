# The dispatcher the training loops drive: one object that forwards every
# event to the callbacks in order, merges named lists returned by callback
# methods into the logs, and tells the C++ loop which per-batch events any
# callback actually wants (so no R code runs per batch otherwise).
#
# Protocol (all indices 1-based, as seen by user callbacks):
#   cbl <- callback_list(callbacks, model, params)   # params = list(verbose, epochs, steps)
#   cbl$on_train_begin(logs)            -> logs (possibly extended)
#   cbl$on_epoch_begin(epoch, logs)     -> logs   epoch: absolute, 1-based
#   cbl$on_train_batch_begin(batch, logs) / cbl$on_train_batch_end(batch, logs)
#                                       -> logs   batch: 1-based within the epoch
#   cbl$update(current, logs)           progress-bar redraw (only progbar loggers)
#   cbl$on_epoch_end(epoch, logs)       -> logs   (what the history recorded)
#   cbl$on_train_end(logs), on_test_*, on_predict_* likewise.

# Create the callback dispatcher used by fit(), evaluate() and predict()
#'
# @param callbacks `NULL`, one callback, or a list of callbacks (R6 objects
#   inheriting from `Callback`), called in this order.
# @param model The model (its `$stop_training`, `$get_weights()`, ...).
# @param params `list(verbose, epochs, steps)`.
# @returns An object with the `on_*` methods, `update()`,
#   `wants_batch_events()`, `wants_progress_updates()` and the fields
#   `callbacks`, `model`, `params`.
# @noRd
callback_list <- function(callbacks = NULL, model = NULL, params = list()) {
  if (is.null(callbacks)) callbacks <- list()
  if (is_callback(callbacks)) callbacks <- list(callbacks)
  if (!is.list(callbacks)) {
    abort_arg("callbacks", "a list of callbacks", callbacks, call = user_call() %||% environment())
  }
  for (i in seq_along(callbacks)) {
    if (!is_callback(callbacks[[i]])) {
      cli::cli_abort(
        c("{.arg callbacks} must be a list of callbacks (objects created by {.fn Callback}, {.fn callback_lambda} or a {.code callback_*()} function).",
          x = "Element {i} is {describe_value(callbacks[[i]])}."),
        class = c("mirrored_value_error", "mirrored_error"), call = user_call() %||% environment()
      )
    }
  }
  if (!is.list(params)) abort_arg("params", "a named list", params)
  CallbackList$new(unname(callbacks), model, params)
}

CallbackList <- R6::R6Class("CallbackList",
  public = list(
    callbacks = NULL,
    model = NULL,
    params = NULL,
    initialize = function(callbacks, model, params) {
      self$callbacks <- callbacks
      self$model <- model
      self$params <- params
      for (cb in callbacks) {
        cb$model <- model
        cb$params <- params
      }
    },
    on_train_begin = function(logs = NULL) private$dispatch("on_train_begin", logs),
    on_train_end = function(logs = NULL) private$dispatch("on_train_end", logs),
    on_epoch_begin = function(epoch, logs = NULL) {
      private$dispatch("on_epoch_begin", logs, as.integer(epoch))
    },
    on_epoch_end = function(epoch, logs = NULL) {
      private$dispatch("on_epoch_end", logs, as.integer(epoch))
    },
    on_train_batch_begin = function(batch, logs = NULL) {
      private$dispatch("on_train_batch_begin", logs, as.integer(batch), "on_batch_begin")
    },
    on_train_batch_end = function(batch, logs = NULL) {
      private$dispatch("on_train_batch_end", logs, as.integer(batch), "on_batch_end")
    },
    on_test_begin = function(logs = NULL) private$dispatch("on_test_begin", logs),
    on_test_end = function(logs = NULL) private$dispatch("on_test_end", logs),
    on_test_batch_begin = function(batch, logs = NULL) {
      private$dispatch("on_test_batch_begin", logs, as.integer(batch))
    },
    on_test_batch_end = function(batch, logs = NULL) {
      private$dispatch("on_test_batch_end", logs, as.integer(batch))
    },
    on_predict_begin = function(logs = NULL) private$dispatch("on_predict_begin", logs),
    on_predict_end = function(logs = NULL) private$dispatch("on_predict_end", logs),
    on_predict_batch_begin = function(batch, logs = NULL) {
      private$dispatch("on_predict_batch_begin", logs, as.integer(batch))
    },
    on_predict_batch_end = function(batch, logs = NULL) {
      private$dispatch("on_predict_batch_end", logs, as.integer(batch))
    },
    # Progress update from the C++ loop: forwarded to progress-bar loggers
    # only (user callbacks never see it).
    update = function(current, logs = NULL) {
      for (cb in self$callbacks) {
        if (inherits(cb, "ProgbarLogger")) cb$update(current, logs)
      }
      invisible(NULL)
    },
    # TRUE when some callback defines a per-batch method of this kind
    # ("train", "test" or "predict").
    wants_batch_events = function(kind = "train") {
      kind <- match.arg(kind, c("train", "test", "predict"))
      names <- paste0("on_", kind, c("_batch_begin", "_batch_end"))
      if (kind == "train") names <- c(names, "on_batch_begin", "on_batch_end")
      any(vapply(self$callbacks, function(cb) {
        any(vapply(names, function(n) is.function(cb[[n]]), logical(1)))
      }, logical(1)))
    },
    # TRUE when a progress-bar logger will redraw on `update()` calls.
    wants_progress_updates = function() {
      any(vapply(self$callbacks, function(cb) {
        inherits(cb, "ProgbarLogger") && isTRUE(cb$wants_updates())
      }, logical(1)))
    }
  ),
  private = list(
    dispatch = function(method, logs, index = NULL, alias = NULL) {
      logs <- normalize_logs(logs)
      for (cb in self$callbacks) {
        fn <- cb[[method]]
        if (!is.function(fn) && !is.null(alias)) fn <- cb[[alias]]
        if (!is.function(fn)) next
        res <- if (is.null(index)) fn(logs) else fn(index, logs)
        if (is_named_list(res)) logs <- utils::modifyList(logs, res)
      }
      invisible(logs)
    }
  )
)

# Logs reach callbacks as a named list, an empty one included (keras3's
# `Named list()`: a dict from Keras), so `names(logs)` is never NULL.
normalize_logs <- function(logs) {
  if (is.null(logs)) return(empty_logs())
  if (!is.list(logs)) logs <- as.list(logs)
  if (is.null(names(logs))) names(logs) <- rep("", length(logs))
  logs
}

empty_logs <- function() structure(list(), names = character(0))

is_named_list <- function(x) {
  is.list(x) && !is.object(x) && length(x) > 0L && !is.null(names(x)) &&
    all(nzchar(names(x)))
}
