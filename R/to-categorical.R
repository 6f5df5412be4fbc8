#' Convert class indices to one-hot encoded targets
#'
#' As Keras' `keras.utils.to_categorical()`: `x` holds class indices
#' `0..num_classes - 1`; the result has the dimensions of `x` (a vector
#' counts as one dimension, and a trailing dimension of 1 is dropped) with
#' one more, of length `num_classes`, holding 1 at the class and 0 elsewhere.
#' A factor gives its 0-based level codes and, by default, one column per
#' level.
#'
#' @param x Integer class indices (a vector, matrix or array), or a factor.
#' @param num_classes Number of classes; default `max(x) + 1`.
#' @return A numeric matrix (`length(x)` x `num_classes` for a vector), or an
#'   array with the class axis last.
#' @family utils
#' @seealso [loss_categorical_crossentropy()], which takes such targets;
#'   [loss_sparse_categorical_crossentropy()] takes the indices directly.
#' @examples
#' to_categorical(c(0, 1, 2, 3), num_classes = 4)
#' to_categorical(matrix(c(0, 2, 1, 1), 2))
#' @export
to_categorical <- function(x, num_classes = NULL) {
  if (is.factor(x)) {
    if (is.null(num_classes)) num_classes <- nlevels(x)
    x <- array(as.integer(x) - 1L, dim = dim(x) %||% length(x))
  }
  if (is.data.frame(x)) x <- as.matrix(x)
  if (!(is.numeric(x) || is.logical(x)) || anyNA(x) || any(x != round(x)) || any(x < 0)) {
    abort_value("{.arg x} must hold class indices (whole numbers >= 0), not {describe(x)}.")
  }
  if (!is.null(num_classes)) num_classes <- check_int(num_classes, "num_classes", min = 1)
  num_classes <- num_classes %||% (if (length(x)) as.integer(max(x)) + 1L else 0L)
  if (length(x) && max(x) >= num_classes) {
    abort_value("{.arg x} holds class {max(x)}, but {.arg num_classes} is {num_classes} (classes are 0..{num_classes - 1}).")
  }
  d <- dim(x) %||% length(x)
  if (length(d) > 1 && d[length(d)] == 1) d <- d[-length(d)]
  n <- length(x)
  out <- matrix(0, nrow = n, ncol = num_classes)
  if (n) out[cbind(seq_len(n), as.integer(x) + 1L)] <- 1
  # R arrays are column-major: the class axis last is the last dimension.
  dim(out) <- c(d, num_classes)
  out
}
