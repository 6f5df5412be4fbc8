# Console progress output in Keras 3's formats (keras/src/utils/progbar.py and
# keras/src/callbacks/progbar_logger.py):
#
#   verbose = 2, one line per epoch at its end:
#     782/782 - 4s - 6ms/step - loss: 0.2616 - val_loss: 0.1510
#   verbose = 1, a bar redrawn in place (at most every 0.05 s, and at the end):
#     782/782 ━━━━━━━━━━━━━━━━━━━━ 4s 5ms/step - loss: 0.2616 - val_loss: 0.1510
#
# The formatting helpers are pure; the progress state lives in a small
# environment (`new_progbar()`); `callback_progbar_logger()` prints with
# cat() to stdout so knitr captures it.

# Keras' `_format_time`: per-step duration with its unit.
progbar_format_time <- function(time_per_unit, unit_name = "step") {
  if (time_per_unit >= 1 || time_per_unit == 0) {
    sprintf(" %.0fs/%s", time_per_unit, unit_name)
  } else if (time_per_unit >= 1e-3) {
    sprintf(" %.0fms/%s", time_per_unit * 1e3, unit_name)
  } else {
    sprintf(" %.0fus/%s", time_per_unit * 1e6, unit_name)
  }
}

# A metric value as Keras prints it: `%.4f` above 1e-3, `%.4e` otherwise.
# verbose = 1 compares abs(v); verbose = 2 compares v itself (so negative
# values get e-notation there). Non-finite values print as Python does.
progbar_format_value <- function(v, verbose = 2L) {
  v <- as.numeric(v)[[1]]
  if (is.na(v)) return("nan")
  big <- if (verbose == 1) abs(v) > 1e-3 else v > 1e-3
  if (is.infinite(v)) {
    s <- if (v > 0) "inf" else "-inf"
    return(s)
  }
  if (big) sprintf("%.4f", v) else sprintf("%.4e", v)
}

# ETA while running: `%ds` up to a minute, `%d:%02d` up to an hour, then
# `%d:%02d:%02d` (Python's %d truncates).
progbar_format_eta <- function(eta) {
  if (eta > 3600) {
    sprintf("%d:%02d:%02d", as.integer(eta %/% 3600),
            as.integer((eta %% 3600) %/% 60), as.integer(eta %% 60))
  } else if (eta > 60) {
    sprintf("%d:%02d", as.integer(eta %/% 60), as.integer(eta %% 60))
  } else {
    sprintf("%ds", as.integer(eta))
  }
}

progbar_metrics_text <- function(keys, values, verbose) {
  paste0(vapply(keys, function(k) {
    paste0(" - ", k, ": ", progbar_format_value(values[[k]], verbose))
  }, ""), collapse = "")
}

progbar_count_text <- function(current, target) {
  nd <- floor(log10(target)) + 1
  sprintf("%*d/%d", as.integer(nd), as.integer(current), as.integer(target))
}

#' The verbose = 2 line of evaluate() / predict()
#'
#' @param steps Number of steps run.
#' @param elapsed Seconds since the start.
#' @param logs Named list of final metrics (`NULL` for predict()).
#' @returns The line, without a newline, e.g.
#'   `157/157 - 0s - 3ms/step - loss: 0.1023 - sparse_categorical_accuracy: 0.9685`.
#' @noRd
progbar_line_evaluate <- function(steps, elapsed, logs = NULL) {
  progbar_line_verbose2(steps, steps, elapsed, elapsed / steps, logs)
}

progbar_line_verbose2 <- function(current, target, elapsed, time_per_unit, logs) {
  logs <- normalize_logs(logs)
  paste0(
    progbar_count_text(current, target), " - ", sprintf("%.0f", elapsed), "s",
    " -", progbar_format_time(time_per_unit),
    progbar_metrics_text(names(logs), logs, 2L)
  )
}

# ---- progress state -------------------------------------------------------------

# A progress bar for one epoch (or one evaluate()/predict() run).
# `target` = number of steps or NULL when unknown; `now` = clock function.
new_progbar <- function(target, verbose = 1L, now = default_clock,
                        dynamic = progbar_is_dynamic(),
                        colour = progbar_has_colour(), width = 20L,
                        interval = 0.05) {
  pb <- new.env(parent = emptyenv())
  pb$target <- target
  pb$verbose <- verbose
  pb$now <- now
  pb$dynamic <- dynamic
  pb$colour <- colour
  pb$width <- width
  pb$interval <- interval
  pb$start <- now()
  pb$last_update <- -Inf
  pb$time_after_first_step <- NULL
  pb$prev_total_width <- 0L
  pb$seen_so_far <- 0L
  pb$sums <- list()
  pb$counts <- list()
  pb$order <- character()
  pb
}

default_clock <- function() proc.time()[["elapsed"]]

# Keras redraws in place whenever stdout may be a terminal. In R, a console
# that cannot move the cursor (knitr, testthat, output sent to a file) gets
# only the final line of each bar.
progbar_is_dynamic <- function() {
  opt <- getOption("mirrored.progbar.dynamic")
  if (!is.null(opt)) return(isTRUE(opt))
  if (isTRUE(getOption("knitr.in.progress"))) return(FALSE)
  isTRUE(cli::is_dynamic_tty())
}

progbar_has_colour <- function() cli::num_ansi_colors() > 1L

# Keras' `_estimate_step_duration`: after step 1, time per step excludes it.
progbar_step_duration <- function(pb, current, now) {
  if (current <= 0) return(0)
  tpu <- if (!is.null(pb$time_after_first_step) && current > 1) {
    (now - pb$time_after_first_step) / (current - 1)
  } else {
    (now - pb$start) / current
  }
  if (current == 1) pb$time_after_first_step <- now
  tpu
}

# Updates the bar to step `current` with the running `values` (named list)
# and returns the text to print ("" when nothing is to be printed).
progbar_update <- function(pb, current, values = NULL, finalize = NULL) {
  if (is.null(finalize)) {
    finalize <- !is.null(pb$target) && current >= pb$target
  }
  values <- normalize_logs(values)
  for (k in names(values)) {
    v <- as.numeric(values[[k]])[[1]]
    if (!k %in% pb$order) pb$order <- c(pb$order, k)
    # Keras treats every logged metric as "stateless": running values are
    # averaged over the steps between updates; the final value is shown as is.
    if (finalize) {
      pb$sums[[k]] <- v
      pb$counts[[k]] <- 1
    } else {
      base <- max(current - pb$seen_so_far, 1)
      if (is.null(pb$sums[[k]])) {
        pb$sums[[k]] <- v * base
        pb$counts[[k]] <- base
      } else {
        pb$sums[[k]] <- pb$sums[[k]] + v * base
        pb$counts[[k]] <- pb$counts[[k]] + base
      }
    }
  }
  pb$seen_so_far <- current
  now <- pb$now()
  tpu <- progbar_step_duration(pb, current, now)
  averages <- lapply(stats::setNames(pb$order, pb$order), function(k) {
    pb$sums[[k]] / max(1, pb$counts[[k]])
  })
  out <- ""
  if (pb$verbose == 1) {
    if (now - pb$last_update < pb$interval && !finalize) return("")
    if (!pb$dynamic && !finalize) {
      pb$last_update <- now
      return("")
    }
    line <- progbar_line_verbose1(pb, current, now, tpu, averages, finalize)
    total_width <- nchar(line$plain, type = "chars")
    out <- line$text
    if (pb$prev_total_width > total_width) {
      out <- paste0(out, strrep(" ", pb$prev_total_width - total_width))
    }
    if (pb$dynamic) out <- paste0(strrep("\b", pb$prev_total_width), "\r", out)
    if (finalize) out <- paste0(out, "\n")
    pb$prev_total_width <- total_width
  } else if (pb$verbose == 2) {
    if (finalize && !is.null(pb$target) && pb$target > 0) {
      out <- paste0(
        progbar_line_verbose2(current, pb$target, now - pb$start, tpu, averages),
        "\n"
      )
    }
  }
  pb$last_update <- now
  out
}

# The verbose = 1 line, with and without ANSI styling (the plain form gives
# the display width).
progbar_line_verbose1 <- function(pb, current, now, tpu, averages, finalize) {
  style <- function(s, code) if (pb$colour) paste0(code, s, "\033[0m") else s
  bold <- function(s) style(s, "\033[1m")
  known <- !is.null(pb$target) && pb$target > 0
  if (known) {
    count <- progbar_count_text(current, pb$target)
    done <- as.integer(floor(pb$width * current / pb$target))
    rest <- max(pb$width - done, 0L)
    ch <- progbar_bar_char()
    bar_plain <- paste0(count, " ", strrep(ch, max(done, 0L)), strrep(ch, rest))
    bar <- paste0(
      bold(count), " ",
      if (done > 0) style(strrep(ch, done), "\033[32m") else "",
      style(strrep(ch, rest), "\033[37m")
    )
  } else {
    bar_plain <- bar <- sprintf("%7d/Unknown", as.integer(current))
  }
  if (known && !finalize) {
    t <- progbar_format_eta(tpu * (pb$target - current))
  } else {
    t <- sprintf("%.0fs", now - pb$start)
  }
  rest_plain <- paste0(
    " ", t, progbar_format_time(tpu),
    progbar_metrics_text(pb$order, averages, 1L)
  )
  rest_text <- paste0(
    " ", bold(t), progbar_format_time(tpu),
    progbar_metrics_text(pb$order, averages, 1L)
  )
  list(text = paste0(bar, rest_text), plain = paste0(bar_plain, rest_plain))
}

# Keras draws the bar with U+2501; a console without UTF-8 gets "=".
progbar_bar_char <- function() {
  if (isTRUE(l10n_info()[["UTF-8"]])) "\u2501" else "="
}

# ---- the logger callback -----------------------------------------------------------

#' The progress logger fit(), evaluate() and predict() put last
#'
#' Prints `Epoch e/E` at the start of each epoch (when verbose != 0 and more
#' than one epoch) and the progress line(s). The C++ loop reports progress
#' with `$update(current, logs)`; this logger has no per-batch method, so it
#' never forces per-batch R calls.
#'
#' @param now Clock function returning seconds.
#' @param dynamic,colour Override console detection (tests).
#' @returns A callback instance.
#' @noRd
callback_progbar_logger <- function(now = default_clock, dynamic = NULL,
                                    colour = NULL) {
  ProgbarLogger$new(now, dynamic, colour)
}

ProgbarLogger <- R6::R6Class("ProgbarLogger",
  inherit = CallbackBase,
  public = list(
    initialize = function(now, dynamic, colour) {
      private$now <- now
      private$dynamic <- dynamic
      private$colour <- colour
    },
    wants_updates = function() private$get_verbose() == 1,
    on_train_begin = function(logs = NULL) {
      private$called_in_fit <- TRUE
      # What the console can do is read here, before epoch 1 starts: the
      # first look loads the cli namespace (~40 ms on a 2-core Xeon), which
      # inside on_epoch_begin counted in epoch 1's time.
      private$terminal_features()
      invisible(NULL)
    },
    on_epoch_begin = function(epoch, logs = NULL) {
      private$reset()
      private$maybe_init()
      epochs <- self$params$epochs
      if (private$get_verbose() != 0 && !is.null(epochs) && epochs > 1) {
        cat(sprintf("Epoch %d/%d\n", as.integer(epoch), as.integer(epochs)))
      }
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      private$finish(logs)
      invisible(NULL)
    },
    on_test_begin = function(logs = NULL) {
      private$in_test <- TRUE
      if (!private$called_in_fit) {
        private$reset()
        private$maybe_init()
      }
      invisible(NULL)
    },
    on_test_end = function(logs = NULL) {
      private$in_test <- FALSE
      if (!private$called_in_fit) private$finish(logs)
      invisible(NULL)
    },
    on_predict_begin = function(logs = NULL) {
      private$reset()
      private$maybe_init()
      invisible(NULL)
    },
    on_predict_end = function(logs = NULL) {
      private$finish(NULL)
      invisible(NULL)
    },
    # Progress of the running phase: `current` steps done (1-based count),
    # `logs` the running metrics. Validation inside fit() is silent.
    update = function(current, logs = NULL) {
      if (private$in_test && private$called_in_fit) return(invisible(NULL))
      private$maybe_init()
      private$seen <- as.integer(current)
      if (private$get_verbose() == 1) {
        cat(progbar_update(private$progbar, current, logs, finalize = FALSE), sep = "")
      }
      invisible(NULL)
    }
  ),
  private = list(
    now = NULL, dynamic = NULL, colour = NULL, terminal = NULL,
    called_in_fit = FALSE, in_test = FALSE,
    progbar = NULL, seen = 0L,
    get_verbose = function() {
      v <- self$params$verbose
      if (is.null(v) || identical(v, "auto")) return(1L)
      as.integer(v)
    },
    reset = function() {
      private$seen <- 0L
      private$progbar <- NULL
    },
    maybe_init = function() {
      if (is.null(private$progbar)) {
        term <- private$terminal_features()
        private$progbar <- new_progbar(
          target = self$params$steps,
          verbose = private$get_verbose(),
          now = private$now,
          dynamic = term$dynamic,
          colour = term$colour
        )
      }
    },
    # Whether the console redraws in place and shows colour: read once per
    # logger (one fit(), evaluate() or predict() call). verbose = 0 prints
    # nothing, so it never consults the console (nor loads cli).
    terminal_features = function() {
      if (is.null(private$terminal)) {
        quiet <- private$get_verbose() == 0
        private$terminal <- list(
          dynamic = if (!is.null(private$dynamic)) private$dynamic else !quiet && progbar_is_dynamic(),
          colour = if (!is.null(private$colour)) private$colour else !quiet && progbar_has_colour()
        )
      }
      private$terminal
    },
    # (not named `finalize`: R6 would run that as the GC finalizer)
    finish = function(logs) {
      private$maybe_init()
      pb <- private$progbar
      if (is.null(pb$target)) pb$target <- private$seen
      cat(progbar_update(pb, pb$target, logs, finalize = TRUE), sep = "")
    }
  )
)
