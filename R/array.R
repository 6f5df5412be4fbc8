#' Reshape an array in row-major (C) order
#'
#' As keras3's (NumPy's) `array_reshape()`: with `order = "C"` the last index
#' varies fastest, so `array_reshape(x, c(-1, 784))` turns `n x 28 x 28`
#' images into rows of 784 pixels read row by row. This differs from
#' `dim<-`, which reshapes in column-major order (`order = "F"`). One
#' dimension may be `-1`: it is inferred. Integer arrays stay integer.
#'
#' @param x An array (or vector).
#' @param dim The new dimensions.
#' @param order `"C"` (row-major, the default) or `"F"` (column-major).
#' @return An array with dimensions `dim`.
#' @family utilities
#' @seealso [dataset_mnist_sample()]
#' @examples
#' x <- array(1:6, c(2, 3))
#' array_reshape(x, c(3, 2))
#' array_reshape(x, c(-1), order = "F")
#' @export
array_reshape <- function(x, dim, order = c("C", "F")) {
  order <- match.arg(order)
  if (!(is.numeric(x) || is.logical(x))) abort_value("{.arg x} must be a numeric array, not {describe(x)}.")
  if (!is.numeric(dim) || length(dim) < 1 || anyNA(dim) || any(dim != round(dim)) || any(dim < -1) ||
      sum(dim == -1) > 1) {
    abort_value("{.arg dim} must be whole numbers >= 0 with at most one -1, not {describe(dim)}.")
  }
  n <- length(x)
  if (any(dim == -1)) {
    known <- prod(dim[dim != -1])
    if (known == 0 || n %% known != 0) {
      abort_value("Cannot reshape {n} values into ({paste(dim, collapse = ', ')}).")
    }
    dim[dim == -1] <- n %/% known
  }
  if (prod(dim) != n) abort_value("Cannot reshape {n} values into ({paste(dim, collapse = ', ')}).")
  dim <- as.integer(dim)
  if (order == "F") return(array(as.vector(x), dim))
  d <- base::dim(x) %||% length(x)
  # Row-major values of x, then filled in row-major order into `dim`.
  flat <- if (length(d) > 1) as.vector(aperm(x, rev(seq_along(d)))) else as.vector(x)
  if (length(dim) == 1) return(array(flat, dim))
  aperm(array(flat, rev(dim)), rev(seq_along(dim)))
}

# Rounds a double to the nearest float32 value (Keras compares the learning
# rate with `np.float32(min_lr)`; .keras configs store float32 values).
as_float32 <- function(x) {
  readBin(writeBin(as.numeric(x), raw(), size = 4L), "double", n = 1L, size = 4L)
}
