#' Max and average pooling layers
#'
#' The largest (`layer_max_pooling_*()`) or the mean
#' (`layer_average_pooling_*()`) value of each channel over windows of
#' `pool_size` positions moved by `strides`, as Keras' `MaxPooling1D/2D` and
#' `AveragePooling1D/2D`, channels-last. With `padding = "same"` the windows
#' at the border are cut to the input: a maximum ignores the padding and an
#' average counts only the real elements, as TensorFlow does. The gradient
#' of a maximum goes to the first largest element of its window.
#'
#' @inheritParams layer_conv_2d
#' @param pool_size The window's size: one positive integer, or one per
#'   spatial axis.
#' @param strides The window's step: `NULL` (the pool size), one positive
#'   integer, or one per axis.
#' @param padding `"valid"` or `"same"` (`ceil(input / strides)` outputs).
#' @param name The layer's name, or `NULL` for an automatic one.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family pooling layers
#' @seealso [layer_conv_2d()], [layer_global_average_pooling_2d()]
#' @examples
#' keras_input(shape = c(28, 28, 8)) |> layer_max_pooling_2d(pool_size = c(2, 2))
#' keras_input(shape = c(28, 28, 8)) |>
#'   layer_average_pooling_2d(pool_size = 3, strides = 2, padding = "same")
#' keras_input(shape = c(50, 4)) |> layer_max_pooling_1d(pool_size = 2)
#' keras_input(shape = c(50, 4)) |> layer_average_pooling_1d(pool_size = 5)
#' @export
layer_max_pooling_2d <- function(object, pool_size = list(2L, 2L), strides = NULL,
                                 padding = "valid", data_format = NULL, name = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(c(list(name = name), list(...)))
  layer <- new_layer("MaxPooling2D", pool_config(2L, pool_size, strides, padding, data_format), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_max_pooling_2d
#' @export
layer_max_pooling_1d <- function(object, pool_size = 2L, strides = NULL, padding = "valid",
                                 data_format = NULL, name = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(c(list(name = name), list(...)))
  layer <- new_layer("MaxPooling1D", pool_config(1L, pool_size, strides, padding, data_format), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_max_pooling_2d
#' @export
layer_average_pooling_2d <- function(object, pool_size, strides = NULL, padding = "valid",
                                     data_format = NULL, name = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(c(list(name = name), list(...)))
  layer <- new_layer("AveragePooling2D", pool_config(2L, pool_size, strides, padding, data_format),
                     dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_max_pooling_2d
#' @export
layer_average_pooling_1d <- function(object, pool_size, strides = NULL, padding = "valid",
                                     data_format = NULL, name = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(c(list(name = name), list(...)))
  layer <- new_layer("AveragePooling1D", pool_config(1L, pool_size, strides, padding, data_format),
                     dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

pool_config <- function(rank, pool_size, strides, padding, data_format, call = sys.call(-1)) {
  pool_size <- check_tuple(pool_size, "pool_size", rank, call = call)
  strides <- if (is.null(strides)) pool_size else check_tuple(strides, "strides", rank, call = call)
  check_string(padding, "padding", call = call)
  padding <- tolower(padding)
  if (!padding %in% c("valid", "same")) {
    abort_value("{.arg padding} must be \"valid\" or \"same\", not {.val {padding}}.", call = call)
  }
  check_data_format(data_format, call = call)
  list(pool_size = as.list(pool_size), padding = padding, strides = as.list(strides),
       data_format = "channels_last")
}

#' Global average and max pooling layers
#'
#' The mean (`layer_global_average_pooling_*()`) or the largest
#' (`layer_global_max_pooling_*()`) value of each channel over every
#' position, as Keras' `GlobalAveragePooling1D/2D` and
#' `GlobalMaxPooling1D/2D`, channels-last: `(batch, channels)` out, or with
#' `keepdims = TRUE` the spatial axes kept with size 1.
#'
#' @inheritParams layer_conv_2d
#' @param keepdims Whether to keep the spatial axes (with size 1).
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family pooling layers
#' @seealso [layer_max_pooling_2d()]
#' @examples
#' keras_input(shape = c(7, 7, 64)) |> layer_global_average_pooling_2d()
#' keras_input(shape = c(7, 7, 64)) |> layer_global_max_pooling_2d(keepdims = TRUE)
#' keras_input(shape = c(30, 16)) |> layer_global_average_pooling_1d()
#' keras_input(shape = c(30, 16)) |> layer_global_max_pooling_1d()
#' @export
layer_global_average_pooling_2d <- function(object, data_format = NULL, keepdims = FALSE, ...) {
  global_pool(if (missing(object)) NULL else object, "GlobalAveragePooling2D", data_format,
              keepdims, list(...))
}

#' @rdname layer_global_average_pooling_2d
#' @export
layer_global_average_pooling_1d <- function(object, data_format = NULL, keepdims = FALSE, ...) {
  global_pool(if (missing(object)) NULL else object, "GlobalAveragePooling1D", data_format,
              keepdims, list(...))
}

#' @rdname layer_global_average_pooling_2d
#' @export
layer_global_max_pooling_2d <- function(object, data_format = NULL, keepdims = FALSE, ...) {
  global_pool(if (missing(object)) NULL else object, "GlobalMaxPooling2D", data_format,
              keepdims, list(...))
}

#' @rdname layer_global_average_pooling_2d
#' @export
layer_global_max_pooling_1d <- function(object, data_format = NULL, keepdims = FALSE, ...) {
  global_pool(if (missing(object)) NULL else object, "GlobalMaxPooling1D", data_format,
              keepdims, list(...))
}

global_pool <- function(object, class_name, data_format, keepdims, dots, call = sys.call(-1)) {
  dots <- layer_dots(dots, call = call)
  check_data_format(data_format, call = call)
  check_bool(keepdims, "keepdims", call = call)
  layer <- new_layer(class_name, list(data_format = "channels_last", keepdims = keepdims), dots,
                     call = call)
  compose_layer(object, layer, call = call)
}
