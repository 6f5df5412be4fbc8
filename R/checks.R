# Argument checks at the R boundary. Each names the argument, what was
# expected and what was given, and raises mirrored_value_error.

check_int <- function(x, arg, min = -Inf, max = Inf, null_ok = FALSE, call = sys.call(-1)) {
  if (is.null(x) && null_ok) return(NULL)
  ok <- is.numeric(x) && length(x) == 1 && !is.na(x) && is.finite(x) && x == round(x) &&
    x >= min && x <= max
  if (!ok) {
    range <- if (is.finite(max)) paste0(" between ", min, " and ", max) else
      if (is.finite(min)) paste0(" >= ", min) else ""
    abort_value("{.arg {arg}} must be a whole number{range}, not {describe(x)}.", call = call)
  }
  as.integer(x)
}

check_num <- function(x, arg, min = -Inf, max = Inf, null_ok = FALSE, min_open = FALSE,
                      max_open = FALSE, call = sys.call(-1)) {
  if (is.null(x) && null_ok) return(NULL)
  ok <- is.numeric(x) && length(x) == 1 && !is.na(x) && is.finite(x) &&
    (if (min_open) x > min else x >= min) && (if (max_open) x < max else x <= max)
  if (!ok) {
    lo <- if (min_open) "(" else "["
    hi <- if (max_open) ")" else "]"
    abort_value("{.arg {arg}} must be a number in {lo}{min}, {max}{hi}, not {describe(x)}.",
                call = call)
  }
  as.numeric(x)
}

check_bool <- function(x, arg, call = sys.call(-1)) {
  if (!(is.logical(x) && length(x) == 1 && !is.na(x))) {
    abort_value("{.arg {arg}} must be TRUE or FALSE, not {describe(x)}.", call = call)
  }
  x
}

check_string <- function(x, arg, null_ok = FALSE, call = sys.call(-1)) {
  if (is.null(x) && null_ok) return(NULL)
  if (!(is.character(x) && length(x) == 1 && !is.na(x))) {
    abort_value("{.arg {arg}} must be a single string, not {describe(x)}.", call = call)
  }
  x
}

check_choice <- function(x, arg, choices, call = sys.call(-1)) {
  check_string(x, arg, call = call)
  if (!x %in% choices) {
    abort_value(c("{.arg {arg}} must be one of {.val {choices}}, not {.val {x}}."), call = call)
  }
  x
}

# A seed for the core's Philox streams: the given one, or one drawn from R's
# RNG so that set.seed()/set_random_seed() make runs reproducible.
draw_seed <- function(seed = NULL, arg = "seed", call = sys.call(-1)) {
  if (!is.null(seed)) return(as.numeric(check_int(seed, arg, min = 0, call = call)))
  as.numeric(sample.int(.Machine$integer.max, 1L))
}
