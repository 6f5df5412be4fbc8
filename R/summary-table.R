# The box table of `summary(model)`, laid out as Keras 3 prints it
# (keras/src/utils/summary_utils.py rendered by rich with `show_lines = TRUE`
# and a heavy header box):
#
#   Model: "sequential"
#   ┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
#   ┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
#   ┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
#   │ dense (Dense)                   │ (None, 256)            │       200,960 │
#   ├─────────────────────────────────┼────────────────────────┼───────────────┤
#   ...
#   └─────────────────────────────────┴────────────────────────┴───────────────┘
#    Total params: 269,322 (1.03 MB)
#
# Column widths: Keras asks for widths int(p * L) - previous at positions
# p = (0.45, 0.80, 1) (sequential-like) or (0.30, 0.56, 0.74, 1) (with
# "Connected to"), L = min(88 or 108, terminal columns - 4). rich then fits
# the ncol + 1 border characters into L by taking them evenly off the
# columns (Python's round-half-even spreading, left to right). Each cell has
# one space of padding on both sides; text that does not fit wraps at spaces
# and an over-long word is cut with "…".

#' Format a model summary table like Keras 3
#'
#' @param model_name Model name.
#' @param rows data.frame with columns `name`, `class_name`, `output_shape`
#'   (string, e.g. `"(None, 784)"`), `params` (number; `NA` = unbuilt) and
#'   optionally `connected_to` (character; `NA` for none). The
#'   "Connected to" column is shown when any `connected_to` is not `NA`.
#' @param total,trainable,non_trainable Parameter counts.
#' @param optimizer_params Optimizer variable count, or `NULL` (optimizer not
#'   built: no line).
#' @param line_length Table width; default as Keras (88, or 108 with
#'   "Connected to", at most the terminal width - 4; 80 columns assumed
#'   when the output is not a terminal).
#' @param positions Column edges as fractions of `line_length`; `NULL`:
#'   Keras' defaults.
#' @param show_trainable Whether to add Keras' "Trainable" column (from
#'   `rows$trainable`: "Y", "N" or "-").
#' @param bytes Optional named numeric with `total`, `trainable`,
#'   `non_trainable`, `optimizer` sizes in bytes; default 4 bytes per
#'   parameter (float32).
#' @returns Character vector, one element per line.
#' @noRd
format_summary_table <- function(model_name, rows, total, trainable,
                                 non_trainable, optimizer_params = NULL,
                                 line_length = NULL, bytes = NULL, positions = NULL,
                                 show_trainable = FALSE) {
  check_string_arg(model_name, "model_name")
  if (!is.data.frame(rows)) abort_arg("rows", "a data frame", rows)
  missing_cols <- setdiff(c("name", "class_name", "output_shape", "params"), names(rows))
  if (length(missing_cols)) {
    cli::cli_abort(
      "{.arg rows} lacks column{?s} {.val {missing_cols}}.",
      class = c("mirrored_value_error", "mirrored_error")
    )
  }
  connected <- if ("connected_to" %in% names(rows)) as.character(rows$connected_to) else
    rep(NA_character_, nrow(rows))
  with_connections <- any(!is.na(connected))

  given_positions <- positions
  if (with_connections) {
    default_length <- 108L
    positions <- c(0.3, 0.56, 0.74, 1.0)
    header <- c("Layer (type)", "Output Shape", "Param #", "Connected to")
    align <- c("left", "left", "right", "left")
  } else {
    default_length <- 88L
    positions <- c(0.45, 0.80, 1.0)
    header <- c("Layer (type)", "Output Shape", "Param #")
    align <- c("left", "left", "right")
  }
  if (!is.null(given_positions)) positions <- given_positions
  if (show_trainable) {
    # Keras: 12 more characters, the columns scaled to 90 % and "Trainable" last.
    default_length <- default_length + 12L
    positions <- c(positions * 0.9, 1.0)
    header <- c(header, "Trainable")
    align <- c(align, "center")
  }
  if (length(positions) != length(header)) {
    abort_value("{.arg positions} must give {length(header) - show_trainable} column edge{?s} for this table, not {length(given_positions)}.",
                call = user_call())
  }
  if (is.null(line_length)) {
    line_length <- min(default_length, summary_terminal_columns() - 4L)
  }
  line_length <- check_number_arg(line_length, "line_length", min = 4 * length(header),
                                  whole = TRUE)
  inner <- summary_column_widths(line_length, positions)

  cells <- data.frame(
    layer = paste0(rows$name, " (", rows$class_name, ")"),
    shape = as.character(rows$output_shape),
    params = vapply(rows$params, function(p) {
      if (is.na(p)) "0 (unbuilt)" else format_count(p)
    }, ""),
    stringsAsFactors = FALSE
  )
  if (with_connections) cells$connected <- ifelse(is.na(connected), "-", connected)
  if (show_trainable) cells$trainable <- as.character(rows$trainable %||% rep("-", nrow(rows)))

  border <- function(left, mid, right, fill) {
    paste0(left, paste(strrep(fill, inner), collapse = mid), right)
  }
  lines <- c(
    sprintf('Model: "%s"', model_name),
    border("\u250f", "\u2533", "\u2513", "\u2501"),
    summary_row_lines(header, inner, align, "\u2503"),
    border("\u2521", "\u2547", "\u2529", "\u2501")
  )
  for (i in seq_len(nrow(cells))) {
    if (i > 1) lines <- c(lines, border("\u251c", "\u253c", "\u2524", "\u2500"))
    lines <- c(lines, summary_row_lines(unlist(cells[i, ]), inner, align, "\u2502"))
  }
  lines <- c(lines, border("\u2514", "\u2534", "\u2518", "\u2500"))

  size <- function(key, count) {
    b <- if (!is.null(bytes) && !is.null(bytes[[key]])) bytes[[key]] else 4 * count
    readable_memory_size(b)
  }
  lines <- c(
    lines,
    sprintf(" Total params: %s (%s)", format_count(total), size("total", total)),
    sprintf(" Trainable params: %s (%s)", format_count(trainable),
            size("trainable", trainable)),
    sprintf(" Non-trainable params: %s (%s)", format_count(non_trainable),
            size("non_trainable", non_trainable))
  )
  if (!is.null(optimizer_params)) {
    lines <- c(lines, sprintf(" Optimizer params: %s (%s)",
                              format_count(optimizer_params),
                              size("optimizer", optimizer_params)))
  }
  lines
}

summary_terminal_columns <- function() {
  cols <- suppressWarnings(as.integer(Sys.getenv("COLUMNS", "")))
  if (!is.na(cols) && cols > 0) return(cols)
  if (isTRUE(cli::is_dynamic_tty())) return(as.integer(cli::console_width()))
  80L # what Python's shutil.get_terminal_size() falls back to
}

# Widths between the border characters (padding included).
summary_column_widths <- function(line_length, positions) {
  requested <- diff(c(0L, as.integer(floor(positions * line_length))))
  # rich takes the ncol + 1 border characters evenly off the columns.
  excess <- length(requested) + 1L
  remaining_ratio <- length(requested)
  out <- requested
  for (i in seq_along(requested)) {
    take <- min(requested[[i]], round_half_even(excess / remaining_ratio))
    out[[i]] <- requested[[i]] - take
    excess <- excess - take
    remaining_ratio <- remaining_ratio - 1L
  }
  out
}

round_half_even <- function(x) {
  f <- floor(x)
  d <- x - f
  if (d > 0.5 || (d == 0.5 && f %% 2 == 1)) f + 1 else f
}

# Lines of one table row: cells wrapped to their width, padded by one space.
summary_row_lines <- function(texts, inner, align, sep) {
  content <- inner - 2L
  wrapped <- Map(wrap_cell, texts, content)
  height <- max(lengths(wrapped))
  vapply(seq_len(height), function(r) {
    parts <- vapply(seq_along(wrapped), function(j) {
      t <- if (r <= length(wrapped[[j]])) wrapped[[j]][[r]] else ""
      pad <- strrep(" ", content[[j]] - nchar(t))
      body <- switch(align[[j]],
        right = paste0(pad, t),
        center = {  # rich: the left half of the slack rounded down
          left <- (content[[j]] - nchar(t)) %/% 2L
          paste0(strrep(" ", left), t, strrep(" ", content[[j]] - nchar(t) - left))
        },
        paste0(t, pad))
      paste0(" ", body, " ")
    }, "")
    paste0(sep, paste(parts, collapse = sep), sep)
  }, "")
}

wrap_cell <- function(text, width) {
  if (nchar(text) <= width) return(text)
  words <- strsplit(text, " +")[[1]]
  words <- words[nzchar(words)]
  lines <- character()
  cur <- ""
  for (w in words) {
    if (!nzchar(cur)) {
      cur <- w
    } else if (nchar(cur) + 1L + nchar(w) <= width) {
      cur <- paste(cur, w)
    } else {
      lines <- c(lines, cur)
      cur <- w
    }
  }
  lines <- c(lines, cur)
  too_long <- nchar(lines) > width
  lines[too_long] <- paste0(substr(lines[too_long], 1L, width - 1L), "\u2026")
  lines
}

format_count <- function(n) {
  formatC(as.numeric(n), format = "f", digits = 0, big.mark = ",")
}

# Keras' readable_memory_size: units of 1024, two decimals.
readable_memory_size <- function(bytes) {
  units <- c("B", "KB", "MB", "GB", "TB", "PB")
  for (u in units) {
    if (bytes / 1024 < 1) return(sprintf("%.2f %s", bytes, u))
    bytes <- bytes / 1024
  }
  sprintf("%.2f %s", bytes, units[[length(units)]])
}
