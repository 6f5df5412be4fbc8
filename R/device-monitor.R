# ---- callback_device_monitor() and fit(verbose = 2)'s summary --------------------
#
# The core measures every training step on every replica (src/mr/train/
# step_clock.h): compute, waiting for the all-reduce, waiting for input and
# host overhead, which partition the step's wall time, plus the device's
# memory and GPU utilisation (train/device_report.h). R only shapes and shows
# the report of the last training epoch (cpp_device_report()).

#' Callback that records where each training step's time goes
#'
#' Records, after every training epoch and for every replica, how long a
#' step took and what it spent its time on, with the device's memory and
#' (on a GPU) its utilisation. Neither keras3 nor PyTorch gives this without
#' a profiler. After [fit()][fit.mirrored_model], `cb$data` (or
#' `as.data.frame(cb)`) holds one row per epoch and replica, and `plot(cb)`
#' draws the parts as stacked bars.
#'
#' A step runs from the moment the training loop starts it to the moment it
#' starts the next one (the first step from the start of the epoch, the last
#' to its end), so the steps' times add up to the epoch's training time
#' (validation is not included). Each replica's step time is cut into four
#' parts that add up to it exactly:
#' * `compute_ms`: the replica computing the step (forward pass, loss,
#'   backward pass, optimizer update);
#' * `allreduce_ms`: the replica in a collective (the gradients'
#'   all-reduce, a synchronized batch normalization), including the time it
#'   waits there for slower replicas;
#' * `input_ms`: the replica staging its slice of the batch on its device,
#'   and the time it sat idle while the loop was still drawing the next batch
#'   from the data pipeline;
#' * `host_ms`: the rest, the replica idle while the loop posted the step,
#'   ran callbacks, printed progress or waited for the other replicas.
#'
#' On a GPU the times are taken on the host: device work the replica's
#' thread does not wait for appears where the loop waits for it (in
#' `host_ms`). Memory is what the replica's allocator hands out to its
#' buffers (parameters, gradients, optimizer slots, activations); on a GPU
#' `device_memory_mb` is the whole device's memory in use as the driver
#' reports it. GPU utilisation comes from NVML (the driver's
#' `libnvidia-ml.so.1`, opened only if present) and is `NA` on CPU replicas
#' or without it.
#'
#' A CPU replica computes on a team of threads (`options(mirrored.cpu_threads)`,
#' by default the usable cores shared by the replicas). When another process
#' takes one of those cores, a thread of the team can be descheduled in the
#' middle of an op and the others wait for it: the team measures those waits
#' and, when they cost much, stops giving work to a thread (it sleeps), trying
#' the whole team again after a while. `active_threads` and `threads_why` say
#' when that happened.
#'
#' @returns A callback instance. Its field `data` is a data frame with one
#'   row per training epoch and replica and the columns `epoch` (integer,
#'   1-based, as in callbacks), `replica` (integer, 0-based), `device`
#'   (character, e.g. `"cpu:0"`), `steps` (integer), `step_ms` (mean wall
#'   time of a step), `compute_ms`, `allreduce_ms`, `input_ms`, `host_ms`
#'   (the means of its parts per step; they add up to `step_ms`),
#'   `memory_mb` (the replica's memory in use at the end of the epoch, in
#'   MB of 10^6 bytes), `peak_memory_mb` (its peak during the epoch),
#'   `device_memory_mb` (device-wide, `NA` on the CPU), `gpu_util`
#'   (integer percent, `NA` on the CPU or without NVML), `threads` and
#'   `active_threads` (integers: the replica's CPU threads, and how many of
#'   them took work at the end of the epoch: fewer while other processes keep
#'   the cores busy, see below) and `threads_why` (character, why fewer; `""`
#'   when all do). It is emptied at the start of every `fit()`.
#' @export
#' @family callbacks
#' @seealso [fit.mirrored_model()], whose `verbose = 2` prints a one-line
#'   summary of the same figures after training.
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |>
#'   layer_dense(units = 8, activation = "relu") |>
#'   layer_dense(units = 1)
#' model |> compile(optimizer = "adam", loss = "mse")
#' x <- matrix(runif(256), ncol = 4)
#' monitor <- callback_device_monitor()
#' model |> fit(x, rowSums(x), epochs = 2, batch_size = 16, verbose = 0,
#'              callbacks = list(monitor))
#' monitor$data
#' plot(monitor)
callback_device_monitor <- function() {
  DeviceMonitor$new()
}

DeviceMonitor <- R6::R6Class("DeviceMonitor",
  inherit = CallbackBase,
  public = list(
    data = NULL,
    initialize = function() {
      self$data <- device_report_frame(NULL, integer())
    },
    on_train_begin = function(logs = NULL) {
      self$data <- device_report_frame(NULL, integer())
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      self$data <- rbind(self$data, device_epoch_report(self$model, epoch))
      invisible(NULL)
    }
  )
)

# The core's report of the model's last training epoch as data frame rows
# (one per replica) for `epoch`.
device_epoch_report <- function(model, epoch) {
  device_report_frame(with_core(cpp_device_report(model$ptr())), epoch)
}

device_report_frame <- function(rep, epoch) {
  if (is.null(rep)) {
    return(data.frame(epoch = integer(), replica = integer(), device = character(),
                      steps = integer(), step_ms = numeric(), compute_ms = numeric(),
                      allreduce_ms = numeric(), input_ms = numeric(), host_ms = numeric(),
                      memory_mb = numeric(), peak_memory_mb = numeric(),
                      device_memory_mb = numeric(), gpu_util = integer(), threads = integer(),
                      active_threads = integer(), threads_why = character(),
                      stringsAsFactors = FALSE))
  }
  per_step <- function(ms) ifelse(rep$steps > 0, ms / rep$steps, NA_real_)
  data.frame(epoch = rep(as.integer(epoch), length(rep$replica)), replica = rep$replica,
             device = rep$device, steps = rep$steps, step_ms = per_step(rep$wall_ms),
             compute_ms = per_step(rep$compute_ms), allreduce_ms = per_step(rep$allreduce_ms),
             input_ms = per_step(rep$input_ms), host_ms = per_step(rep$host_ms),
             memory_mb = rep$memory_mb, peak_memory_mb = rep$peak_memory_mb,
             device_memory_mb = rep$device_memory_mb, gpu_util = rep$gpu_util,
             threads = rep$threads, active_threads = rep$active_threads,
             threads_why = rep$threads_why, stringsAsFactors = FALSE)
}

#' @export
as.data.frame.DeviceMonitor <- function(x, row.names = NULL, optional = FALSE, ...) {
  check_dots_empty(list(...), "as.data.frame", c("x", "row.names", "optional"))
  df <- x$data
  if (!is.null(row.names)) row.names(df) <- row.names
  df
}

#' Plot where a device monitor's training steps spent their time
#'
#' Stacked bars, one per epoch (and per replica when there are several), of
#' the mean step time split into compute, all-reduce, input and host time,
#' as recorded by [callback_device_monitor()].
#'
#' @param x A callback made by [callback_device_monitor()], after `fit()`.
#' @param y Unused (base R's `plot()` signature); must be missing.
#' @param ... Further arguments for [graphics::barplot()] (for example
#'   `main` or `col`).
#' @returns `x`, invisibly.
#' @export
#' @family callbacks
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 1)
#' model |> compile(optimizer = "sgd", loss = "mse")
#' x <- matrix(runif(128), ncol = 4)
#' monitor <- callback_device_monitor()
#' model |> fit(x, x[, 1], epochs = 3, verbose = 0, callbacks = list(monitor))
#' plot(monitor)
plot.DeviceMonitor <- function(x, y, ...) {
  if (!missing(y)) abort_value("{.fn plot} of a device monitor takes no {.arg y}; got {describe(y)}.")
  df <- x$data
  if (nrow(df) == 0L) {
    abort_value("The device monitor has no epochs to plot: pass it to {.fn fit} in {.arg callbacks} first.")
  }
  parts <- c(compute = "compute_ms", `all-reduce` = "allreduce_ms", input = "input_ms", host = "host_ms")
  heights <- t(as.matrix(df[, parts]))
  rownames(heights) <- names(parts)
  several <- length(unique(df$replica)) > 1L
  colnames(heights) <- if (several) paste0(df$epoch, "/", df$replica) else as.character(df$epoch)
  args <- utils::modifyList(list(
    height = heights, col = c("#4477AA", "#CC6677", "#DDCC77", "#BBBBBB"),
    ylim = c(0, 1.3 * max(colSums(heights), 1e-9)),  # room for the legend
    xlab = if (several) "epoch/replica" else "epoch", ylab = "ms per step",
    main = "Where the training steps' time goes", legend.text = rownames(heights),
    args.legend = list(x = "topright", bty = "n", cex = 0.8), border = NA
  ), list(...))
  do.call(graphics::barplot, args)
  invisible(x)
}

# fit(verbose = 2)'s line after training: the mean step time over the
# epochs of this fit() and its parts' shares (averaged over replicas), the
# highest peak memory of any replica, and GPU utilisation where known.
device_summary_line <- function(df) {
  if (is.null(df) || nrow(df) == 0L || sum(df$steps) == 0L) return(NULL)
  wall <- sum(df$step_ms * df$steps)
  share <- function(col) 100 * sum(df[[col]] * df$steps) / wall
  step <- wall / sum(df$steps)  # every replica sees the same step intervals
  line <- sprintf("time per step %s: compute %.0f%%, all-reduce %.0f%%, input %.0f%%, host %.0f%%; peak memory %s per replica",
                  format_ms(step), share("compute_ms"), share("allreduce_ms"), share("input_ms"),
                  share("host_ms"), format_mb(max(df$peak_memory_mb)))
  if (any(!is.na(df$gpu_util))) line <- sprintf("%s; GPU utilisation %.0f%%", line, mean(df$gpu_util, na.rm = TRUE))
  last <- df[df$epoch == max(df$epoch), , drop = FALSE]
  cut <- last[last$active_threads < last$threads, , drop = FALSE]
  if (nrow(cut) > 0L) {
    line <- sprintf("%s; %d of %d CPU threads per replica take work: %s", line, cut$active_threads[1],
                    cut$threads[1], cut$threads_why[1])
  }
  line
}

format_ms <- function(ms) {
  if (ms >= 1000) sprintf("%.2f s", ms / 1000) else if (ms >= 1) sprintf("%.3g ms", ms) else sprintf("%.0f us", ms * 1000)
}

format_mb <- function(mb) {
  if (mb >= 1000) sprintf("%.2f GB", mb / 1000) else sprintf("%.3g MB", mb)
}
