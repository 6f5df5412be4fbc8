#' 1-D and 2-D convolution layers
#'
#' `output = activation(conv(input, kernel) + bias)`, as Keras' `Conv1D` and
#' `Conv2D`, on channels-last inputs: `(batch, steps, channels)` for
#' `layer_conv_1d()`, `(batch, height, width, channels)` for
#' `layer_conv_2d()`. The kernel has Keras' shape
#' `(kernel_size..., channels / groups, filters)`, so weights move to and from
#' Keras `.keras` files unchanged. On the CPU the convolution runs as im2col
#' and a matrix product; on a GPU as im2col and cuBLAS.
#'
#' @inheritParams layer_dense
#' @param filters Positive integer, the number of output channels.
#' @param activation Name of the activation (`"relu"`, `"softmax"`, ...; see
#'   [layer_activation()]), one of the [activations] functions
#'   (`activation_relu`, ...), or `NULL` (none). An R function is not
#'   supported here yet: follow the layer with `layer_activation(activation = fn)`.
#' @param kernel_size The window's size: one positive integer (every spatial
#'   axis), or one per spatial axis (a vector or list).
#' @param strides The window's step: one positive integer, or one per axis.
#'   Values above 1 cannot be combined with a `dilation_rate` above 1.
#' @param padding `"valid"` (no padding: only windows that fit) or `"same"`
#'   (zeros around the input so that the output has `ceil(input / strides)`
#'   positions, half of them before, rounded down, as TensorFlow pads).
#'   `"causal"` (1-D) is not supported yet.
#' @param data_format `NULL` or `"channels_last"`; `"channels_first"` is not
#'   supported (mirrored computes channels-last only).
#' @param dilation_rate The spacing of the window's elements: one positive
#'   integer, or one per axis.
#' @param groups Positive integer dividing both `filters` and the input's
#'   channels: the channels are split into `groups` independent convolutions.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family convolutional layers
#' @seealso [layer_max_pooling_2d()], [layer_flatten()]
#' @examples
#' inputs <- keras_input(shape = c(28, 28, 1))
#' outputs <- inputs |>
#'   layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = "relu") |>
#'   layer_max_pooling_2d(pool_size = c(2, 2)) |>
#'   layer_flatten() |>
#'   layer_dense(units = 10, activation = "softmax")
#' model <- keras_model(inputs, outputs)
#' summary(model)
#'
#' keras_input(shape = c(100, 8)) |>
#'   layer_conv_1d(filters = 16, kernel_size = 5, strides = 2, padding = "same")
#' @export
layer_conv_2d <- function(object, filters, kernel_size, strides = list(1L, 1L),
                          padding = "valid", data_format = NULL, dilation_rate = list(1L, 1L),
                          groups = 1L, activation = NULL, use_bias = TRUE,
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
  config <- conv_config(2L, filters, kernel_size, strides, padding, data_format, dilation_rate,
                        groups, activation, use_bias, kernel_initializer, bias_initializer)
  layer <- new_layer("Conv2D", c(config, options), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_conv_2d
#' @export
layer_conv_1d <- function(object, filters, kernel_size, strides = 1L, padding = "valid",
                          data_format = NULL, dilation_rate = 1L, groups = 1L, activation = NULL,
                          use_bias = TRUE, kernel_initializer = "glorot_uniform",
                          bias_initializer = "zeros", kernel_regularizer = NULL,
                          bias_regularizer = NULL, activity_regularizer = NULL,
                          kernel_constraint = NULL, bias_constraint = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  options <- weight_option_configs(list(kernel_regularizer = kernel_regularizer,
                                        bias_regularizer = bias_regularizer,
                                        activity_regularizer = activity_regularizer,
                                        kernel_constraint = kernel_constraint,
                                        bias_constraint = bias_constraint))
  config <- conv_config(1L, filters, kernel_size, strides, padding, data_format, dilation_rate,
                        groups, activation, use_bias, kernel_initializer, bias_initializer)
  layer <- new_layer("Conv1D", c(config, options), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

# The Keras config of a Conv1D/Conv2D from the constructor's arguments, each
# checked (errors name the argument and the user's function).
conv_config <- function(rank, filters, kernel_size, strides, padding, data_format, dilation_rate,
                        groups, activation, use_bias, kernel_initializer, bias_initializer,
                        call = sys.call(-1)) {
  filters <- check_int(filters, "filters", min = 1, call = call)
  kernel_size <- check_tuple(kernel_size, "kernel_size", rank, call = call)
  strides <- check_tuple(strides, "strides", rank, call = call)
  padding <- check_padding(padding, rank, call = call)
  check_data_format(data_format, call = call)
  dilation_rate <- check_tuple(dilation_rate, "dilation_rate", rank, call = call)
  groups <- check_int(groups, "groups", min = 1, call = call)
  if (filters %% groups != 0L) {
    abort_value("{.arg groups} ({groups}) must divide {.arg filters} ({filters}).", call = call)
  }
  if (max(strides) > 1L && max(dilation_rate) > 1L) {
    abort_value(c("{.arg dilation_rate} must be 1 when {.arg strides} > 1 (Keras does not support both);",
                  "got strides = {strides}, dilation_rate = {dilation_rate}."), call = call)
  }
  activation <- check_activation(activation, call = call)
  check_bool(use_bias, "use_bias", call = call)
  k <- as_initializer(kernel_initializer, "kernel_initializer")
  b <- as_initializer(bias_initializer, "bias_initializer")
  list(filters = filters, kernel_size = as.list(kernel_size), strides = as.list(strides),
       padding = padding, data_format = "channels_last", dilation_rate = as.list(dilation_rate),
       groups = groups, activation = activation, use_bias = use_bias,
       kernel_initializer = initializer_keras_config(k),
       bias_initializer = initializer_keras_config(b))
}

# A Keras tuple argument: one positive whole number (repeated `rank` times)
# or `rank` of them, as a vector or a list. Returns an integer vector.
check_tuple <- function(x, arg, rank, call = sys.call(-1)) {
  v <- if (is.list(x) && all(vapply(x, function(e) is.numeric(e) && length(e) == 1, NA))) unlist(x) else x
  ok <- is.numeric(v) && length(v) %in% c(1L, rank) && !anyNA(v) && all(is.finite(v)) &&
    all(v == round(v)) && all(v >= 1)
  if (!ok) {
    what <- if (rank == 1L) "a positive whole number" else
      paste0("a positive whole number or ", rank, " of them")
    abort_value("{.arg {arg}} must be {what}, not {describe(x)}.", call = call)
  }
  rep_len(as.integer(v), rank)
}

check_padding <- function(padding, rank, call = sys.call(-1)) {
  check_string(padding, "padding", call = call)
  p <- tolower(padding)
  if (p == "causal" && rank == 1L) {
    abort_not_yet("{.arg padding} = \"causal\" is not supported yet; use \"valid\" or \"same\".",
                  call = call)
  }
  if (!p %in% c("valid", "same")) {
    abort_value("{.arg padding} must be \"valid\" or \"same\", not {.val {padding}}.", call = call)
  }
  p
}

check_data_format <- function(data_format, call = sys.call(-1)) {
  if (is.null(data_format) || identical(data_format, "channels_last")) return(invisible())
  if (identical(data_format, "channels_first")) {
    abort_value(c("{.arg data_format} = \"channels_first\" is not supported:",
                  "mirrored computes channels_last only (use NULL or \"channels_last\")."),
                call = call)
  }
  abort_value("{.arg data_format} must be NULL or \"channels_last\", not {describe(data_format)}.",
              call = call)
}
