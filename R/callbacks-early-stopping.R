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
