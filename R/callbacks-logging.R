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

# ---- callback_tensorboard() -----------------------------------------------------

#' TensorBoard logging (not supported yet)
#'
#' keras3's `callback_tensorboard()` writes TensorFlow event files, which
#' need TensorFlow's summary writer; mirrored does not write them yet. The
#' function takes keras3's arguments so that code written for keras3 fails
#' here with a clear `mirrored_not_yet_error` instead of an unknown-function
#' error: log the epochs with [callback_csv_logger()] (and plot the history
#' [fit.mirrored_model()] returns) instead.
#'
#' @param log_dir,histogram_freq,write_graph,write_images,write_steps_per_second,update_freq,profile_batch,embeddings_freq,embeddings_metadata
#'   keras3's arguments (see its documentation); none is used.
#' @returns Never returns: always raises a `mirrored_not_yet_error`.
#' @export
#' @family callbacks
#' @seealso [callback_csv_logger()]
#' @examples
#' tryCatch(callback_tensorboard("logs"), mirrored_not_yet_error = function(e) conditionMessage(e))
#' # instead:
#' cb <- callback_csv_logger(tempfile(fileext = ".csv"))
callback_tensorboard <- function(log_dir = "logs", histogram_freq = 0, write_graph = TRUE,
                                 write_images = FALSE, write_steps_per_second = FALSE,
                                 update_freq = "epoch", profile_batch = 0, embeddings_freq = 0,
                                 embeddings_metadata = NULL) {
  abort_not_yet(c("{.fn callback_tensorboard} is not supported yet: mirrored does not write TensorBoard event files.",
                  i = "Log each epoch with {.code callback_csv_logger(\"{log_dir}/training.csv\")} and {.code plot()} the history {.fn fit} returns."),
                call = sys.call())
}
