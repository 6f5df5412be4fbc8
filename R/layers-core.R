#' Densely-connected layer
#'
#' `output = activation(dot(input, kernel) + bias)`, with `kernel` of shape
#' `(input_dim, units)`, as Keras' `Dense`.
#'
#' @param object What to compose the layer with: missing (the layer is
#'   returned), a symbolic tensor from [keras_input()] (the layer is applied
#'   to it) or a sequential model (the layer is added to it).
#' @param units Positive integer, dimensionality of the output.
#' @param activation Name of the activation (`"relu"`, `"softmax"`, ...; see
#'   [layer_activation()]), one of the [activations] functions
#'   (`activation_relu`, ...), an R function of a tensor written with
#'   `op_*` functions (traced once, as a [Layer()]'s `call()`; give it to
#'   [register_keras_serializable()] to save it by name), or `NULL` (none).
#' @param use_bias Whether the layer has a bias vector.
#' @param kernel_initializer,bias_initializer Initializer objects or names,
#'   see [initializer_glorot_uniform()].
#' @param kernel_regularizer,bias_regularizer,activity_regularizer Regularizers
#'   of the kernel, the bias and the layer's output (see [regularizer_l2()]),
#'   or `NULL`.
#' @param kernel_constraint,bias_constraint Constraints of the kernel and the
#'   bias (see [constraint_maxnorm()]), or `NULL`.
#' @param ... `name` (a string), `dtype` (a dtype policy: `"float32"`,
#'   `"mixed_bfloat16"` or `"mixed_float16"`; default the global one, see
#'   [config_set_dtype_policy()]) and, for the first layer of a sequential
#'   model, `input_shape`.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [keras_model()], [keras_model_sequential()]
#' @examples
#' inputs <- keras_input(shape = 784)
#' outputs <- inputs |> layer_dense(units = 10, activation = "softmax")
#' model <- keras_model(inputs, outputs)
#' @export
layer_dense <- function(object, units, activation = NULL, use_bias = TRUE,
                        kernel_initializer = "glorot_uniform", bias_initializer = "zeros",
                        kernel_regularizer = NULL, bias_regularizer = NULL,
                        activity_regularizer = NULL, kernel_constraint = NULL,
                        bias_constraint = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  options <- weight_option_configs(list(kernel_regularizer = kernel_regularizer,
                                        bias_regularizer = bias_regularizer,
                                        activity_regularizer = activity_regularizer,
                                        kernel_constraint = kernel_constraint,
                                        bias_constraint = bias_constraint))
  units <- check_int(units, "units", min = 1)
  check_bool(use_bias, "use_bias")
  k <- as_initializer(kernel_initializer, "kernel_initializer")
  b <- as_initializer(bias_initializer, "bias_initializer")
  if (is_activation_function(activation)) {  # an R function (R/layers-activation-functions.R)
    return(dense_with_activation_function(if (missing(object)) NULL else object, units, activation, use_bias,
                                          k, b, options, dots))
  }
  activation <- check_activation(activation)
  layer <- new_layer("Dense", c(list(units = units, activation = activation, use_bias = use_bias,
                                     kernel_initializer = initializer_keras_config(k),
                                     bias_initializer = initializer_keras_config(b)), options),
                     dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Apply an activation function
#'
#' @inheritParams layer_dense
#' @param activation Name of the activation (`"relu"`, `"sigmoid"`, `"tanh"`,
#'   `"softmax"`, `"gelu"`, `"linear"`, `"elu"`, `"selu"`, `"silu"` or
#'   `"swish"`, `"leaky_relu"`, `"relu6"`, `"softplus"`, `"softsign"`,
#'   `"hard_sigmoid"`, `"hard_silu"` or `"hard_swish"`, `"exponential"`,
#'   `"mish"`, `"log_softmax"`), one of the [activations] functions
#'   (`activation_relu`, ...), or an R function of a tensor (see
#'   [layer_dense()]).
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [layer_dense()]
#' @examples
#' keras_input(shape = 3) |> layer_activation("relu")
#' @export
layer_activation <- function(object, activation, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (is_activation_function(activation)) {  # an R function (R/layers-activation-functions.R)
    return(activation_with_function(if (missing(object)) NULL else object, activation, dots))
  }
  activation <- check_activation(activation)
  layer <- new_layer("Activation", list(activation = activation), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Dropout
#'
#' During training, sets a random fraction `rate` of its inputs to 0 and
#' scales the others by `1 / (1 - rate)`; at inference it passes inputs
#' through. Masks are drawn from a counter-based generator keyed by the
#' seed, the training step and the sample's position in the global batch,
#' so they do not depend on the number of replicas.
#'
#' @inheritParams layer_dense
#' @param rate Fraction of the inputs to drop, in \[0, 1).
#' @param noise_shape Not supported yet; must be `NULL`.
#' @param seed Integer seed, or `NULL` to draw one from R's generator.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [layer_dense()]
#' @examples
#' keras_input(shape = 8) |> layer_dropout(rate = 0.2, seed = 1)
#' @export
layer_dropout <- function(object, rate, noise_shape = NULL, seed = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  rate <- check_num(rate, "rate", min = 0, max = 1, max_open = TRUE)
  if (!is.null(noise_shape)) abort_value("{.arg noise_shape} is not supported yet; use NULL.")
  # An unseeded layer gets its seed now, written into its config, so that a
  # saved and reloaded model draws the same masks.
  layer <- new_layer("Dropout", list(rate = rate, seed = as.integer(draw_seed(seed))), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Flatten the input
#'
#' Turns each sample into a vector in row-major (C) order, as Keras does;
#' the batch dimension is kept.
#'
#' @inheritParams layer_dense
#' @param data_format Only `NULL` or `"channels_last"` is supported.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [layer_dense()]
#' @examples
#' keras_input(shape = c(28, 28)) |> layer_flatten()
#' @export
layer_flatten <- function(object, data_format = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (!is.null(data_format) && !identical(data_format, "channels_last")) {
    abort_value("{.arg data_format} must be NULL or \"channels_last\", not {describe(data_format)}.")
  }
  layer <- new_layer("Flatten", list(), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

activation_names <- c("linear", "relu", "sigmoid", "tanh", "softmax", "gelu",
                      "elu", "selu", "silu", "swish", "leaky_relu", "relu6", "softplus",
                      "softsign", "hard_sigmoid", "hard_silu", "hard_swish", "exponential",
                      "mish", "log_softmax")

# An activation name, or one of mirrored's activation_*() functions (which
# carries its name); NULL is "linear".
check_activation <- function(activation, call = sys.call(-1)) {
  if (is.null(activation)) return("linear")
  if (is.function(activation)) {
    name <- attr(activation, "mirrored_activation", exact = TRUE)
    if (is.null(name)) {
      abort_not_yet(c("{.arg activation}: an R function as the activation of this layer is not supported yet ({.fn layer_dense} and {.fn layer_activation} take one).",
                      "i" = "Use a name ({.val relu}, ...), one of mirrored's {.fn activation_relu}, ... functions, or follow the layer with {.code layer_activation(activation = fn)}."),
                    call = call)
    }
    return(name)
  }
  if (!(is.character(activation) && length(activation) == 1 && activation %in% activation_names)) {
    abort_value("{.arg activation} must be one of {.val {activation_names}}, not {describe(activation)}.",
                call = call)
  }
  activation
}

layer_dots <- function(dots, call = sys.call(-1)) {
  known <- c("name", "input_shape", "trainable", "dtype")
  bad <- setdiff(names(dots) %||% rep("", length(dots)), known)
  if (length(dots) && (is.null(names(dots)) || any(names(dots) == ""))) bad <- c(bad, "<unnamed>")
  if (length(bad)) abort_value("Unknown argument{?s} {.arg {bad}}.", call = call)
  if (!is.null(dots$name)) check_string(dots$name, "name", call = call)
  if (!is.null(dots$input_shape)) check_variable_axes(dots$input_shape, "input_shape", call = call)
  if (!is.null(dots$input_shape)) dots$input_shape <- check_shape(dots$input_shape, "input_shape", na_ok = TRUE, call = call)
  if (!is.null(dots$trainable)) check_trainable_value(dots$trainable, call = call)
  # A policy name or object (R/mixed-precision.R), kept as its name.
  if (!is.null(dots$dtype)) dots$dtype <- check_dtype_policy(dots$dtype, call_name(call), "dtype", call = call)
  dots
}

# na_ok: NA (a variable-length axis: check_variable_axes()) is allowed.
check_shape <- function(shape, arg, na_ok = FALSE, call = sys.call(-1)) {
  if (is.list(shape)) shape <- shape_dims(shape)  # NULL stays an (unknown) NA
  if (na_ok && is.logical(shape) && length(shape) && all(is.na(shape))) shape <- as.numeric(shape)
  known <- shape[!is.na(shape)]
  ok <- is.numeric(shape) && length(shape) >= 1 && (na_ok || !anyNA(shape)) && all(known >= 1) &&
    all(known == round(known))
  if (!ok) {
    what <- if (na_ok) "positive whole numbers (or {.code NA} for a variable length)" else "positive whole numbers"
    abort_value(paste0("{.arg {arg}} must be a vector of ", what, ", not {describe(shape)}."), call = call)
  }
  as.integer(shape)
}

`%||%` <- function(a, b) if (is.null(a)) b else a
