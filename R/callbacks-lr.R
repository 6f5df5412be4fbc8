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

# ---- callback_learning_rate_scheduler() --------------------------------------

#' Set the learning rate at the start of every epoch from a function
#'
#' At the beginning of every epoch the callback calls
#' `schedule(epoch, learning_rate)` with the epoch index **counted from 0**
#' (as keras3 passes it) and the optimizer's current learning rate, and sets
#' the optimizer's learning rate to the number it returns. A `schedule` of one
#' argument is called as `schedule(epoch)`. The learning rate is added to
#' the epoch logs as `learning_rate`. With `verbose = 1` each epoch prints
#' `Epoch N: LearningRateScheduler setting learning rate to X.`
#'
#' @param schedule A function of the epoch index (from 0) and the current
#'   learning rate, returning the new learning rate (a number).
#' @param verbose 0 (quiet) or 1 (print a message every epoch).
#' @returns A callback instance.
#' @export
#' @family callbacks
#' @seealso [callback_reduce_lr_on_plateau()], [learning_rate_schedule_exponential_decay()]
#' @examples
#' cb <- callback_learning_rate_scheduler(function(epoch, lr) {
#'   if (epoch < 2) lr else lr * exp(-0.1)
#' })
#' cb$verbose
callback_learning_rate_scheduler <- function(schedule, verbose = 0L) {
  if (!is.function(schedule)) abort_arg("schedule", "a function(epoch, lr)", schedule)
  verbose <- check_number_arg(verbose, "verbose", min = 0, whole = TRUE)
  LearningRateScheduler$new(schedule, verbose)
}

LearningRateScheduler <- R6::R6Class("LearningRateScheduler",
  inherit = CallbackBase,
  public = list(
    schedule = NULL, verbose = NULL,
    initialize = function(schedule, verbose) {
      self$schedule <- schedule
      self$verbose <- verbose
    },
    on_epoch_begin = function(epoch, logs = NULL) {
      optimizer <- self$model$optimizer
      # mirrored's callbacks count epochs from 1; keras3 hands the schedule
      # Keras' 0-based index.
      index <- as.integer(epoch) - 1L
      lr <- as_float32(as.numeric(optimizer$learning_rate))
      new_lr <- if (length(formals(self$schedule)) == 1 && !("..." %in% names(formals(self$schedule))))
                  self$schedule(index) else self$schedule(index, lr)
      if (!(is.numeric(new_lr) && length(new_lr) == 1 && !is.na(new_lr))) {
        abort_value("The output of the {.arg schedule} function should be a number; got {describe(new_lr)}.",
                    call = quote(callback_learning_rate_scheduler()))
      }
      optimizer$learning_rate <- as.numeric(new_lr)
      if (self$verbose > 0) {
        cat(sprintf("\nEpoch %d: LearningRateScheduler setting learning rate to %s.\n",
                    index + 1L, py_float_str(as.numeric(new_lr))))
      }
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (is.null(logs)) logs <- list()
      logs[["learning_rate"]] <- as_float32(as.numeric(self$model$optimizer$learning_rate))
      logs
    }
  )
)
