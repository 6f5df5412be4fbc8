# keras3's shape(): a tensor shape as a list of dimensions, NULL standing
# for an unknown one (the batch axis). Custom layers' build() receives one;
# add_weight() takes one.

#' Tensor shapes
#'
#' keras3's `shape()`: builds a shape from integers, `NA` or `NULL` (an
#' unknown dimension, such as the batch axis), other shapes and integer
#' vectors, flattened in order. `build(input_shape)` of a custom [Layer()]
#' receives one; `self$add_weight(shape = )` takes one.
#'
#' @param ... Dimensions: integers, `NA`/`NULL`, shapes, integer vectors,
#'   or a traced tensor, a symbolic tensor ([keras_input()]) or an array
#'   (its shape).
#' @return A `keras_shape`: a list of integers and `NULL`s. `as.integer()`
#'   gives the dims with `NA` for unknown ones.
#' @family layers
#' @examples
#' s <- shape(NA, 28, 28)
#' s
#' shape(tail(s, 1), 10)
#' as.integer(s)
#' shape(keras_input(c(3, 4)))
#' @export
shape <- function(...) {
  fix <- function(x) {
    if (inherits(x, "keras_shape")) return(lapply(x, function(d) d %||% NA_integer_))
    if (is_traced_tensor(x)) return(as.list(x$shape))
    if (is_keras_tensor(x)) return(as.list(c(NA_integer_, x$shape)))
    if (is.array(x)) return(as.list(dim(x)))
    if (is.null(x) || (length(x) == 1 && is.atomic(x) && is.na(x))) return(list(NA_integer_))
    if (is.list(x)) return(unlist(lapply(x, fix), recursive = FALSE))
    known <- x[!is.na(x)]
    if (!(is.numeric(x) || is.logical(x)) || any(known != round(known)) || any(known < -1)) {
      abort_value("Each dimension of {.fn shape} must be an integer, NA or NULL, not {describe(x)}.", call = NULL)
    }
    lapply(as.integer(x), function(d) if (is.na(d) || d == -1L) NA_integer_ else d)
  }
  dims <- unlist(lapply(list(...), fix), recursive = FALSE)
  structure(lapply(dims, function(d) if (is.na(d)) NULL else d), class = "keras_shape")
}

#' @export
format.keras_shape <- function(x, ...) {
  paste0("shape(", paste(vapply(unclass(x), function(d) if (is.null(d)) "NA" else format(d), ""),
                         collapse = ", "), ")")
}

#' @export
print.keras_shape <- function(x, ...) {
  cat(format(x), "\n", sep = "")
  invisible(x)
}

#' @export
`[.keras_shape` <- function(x, i) structure(unclass(x)[i], class = "keras_shape")

#' @export
as.integer.keras_shape <- function(x, ...) {
  vapply(unclass(x), function(d) if (is.null(d)) NA_integer_ else as.integer(d), integer(1))
}

#' @export
as.numeric.keras_shape <- function(x, ...) as.numeric(as.integer.keras_shape(x))

#' @export
as.double.keras_shape <- as.numeric.keras_shape

# Dimensions as text, "None" for an unknown (variable-length) one, as Keras
# prints shapes.
dim_text <- function(s) {
  if (!length(s)) return(character())
  ifelse(is.na(s), "None", format(as.numeric(s), scientific = FALSE, trim = TRUE))
}
