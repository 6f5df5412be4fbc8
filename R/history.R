# The training history: a callback that records the epoch logs, and the S3
# class `keras_training_history` that fit() returns (print, plot,
# as.data.frame), shaped like keras3's.

# `.data` is the tidy-evaluation pronoun of ggplot2's aes() (ggplot2 is only
# suggested, so it cannot be imported).
utils::globalVariables(".data")

#' The history callback fit() puts after the user's callbacks
#'
#' Records each epoch's logs; `$history()` returns the
#' `keras_training_history`. Keys keep the order of their first appearance;
#' an epoch without a key (e.g. no validation that epoch) records `NA`.
#' @returns A callback instance.
#' @noRd
callback_history <- function() History$new()

History <- R6::R6Class("History",
  inherit = CallbackBase,
  public = list(
    epochs = integer(),
    metrics = list(),
    on_train_begin = function(logs = NULL) {
      self$epochs <- integer()
      self$metrics <- list()
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      logs <- normalize_logs(logs)
      self$epochs <- c(self$epochs, as.integer(epoch))
      n <- length(self$epochs)
      for (k in union(names(self$metrics), names(logs))) {
        old <- self$metrics[[k]]
        if (is.null(old)) old <- rep(NA_real_, n - 1L)
        v <- logs[[k]]
        v <- if (is.null(v)) NA_real_ else as.numeric(v)[[1]]
        self$metrics[[k]] <- c(old, v)
      }
      invisible(NULL)
    },
    history = function() {
      p <- self$params
      keras_training_history(
        params = list(verbose = p$verbose, epochs = p$epochs, steps = p$steps),
        metrics = self$metrics
      )
    }
  )
)

keras_training_history <- function(params, metrics) {
  structure(list(params = params, metrics = metrics),
            class = "keras_training_history")
}

#' Print a training history
#'
#' Prints the metrics of the last epoch trained, like keras3.
#' @param x A `keras_training_history` returned by `fit()`.
#' @param ... Unused.
#' @returns `x`, invisibly.
#' @export
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' h <- structure(list(
#'   params = list(verbose = 1, epochs = 2, steps = 10),
#'   metrics = list(loss = c(0.9, 0.5), val_loss = c(1.1, 0.7))
#' ), class = "keras_training_history")
#' h
print.keras_training_history <- function(x, ...) {
  n_trained <- if (length(x$metrics)) length(x$metrics[[1]]) else 0L
  epochs <- min(c(x$params$epochs, n_trained))
  out <- "\nFinal epoch (plot to see history):"
  if (length(x$metrics) && epochs > 0) {
    last <- lapply(x$metrics, function(m) m[[epochs]])
    labels <- names(last)
    labels <- formatC(labels, width = max(nchar(labels)))
    values <- prettyNum(last, big.mark = ",", digits = 4, scientific = FALSE)
    out <- paste0(out, "\n", paste0(labels, ": ", values, collapse = "\n"))
  }
  cat(out, "\n")
  invisible(x)
}

#' Convert a training history to a data frame
#'
#' One row per epoch and metric: columns `epoch`, `value`, `metric` (factor,
#' `val_` prefix removed) and `data` (factor `training`/`validation`).
#' Metrics are padded with `NA` up to the number of epochs requested (e.g.
#' after early stopping).
#' @param x A `keras_training_history`.
#' @param ... Unused.
#' @returns A data frame.
#' @export
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' h <- structure(list(
#'   params = list(verbose = 1, epochs = 3, steps = 10),
#'   metrics = list(loss = c(0.9, 0.5), val_loss = c(1.1, 0.7))
#' ), class = "keras_training_history")
#' as.data.frame(h)
as.data.frame.keras_training_history <- function(x, ...) {
  metric_names <- names(x$metrics)
  lens <- vapply(x$metrics, length, integer(1))
  n <- max(c(x$params$epochs, lens, 0L))
  values <- unlist(lapply(x$metrics, function(m) {
    c(as.numeric(m), rep(NA_real_, n - length(m)))
  }), use.names = FALSE)
  if (is.null(values)) values <- numeric()
  stripped <- sub("^val_", "", metric_names)
  df <- data.frame(
    epoch = rep(seq_len(n), times = length(metric_names)),
    value = values,
    metric = factor(rep(stripped, each = n), levels = unique(stripped)),
    data = factor(rep(grepl("^val_", metric_names), each = n),
                  levels = c(FALSE, TRUE), labels = c("training", "validation"))
  )
  rownames(df) <- NULL
  df
}

#' Plot a training history
#'
#' Plots the metrics recorded during training, one panel per metric with
#' training and validation values together.
#'
#' @param x A `keras_training_history` returned by `fit()`.
#' @param y Unused.
#' @param metrics Metrics to plot (e.g. `c("loss", "accuracy")`); default all.
#' @param method `"ggplot2"` (default when installed) or `"base"` graphics.
#' @param smooth Add a loess smooth (ggplot2 only, and only with 10 epochs
#'   or more).
#' @param theme_bw Use `ggplot2::theme_bw()` (ggplot2 only).
#' @param ... Passed to [plot()] for the base method.
#' @returns A ggplot object (ggplot2) or `NULL` invisibly (base).
#' @export
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' h <- structure(list(
#'   params = list(verbose = 1, epochs = 3, steps = 10),
#'   metrics = list(loss = c(0.9, 0.5, 0.4), val_loss = c(1.1, 0.7, 0.6))
#' ), class = "keras_training_history")
#' plot(h, method = "base")
plot.keras_training_history <- function(x, y, metrics = NULL,
                                        method = c("auto", "ggplot2", "base"),
                                        smooth = getOption("keras.plot.history.smooth", TRUE),
                                        theme_bw = getOption("keras.plot.history.theme_bw", FALSE),
                                        ...) {
  method <- match.arg(method)
  if (method == "auto") {
    method <- if (requireNamespace("ggplot2", quietly = TRUE)) "ggplot2" else "base"
  }
  if (method == "ggplot2" && !requireNamespace("ggplot2", quietly = TRUE)) {
    cli::cli_abort(
      c("{.code method = \"ggplot2\"} needs the {.pkg ggplot2} package.",
        i = "Install it or use {.code method = \"base\"}."),
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  smooth <- check_flag_arg(smooth, "smooth")
  theme_bw <- check_flag_arg(theme_bw, "theme_bw")
  df <- as.data.frame(x)
  if (is.null(metrics)) {
    metrics <- Filter(function(n) !grepl("^val_", n), names(x$metrics))
  }
  if (!is.character(metrics)) abort_arg("metrics", "a character vector", metrics)
  unknown <- setdiff(metrics, levels(df$metric))
  if (length(unknown)) {
    cli::cli_abort(
      c("{.arg metrics} must name recorded metrics.",
        x = "Not recorded: {.val {unknown}}.",
        i = "Recorded: {.val {levels(df$metric)}}."),
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  df <- df[df$metric %in% metrics, , drop = FALSE]
  df$metric <- factor(as.character(df$metric), levels = metrics)
  do_validation <- any(grepl("^val_", names(x$metrics)))
  epochs <- max(c(x$params$epochs, 0L))
  if (method == "ggplot2") {
    plot_history_ggplot(df, do_validation, smooth && epochs >= 10, theme_bw)
  } else {
    plot_history_base(df, metrics, do_validation, ...)
  }
}

plot_history_ggplot <- function(df, do_validation, smooth, theme_bw) {
  int_breaks <- function(r) {
    p <- pretty(r)
    p[p %% 1 == 0]
  }
  mapping <- if (do_validation) {
    if (theme_bw) {
      ggplot2::aes(x = .data$epoch, y = .data$value, colour = .data$data,
                   fill = .data$data, linetype = .data$data, shape = .data$data)
    } else {
      ggplot2::aes(x = .data$epoch, y = .data$value, colour = .data$data,
                   fill = .data$data)
    }
  } else {
    ggplot2::aes(x = .data$epoch, y = .data$value)
  }
  p <- ggplot2::ggplot(df, mapping)
  if (theme_bw) {
    p <- p + ggplot2::theme_bw() +
      ggplot2::geom_point(colour = "black", na.rm = TRUE, size = 2) +
      ggplot2::scale_shape(solid = FALSE)
  } else {
    p <- p + ggplot2::geom_point(shape = 21, colour = "black", na.rm = TRUE)
  }
  if (smooth) {
    smooth_args <- list(se = FALSE, method = "loess", formula = y ~ x, na.rm = TRUE)
    if (theme_bw) {
      smooth_args$linewidth <- 0.5
      smooth_args$colour <- "gray47"
    }
    p <- p + do.call(ggplot2::geom_smooth, smooth_args)
  }
  p +
    ggplot2::facet_grid(metric ~ ., switch = "y", scales = "free_y") +
    ggplot2::scale_x_continuous(breaks = int_breaks) +
    ggplot2::theme(
      axis.title.y = ggplot2::element_blank(),
      strip.placement = "outside",
      strip.text = ggplot2::element_text(colour = "black", size = 11),
      strip.background = ggplot2::element_rect(fill = NA, colour = NA)
    )
}

plot_history_base <- function(df, metrics, do_validation, ...) {
  op <- graphics::par(mfrow = c(length(metrics), 1), mar = c(3, 3, 2, 2))
  on.exit(graphics::par(op), add = TRUE)
  for (i in seq_along(metrics)) {
    metric <- metrics[[i]]
    top <- i == 1
    bottom <- i == length(metrics)
    graphics::par(mar = if (top) c(1.5, 3, 1.5, 1.5) else if (bottom)
      c(2.5, 3, 0.5, 1.5) else c(1.5, 3, 0.5, 1.5))
    d <- df[df$metric == metric, , drop = FALSE]
    graphics::plot(d$epoch, d$value, pch = c(1, 4)[as.integer(d$data)],
                   xaxt = if (bottom) "s" else "n", xlab = "epoch",
                   ylab = metric, ...)
    train <- d$value[d$data == "training"]
    train <- train[!is.na(train)]
    falling <- length(train) > 0 && train[[1]] > train[[length(train)]]
    where <- if (falling) "topright" else "bottomright"
    if (do_validation) {
      graphics::legend(where, legend = c(metric, paste0("val_", metric)), pch = c(1, 4))
    } else {
      graphics::legend(where, legend = metric, pch = 1)
    }
  }
  invisible(NULL)
}
