# Argument checks of the callback constructors.

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
