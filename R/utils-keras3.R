#' An array of a given dtype
#'
#' keras3's `np_array()` (reticulate's) makes a NumPy array; mirrored takes R
#' arrays everywhere, so `np_array()` returns an R array holding the values
#' as the dtype would: floating dtypes as doubles (mirrored computes in
#' float32 and converts when a batch is copied), integer dtypes as integers
#' (values must be whole and in the dtype's range), `"bool"` as logicals.
#' Dimensions and dimnames are kept. `order` is accepted for keras3 code: an
#' R array has one memory order, and [array_reshape()] reads it in C order.
#'
#' @param data A numeric, integer or logical vector or array.
#' @param dtype `NULL` (keep the values' type: doubles stay doubles) or one
#'   of `"float16"`, `"float32"`, `"float64"`, `"bfloat16"`, `"int8"`,
#'   `"int16"`, `"int32"`, `"int64"`, `"uint8"`, `"uint16"`, `"uint32"`,
#'   `"bool"`.
#' @param order `"C"`, `"F"`, `"A"` or `"K"` (NumPy's memory orders; no
#'   effect on an R array).
#' @returns `data` as an array of that dtype's R type.
#' @family utilities
#' @examples
#' np_array(matrix(c(1, 2, 3, 4), 2), "float32")
#' np_array(c(0, 1, 255), "uint8")
#' @export
np_array <- function(data, dtype = NULL, order = "C") {
  if (!(is.numeric(data) || is.logical(data)))
    abort_value("{.arg data} must be a numeric, integer or logical vector or array, not {describe(data)}.")
  if (!(is.character(order) && length(order) == 1 && order %in% c("C", "F", "A", "K")))
    abort_value("{.arg order} must be one of \"C\", \"F\", \"A\" or \"K\", not {describe(order)}.")
  if (is.null(dtype)) return(data)
  ranges <- list(int8 = c(-128, 127), int16 = c(-32768, 32767),
                 int32 = c(-2147483647, 2147483647), int64 = c(-2^53, 2^53),
                 uint8 = c(0, 255), uint16 = c(0, 65535), uint32 = c(0, 4294967295))
  floats <- c("float16", "float32", "float64", "bfloat16")
  known <- c(floats, names(ranges), "bool")
  if (!(is.character(dtype) && length(dtype) == 1 && dtype %in% known))
    abort_value(c("{.arg dtype} must be NULL or one of {.val {known}}, not {describe(dtype)}."))
  out <- data
  if (dtype %in% floats) {
    storage.mode(out) <- "double"
  } else if (dtype == "bool") {
    if (anyNA(data)) abort_value("{.arg data} has NA values, which {.val bool} cannot hold.")
    storage.mode(out) <- "logical"
  } else {
    r <- ranges[[dtype]]
    v <- as.double(data)
    bad <- is.na(v) | v != round(v) | v < r[[1]] | v > r[[2]]
    if (any(bad)) {
      i <- which(bad)[[1]]
      abort_value("{.arg data} must hold whole numbers in {r[[1]]}..{r[[2]]} for dtype {.val {dtype}}; element {i} is {v[[i]]}.")
    }
    # int32's range and beyond: R integers hold up to 2^31 - 1.
    storage.mode(out) <- if (all(abs(v) <= .Machine$integer.max)) "integer" else "double"
  }
  out
}

#' Zip lists together
#'
#' keras3's `zip_lists()`: the transpose of a list of lists.
#' `zip_lists(list(a1, a2), list(b1, b2))` is `list(list(a1, b1), list(a2, b2))`.
#' When the arguments are named alike, elements are matched by name (in the
#' first argument's order) and the result takes those names; otherwise by
#' position. A single argument is a list of the lists to zip.
#'
#' @param ... Lists of equal length, or one list of such lists.
#' @returns A list with one element per position (or name), each a list of
#'   the arguments' elements there.
#' @family utilities
#' @examples
#' str(zip_lists(list(1, 2), list("a", "b")))
#' str(zip_lists(list(x = 1, y = 2), list(y = "b", x = "a")))
#' @export
zip_lists <- function(...) {
  args <- list(...)
  if (length(args) == 1) {
    if (!is.list(args[[1]]))
      abort_value("{.fn zip_lists} with one argument takes a list of lists, not {describe(args[[1]])}.")
    args <- args[[1]]
  }
  if (!length(args)) return(list())
  if (!all(vapply(args, function(a) is.list(a) || is.atomic(a), logical(1))))
    abort_value("{.fn zip_lists} takes lists (or vectors); got {describe(Find(function(a) !(is.list(a) || is.atomic(a)), args))}.")
  n <- lengths(args)
  if (length(unique(n)) != 1)
    abort_value("{.fn zip_lists}'s arguments must have the same length, not {n}.")
  first <- names(args[[1]])
  if (!is.null(first)) {
    if (anyNA(first) || !all(nzchar(first)) || anyDuplicated(first))
      abort_value("{.fn zip_lists}: the names of the first argument must be unique and non-empty; call {.fn unname} to match by position.")
    for (i in seq_along(args)[-1]) {
      nm <- names(args[[i]])
      if (identical(nm, first)) next
      if (is.null(nm) || !setequal(nm, first))
        abort_value("{.fn zip_lists}: argument {i} is not named as the first one; call {.fn unname} on each argument to match by position.")
      args[[i]] <- args[[i]][first]
    }
  }
  out <- lapply(seq_len(n[[1]]), function(k) lapply(args, function(a) a[[k]]))
  names(out) <- first
  out
}
