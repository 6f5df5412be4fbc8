# The parametrised activation layers of keras3: ReLU, LeakyReLU, ELU and
# Softmax (the plain ones are layer_activation()).

#' Activation layers with parameters
#'
#' - `layer_activation_relu()`: Keras' `ReLU`, `x > threshold ? min(x,
#'   max_value) : 0` above the threshold and `negative_slope * (x - threshold)`
#'   below it.
#' - `layer_activation_leaky_relu()`: `LeakyReLU`, `x >= 0 ? x :
#'   negative_slope * x` (the layer's default slope is 0.3, as Keras 3's,
#'   where [activation_leaky_relu()]'s is 0.2).
#' - `layer_activation_elu()`: `ELU`, `x > 0 ? x : alpha * (exp(x) - 1)`.
#' - `layer_activation_softmax()`: `Softmax` over the last axis (other axes
#'   are a `mirrored_not_yet_error`).
#'
#' @inheritParams layer_dense
#' @param max_value Upper bound, or `NULL` for none (>= 0).
#' @param negative_slope Slope of the negative part (>= 0).
#' @param threshold Values below it are the negative part (>= 0).
#' @param alpha Scale of the negative part of ELU.
#' @param axis Softmax's axis, keras3-style: `-1` (the last axis) or its
#'   1-based number counting the batch axis.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family activation layers
#' @seealso [activations], [layer_activation()]
#' @examples
#' x <- keras_input(shape = 8)
#' y <- x |> layer_dense(8) |> layer_activation_relu(max_value = 6)
#' z <- x |> layer_dense(8) |> layer_activation_leaky_relu()
#' p <- x |> layer_dense(3) |> layer_activation_softmax()
#' @export
layer_activation_relu <- function(object, max_value = NULL, negative_slope = 0, threshold = 0, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  max_value <- check_num(max_value, "max_value", min = 0, null_ok = TRUE)
  negative_slope <- check_num(negative_slope, "negative_slope", min = 0)
  threshold <- check_num(threshold, "threshold", min = 0)
  layer <- new_layer("ReLU", list(max_value = max_value, negative_slope = negative_slope,
                                  threshold = threshold), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_activation_relu
#' @export
layer_activation_leaky_relu <- function(object, negative_slope = 0.3, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  negative_slope <- check_num(negative_slope, "negative_slope", min = 0)
  layer <- new_layer("LeakyReLU", list(negative_slope = negative_slope), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_activation_relu
#' @export
layer_activation_elu <- function(object, alpha = 1, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  alpha <- check_num(alpha, "alpha")
  layer <- new_layer("ELU", list(alpha = alpha), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_activation_relu
#' @export
layer_activation_softmax <- function(object, axis = -1L, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  axis <- check_int(axis, "axis")
  if (axis == 0L) abort_value("{.arg axis} is 1-based (1 is the batch axis); 0 is not an axis.")
  if (axis == 1L) abort_value("{.arg axis} = 1 is the batch axis.")
  layer <- new_layer("Softmax", list(axis = if (axis > 0L) axis - 1L else axis), dots)
  if (!missing(object) && (is_keras_tensor(object))) {
    rank <- length(object$shape) + 1L
    if (axis != -1L && axis != rank) {
      abort_not_yet("{.arg axis} = {axis} is not supported yet; only the last axis (-1) is.")
    }
  }
  compose_layer(if (missing(object)) NULL else object, layer)
}
