# Activation functions as keras3 exports them. Each one, on an R numeric
# array, computes eagerly through the core's CPU activation op
# (src/r_activation.cpp: the same code a model trains with, in float32); on
# a symbolic tensor applies an activation layer; and, passed as a value
# (`activation = activation_relu`), stands for its Keras name. The name
# rides on the function as the attribute "mirrored_activation".

# The activation `name` (with parameters) applied to `x`. `layer`: the layer
# class and config for a parametrised form on a symbolic tensor (NULL: an
# Activation layer of `name`). `row_wise`: softmax-like, over the last axis.
apply_activation <- function(x, name, alpha = NA_real_, max_value = NA_real_, threshold = 0,
                             layer = NULL, row_wise = FALSE, call = sys.call(-1)) {
  if (missing(x)) abort_value("{.arg x} is required.", call = call)
  if (is_keras_tensor(x)) {
    l <- if (is.null(layer)) new_layer("Activation", list(activation = name), list(), call = call)
         else new_layer(layer$class_name, layer$config, list(), call = call)
    return(call_layer(l, x, call = call))
  }
  if (!(is.numeric(x) || is.logical(x))) {
    abort_value("{.arg x} must be a numeric array or a symbolic tensor, not {describe(x)}.", call = call)
  }
  d <- dim(x)
  k <- length(d)
  if (!row_wise || k <= 1) {
    cols <- if (row_wise) length(x) else 1
    y <- with_core(cpp_activation(name, as.double(x), length(x) / max(cols, 1), cols,
                                  alpha, max_value, threshold), call = call)
    if (length(x) == 0) y <- numeric(0)
    dim(y) <- d
    dimnames(y) <- dimnames(x)
    return(y)
  }
  # Row-wise over the last axis: R arrays are column-major, so the last axis
  # is moved first (contiguous) and moved back after.
  perm <- c(k, seq_len(k - 1))
  xt <- aperm(x, perm)
  y <- with_core(cpp_activation(name, as.double(xt), length(x) / d[k], d[k], alpha, max_value,
                                threshold), call = call)
  dim(y) <- dim(xt)
  y <- aperm(y, order(perm))
  dimnames(y) <- dimnames(x)
  y
}

# softmax / log_softmax take the last axis only (keras3: -1, or its 1-based number).
check_last_axis <- function(x, axis, call = sys.call(-1)) {
  axis <- check_int(axis, "axis", call = call)
  rank <- if (is_keras_tensor(x)) length(x$shape) + 1L else max(1L, length(dim(x)))
  if (axis != -1L && axis != rank) {
    abort_not_yet("{.arg axis} = {axis} is not supported yet; only the last axis (-1) is.", call = call)
  }
  invisible()
}

as_activation <- function(f, name) structure(f, mirrored_activation = name)

#' Activation functions
#'
#' keras3's activation functions. On an R numeric array (or vector) they
#' compute eagerly, in float32, with the same code a model trains with, and
#' return an array of the same dimensions; on a symbolic tensor they apply an
#' activation layer; passed as a value (`activation = activation_relu`) they
#' name their activation wherever an activation name is accepted.
#'
#' - `activation_relu()`: `x > threshold ? min(x, max_value) : 0` above the
#'   threshold, `negative_slope * (x - threshold)` below it.
#' - `activation_elu()`: `x > 0 ? x : alpha * (exp(x) - 1)`.
#' - `activation_selu()`: `scale * elu(x, alpha)` with Keras' constants
#'   `alpha = 1.67326324`, `scale = 1.05070098`.
#' - `activation_silu()`: `x * sigmoid(x)` (Keras' `"swish"` too).
#' - `activation_leaky_relu()`: `x >= 0 ? x : negative_slope * x`.
#' - `activation_relu6()`: `min(max(x, 0), 6)`.
#' - `activation_softplus()`: `log(1 + exp(x))`, computed stably.
#' - `activation_softsign()`: `x / (1 + |x|)`.
#' - `activation_hard_sigmoid()`: `relu6(x + 3) / 6`.
#' - `activation_hard_silu()`, `activation_hard_swish()`: `x * hard_sigmoid(x)`.
#' - `activation_exponential()`: `exp(x)`.
#' - `activation_mish()`: `x * tanh(softplus(x))`.
#' - `activation_softmax()`, `activation_log_softmax()`: over the last axis
#'   (other axes are a `mirrored_not_yet_error`).
#' - `activation_sigmoid()`, `activation_tanh()`, `activation_linear()`.
#' - `activation_gelu()`: the exact `x * Phi(x)`; `approximate = TRUE` (the
#'   tanh form) is a `mirrored_not_yet_error`.
#'
#' @param x An R numeric array or vector, or a symbolic tensor.
#' @param negative_slope Slope below the threshold (relu; default 0) or
#'   below 0 (leaky_relu; default 0.2).
#' @param max_value Upper bound of relu, or `NULL` for none.
#' @param threshold relu's threshold.
#' @param alpha elu's scale of the negative part.
#' @param axis The axis of softmax / log_softmax: the last one, `-1`.
#' @param approximate Must be `FALSE` (gelu's exact form).
#' @return An array like `x`, or a symbolic tensor.
#' @family activations
#' @seealso [layer_activation()], [layer_activation_relu()]
#' @examples
#' activation_relu(c(-2, 0.5, 8), max_value = 6)
#' activation_softmax(matrix(c(1, 2, 3, 1, 1, 1), 2, byrow = TRUE))
#' x <- keras_input(shape = 4)
#' y <- x |> layer_dense(4, activation = activation_silu)
#' @name activations
NULL

#' @rdname activations
#' @export
activation_relu <- as_activation(function(x, negative_slope = 0, max_value = NULL, threshold = 0) {
  negative_slope <- check_num(negative_slope, "negative_slope", min = 0)
  max_value <- check_num(max_value, "max_value", min = 0, null_ok = TRUE)
  threshold <- check_num(threshold, "threshold", min = 0)
  plain <- negative_slope == 0 && is.null(max_value) && threshold == 0
  layer <- if (!plain) list(class_name = "ReLU", config = list(
    max_value = max_value, negative_slope = negative_slope, threshold = threshold))
  apply_activation(x, "relu", negative_slope, max_value %||% NA_real_, threshold, layer = layer)
}, "relu")

#' @rdname activations
#' @export
activation_elu <- as_activation(function(x, alpha = 1) {
  alpha <- check_num(alpha, "alpha")
  layer <- if (alpha != 1) list(class_name = "ELU", config = list(alpha = alpha))
  apply_activation(x, "elu", alpha = alpha, layer = layer)
}, "elu")

#' @rdname activations
#' @export
activation_selu <- as_activation(function(x) apply_activation(x, "selu"), "selu")

#' @rdname activations
#' @export
activation_silu <- as_activation(function(x) apply_activation(x, "silu"), "silu")

#' @rdname activations
#' @export
activation_leaky_relu <- as_activation(function(x, negative_slope = 0.2) {
  negative_slope <- check_num(negative_slope, "negative_slope", min = 0)
  layer <- if (negative_slope != 0.2) {
    list(class_name = "LeakyReLU", config = list(negative_slope = negative_slope))
  }
  apply_activation(x, "leaky_relu", alpha = negative_slope, layer = layer)
}, "leaky_relu")

#' @rdname activations
#' @export
activation_relu6 <- as_activation(function(x) apply_activation(x, "relu6"), "relu6")

#' @rdname activations
#' @export
activation_softplus <- as_activation(function(x) apply_activation(x, "softplus"), "softplus")

#' @rdname activations
#' @export
activation_softsign <- as_activation(function(x) apply_activation(x, "softsign"), "softsign")

#' @rdname activations
#' @export
activation_hard_sigmoid <- as_activation(function(x) apply_activation(x, "hard_sigmoid"),
                                         "hard_sigmoid")

#' @rdname activations
#' @export
activation_hard_silu <- as_activation(function(x) apply_activation(x, "hard_silu"), "hard_silu")

#' @rdname activations
#' @export
activation_hard_swish <- as_activation(function(x) apply_activation(x, "hard_silu"), "hard_silu")

#' @rdname activations
#' @export
activation_exponential <- as_activation(function(x) apply_activation(x, "exponential"),
                                        "exponential")

#' @rdname activations
#' @export
activation_mish <- as_activation(function(x) apply_activation(x, "mish"), "mish")

#' @rdname activations
#' @export
activation_softmax <- as_activation(function(x, axis = -1L) {
  if (!missing(x)) check_last_axis(x, axis)
  apply_activation(x, "softmax", row_wise = TRUE)
}, "softmax")

#' @rdname activations
#' @export
activation_log_softmax <- as_activation(function(x, axis = -1L) {
  if (!missing(x)) check_last_axis(x, axis)
  apply_activation(x, "log_softmax", row_wise = TRUE)
}, "log_softmax")

#' @rdname activations
#' @export
activation_sigmoid <- as_activation(function(x) apply_activation(x, "sigmoid"), "sigmoid")

#' @rdname activations
#' @export
activation_tanh <- as_activation(function(x) apply_activation(x, "tanh"), "tanh")

#' @rdname activations
#' @export
activation_gelu <- as_activation(function(x, approximate = FALSE) {
  check_bool(approximate, "approximate")
  if (approximate) {
    abort_not_yet("{.arg approximate} = TRUE (the tanh approximation of gelu) is not supported yet.")
  }
  apply_activation(x, "gelu")
}, "gelu")

#' @rdname activations
#' @export
activation_linear <- as_activation(function(x) apply_activation(x, "linear"), "linear")
