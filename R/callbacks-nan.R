# ---- callback_terminate_on_nan() -----------------------------------------------

#' Callback that stops training when the loss becomes NaN or infinite
#'
#' As Keras' `TerminateOnNaN`: when the training loss in the logs is `NaN`
#' or `Inf`, prints `Batch <b>: Invalid loss, terminating training` and sets
#' the model's `stop_training`, so that [fit()][fit.mirrored_model] ends the
#' epoch after that batch (its `on_epoch_end` and `on_train_end` callbacks
#' still run, and the history records the epoch with its `NaN` loss); with
#' `raise_error = TRUE` it raises a `mirrored_nan_error` at once instead
#' (later callbacks' `on_train_end` do not run).
#'
#' The logged loss is the epoch's running mean, which stays non-finite once
#' any batch's loss was. mirrored reads it when the training loop reads the
#' metrics anyway, at every progress report (at most every 0.05 s, and at
#' the last batch of each epoch), so the check costs no per-step device
#' synchronisation; training may therefore run a few batches (at most 0.05 s)
#' past the first non-finite loss before it stops. Batches are numbered from
#' 1 within the epoch, as in mirrored's other callbacks.
#'
#' @param raise_error `FALSE` (default): stop gracefully through
#'   `stop_training`. `TRUE`: raise an error immediately.
#' @returns A callback instance.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1)
#' model |> compile(optimizer = optimizer_sgd(1e30), loss = "mse")
#' x <- matrix(runif(64), ncol = 2)
#' history <- model |> fit(x, x[, 1] * 1e20, epochs = 5, verbose = 0,
#'                         callbacks = list(callback_terminate_on_nan()))
#' history$metrics$loss
callback_terminate_on_nan <- function(raise_error = FALSE) {
  raise_error <- check_flag_arg(raise_error, "raise_error")
  TerminateOnNaN$new(raise_error)
}

TerminateOnNaN <- R6::R6Class("TerminateOnNaN",
  inherit = CallbackBase,
  public = list(
    raise_error = FALSE,
    initialize = function(raise_error) {
      self$raise_error <- raise_error
    },
    # Called by fit()'s loop hooks with the running training logs (`batch`:
    # 1-based within the epoch).
    check_logs = function(batch, logs) {
      loss <- logs[["loss"]]
      if (is.null(loss) || is.finite(loss) || isTRUE(self$model$stop_training)) return(invisible(FALSE))
      if (self$raise_error) {
        cli::cli_abort(c("NaN or Inf loss encountered at batch {batch}. Loss value: {format(loss)}. Terminating training immediately."),
                       class = c("mirrored_nan_error", "mirrored_error"), call = user_call())
      }
      cat(sprintf("Batch %d: Invalid loss, terminating training\n", as.integer(batch)))
      self$model$stop_training <- TRUE
      invisible(TRUE)
    }
  )
)
