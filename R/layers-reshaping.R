# Reshaping layers: keras3's constructors for Reshape, Permute, RepeatVector,
# ZeroPadding1D/2D, Cropping1D/2D and UpSampling1D/2D. The core checks shapes
# and computes them (src/mr/nn/layers/); R checks the arguments.

# A non-negative whole number (or a vector of them) as integers.
check_counts <- function(x, arg, len, min = 0L, call = sys.call(-1)) {
  if (is.list(x) && all(vapply(x, function(v) is.numeric(v) && length(v) == 1, logical(1)))) {
    x <- unlist(x)
  }
  ok <- is.numeric(x) && length(x) %in% len && all(!is.na(x) & is.finite(x) & x == round(x) & x >= min)
  if (!ok) {
    abort_value("{.arg {arg}} must be {if (length(len) > 1) 'one or ' else ''}{max(len)} whole number{?s} >= {min}, not {describe(x)}.",
                call = call)
  }
  as.integer(x)
}

# keras3's padding / cropping of 2 spatial axes: one number (every border),
# 2 numbers (symmetric height, width) or a list of 2 pairs; as Keras' pairs.
check_borders_2d <- function(x, arg, call = sys.call(-1)) {
  if (is.numeric(x) && length(x) == 1) x <- rep(list(x), 2)
  if (is.numeric(x) && length(x) == 2) x <- as.list(x)
  if (!(is.list(x) && length(x) == 2)) {
    abort_value("{.arg {arg}} must be a number, 2 numbers or a list of 2 pairs, not {describe(x)}.",
                call = call)
  }
  lapply(x, function(p) {
    p <- check_counts(p, arg, 1:2, call = call)
    as.list(rep_len(p, 2))
  })
}

channels_last_only <- function(data_format, call = sys.call(-1)) {
  if (is.null(data_format) || identical(data_format, "channels_last")) return(invisible())
  if (identical(data_format, "channels_first")) {
    abort_not_yet("{.arg data_format} = \"channels_first\" is not supported yet; use \"channels_last\".",
                  call = call)
  }
  abort_value("{.arg data_format} must be NULL, \"channels_last\" or \"channels_first\", not {describe(data_format)}.",
              call = call)
}

#' Reshape each sample
#'
#' Gives each sample the shape `target_shape` (row-major, as Keras), keeping
#' the batch axis; one entry may be `-1`, inferred from the others.
#'
#' @inheritParams layer_dense
#' @param target_shape The new per-sample shape (integers; at most one `-1`).
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = 12) |> layer_reshape(c(3, -1))
#' @export
layer_reshape <- function(object, target_shape, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (missing(target_shape)) abort_value("{.arg target_shape} is required.")
  ts <- if (is.list(target_shape)) unlist(target_shape) else target_shape
  if (!(is.numeric(ts) && length(ts) >= 1 && all(!is.na(ts) & ts == round(ts) & (ts >= 1 | ts == -1)) &&
        sum(ts == -1) <= 1)) {
    abort_value("{.arg target_shape} must be positive whole numbers with at most one -1, not {describe(target_shape)}.")
  }
  layer <- new_layer("Reshape", list(target_shape = as.list(as.integer(ts))), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Permute the axes of each sample
#'
#' Reorders the per-sample axes: output axis `k` is input axis `dims[k]`
#' (1-based, the batch axis not counted), as Keras' `Permute`.
#'
#' @inheritParams layer_dense
#' @param dims A permutation of `1:rank` of the per-sample axes.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = c(10, 64)) |> layer_permute(c(2, 1))
#' @export
layer_permute <- function(object, dims, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (missing(dims)) abort_value("{.arg dims} is required.")
  d <- check_counts(dims, "dims", seq_len(max(1L, length(unlist(dims)))), min = 1L)
  if (!setequal(d, seq_along(d)) || anyDuplicated(d)) {
    abort_value("{.arg dims} must be a permutation of 1..{length(d)}, not {describe(dims)}.")
  }
  layer <- new_layer("Permute", list(dims = as.list(d)), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Repeat each sample's vector
#'
#' Turns inputs of shape `(batch, features)` into `(batch, n, features)`.
#'
#' @inheritParams layer_dense
#' @param n How many times to repeat.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = 32) |> layer_repeat_vector(3)
#' @export
layer_repeat_vector <- function(object, n, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (missing(n)) abort_value("{.arg n} is required.")
  n <- check_int(n, "n", min = 1)
  layer <- new_layer("RepeatVector", list(n = n), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Zero-padding of sequences and images
#'
#' Adds rows of zeros at the borders of the spatial axes: the steps of
#' `(batch, steps, channels)` inputs (`layer_zero_padding_1d()`), or the rows
#' and columns of `(batch, rows, cols, channels)` images
#' (`layer_zero_padding_2d()`).
#'
#' @inheritParams layer_dense
#' @param padding 1D: one number (both ends) or 2 (start, end). 2D: one
#'   number (every border), 2 (symmetric rows, cols) or a list of 2 pairs
#'   `list(c(top, bottom), c(left, right))`.
#' @param data_format `NULL` or `"channels_last"`; `"channels_first"` is a
#'   `mirrored_not_yet_error`.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = c(10, 3)) |> layer_zero_padding_1d(c(1, 2))
#' keras_input(shape = c(28, 28, 1)) |> layer_zero_padding_2d(2)
#' @export
layer_zero_padding_1d <- function(object, padding = 1L, data_format = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  p <- rep_len(check_counts(padding, "padding", 1:2), 2)
  channels_last_only(data_format)
  layer <- new_layer("ZeroPadding1D", list(padding = as.list(p), data_format = "channels_last"), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_zero_padding_1d
#' @export
layer_zero_padding_2d <- function(object, padding = list(1L, 1L), data_format = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  p <- check_borders_2d(padding, "padding")
  channels_last_only(data_format)
  layer <- new_layer("ZeroPadding2D", list(padding = p, data_format = "channels_last"), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Cropping of sequences and images
#'
#' Removes borders of the spatial axes: the steps of
#' `(batch, steps, channels)` inputs (`layer_cropping_1d()`), or the rows and
#' columns of `(batch, rows, cols, channels)` images (`layer_cropping_2d()`).
#'
#' @inheritParams layer_zero_padding_1d
#' @param cropping As `padding` of [layer_zero_padding_1d()]: how much to
#'   remove at each border.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = c(10, 3)) |> layer_cropping_1d(c(1, 2))
#' keras_input(shape = c(28, 28, 1)) |> layer_cropping_2d(list(c(2, 2), c(4, 4)))
#' @export
layer_cropping_1d <- function(object, cropping = list(1L, 1L), ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  p <- rep_len(check_counts(cropping, "cropping", 1:2), 2)
  layer <- new_layer("Cropping1D", list(cropping = as.list(p)), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_cropping_1d
#' @export
layer_cropping_2d <- function(object, cropping = list(list(0L, 0L), list(0L, 0L)),
                              data_format = NULL, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  p <- check_borders_2d(cropping, "cropping")
  channels_last_only(data_format)
  layer <- new_layer("Cropping2D", list(cropping = p, data_format = "channels_last"), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Nearest-neighbour upsampling
#'
#' Repeats each step of `(batch, steps, channels)` inputs `size` times
#' (`layer_upsampling_1d()`), or each row and column of
#' `(batch, rows, cols, channels)` images `size[1]` and `size[2]` times
#' (`layer_upsampling_2d()`).
#'
#' @inheritParams layer_zero_padding_1d
#' @param size 1D: the repeat count. 2D: one number or 2 (rows, cols).
#' @param interpolation `"nearest"`; `"bilinear"` is a
#'   `mirrored_not_yet_error`.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @family reshaping layers
#' @examples
#' keras_input(shape = c(10, 3)) |> layer_upsampling_1d(3)
#' keras_input(shape = c(7, 7, 8)) |> layer_upsampling_2d(c(2, 2))
#' @export
layer_upsampling_1d <- function(object, size = 2L, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  size <- check_int(size, "size", min = 1)
  layer <- new_layer("UpSampling1D", list(size = size), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' @rdname layer_upsampling_1d
#' @export
layer_upsampling_2d <- function(object, size = list(2L, 2L), data_format = NULL,
                                interpolation = "nearest", ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  s <- rep_len(check_counts(size, "size", 1:2, min = 1L), 2)
  channels_last_only(data_format)
  check_string(interpolation, "interpolation")
  if (identical(interpolation, "bilinear")) {
    abort_not_yet("{.arg interpolation} = \"bilinear\" is not supported yet; use \"nearest\".")
  }
  if (!identical(interpolation, "nearest")) {
    abort_value("{.arg interpolation} must be \"nearest\" or \"bilinear\", not {describe(interpolation)}.")
  }
  layer <- new_layer("UpSampling2D", list(size = as.list(s), data_format = "channels_last",
                                          interpolation = "nearest"), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}
