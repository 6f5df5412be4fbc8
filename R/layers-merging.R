#' Add several inputs
#'
#' The element-wise sum of two or more symbolic tensors of one shape, as
#' Keras' `Add` layer (inputs of different shapes are not broadcast).
#'
#' @param inputs A list of symbolic tensors to add (or one of them, the
#'   others following in `...`); missing returns the layer.
#' @param ... More symbolic tensors (unnamed), and `name`.
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @seealso [keras_model()]
#' @examples
#' x <- keras_input(shape = 4)
#' h <- x |> layer_dense(4)
#' y <- layer_add(list(x, h))
#' model <- keras_model(x, y)
#' @export
layer_add <- function(inputs, ...) {
  dots <- list(...)
  unnamed <- if (is.null(names(dots))) rep(TRUE, length(dots)) else names(dots) == ""
  tensors <- if (missing(inputs) || is.null(inputs)) list()
             else if (is_keras_tensor(inputs)) list(inputs) else inputs
  if (!is.list(tensors)) abort_value("{.arg inputs} must be a list of symbolic tensors, not {describe(inputs)}.")
  tensors <- c(tensors, dots[unnamed])
  dots <- layer_dots(dots[!unnamed])
  layer <- new_layer("Add", list(), dots)
  if (!length(tensors)) return(as_layer_function(layer))
  if (length(tensors) < 2) abort_value("{.fn layer_add} needs at least 2 inputs, got {length(tensors)}.")
  call_layer(layer, tensors)
}

# The common body of the merge layers (layer_add's rules): `inputs` a list of
# symbolic tensors or one of them, more unnamed in `dots`; named dots are the
# layer's own (name, dtype, ...). No inputs: the layer; else the layer applied,
# after checking the count (`min` inputs, exactly `min` when `exact`).
merge_layer <- function(class_name, config, inputs, dots, fn, min = 2L, exact = FALSE,
                        check = NULL, call = sys.call(-1)) {
  unnamed <- if (is.null(names(dots))) rep(TRUE, length(dots)) else names(dots) == ""
  tensors <- if (is.null(inputs)) list() else if (is_keras_tensor(inputs)) list(inputs) else inputs
  if (!is.list(tensors)) {
    abort_value("{.arg inputs} must be a list of symbolic tensors, not {describe(inputs)}.", call = call)
  }
  tensors <- c(tensors, dots[unnamed])
  layer <- new_layer(class_name, config, layer_dots(dots[!unnamed], call = call), call = call)
  if (!length(tensors)) return(layer)
  n <- length(tensors)
  if (exact && n != min) {
    abort_value("{.fn {fn}} needs exactly {min} inputs, got {n}.", call = call)
  }
  if (n < min) abort_value("{.fn {fn}} needs at least {min} inputs, got {n}.", call = call)
  if (!is.null(check) && all(vapply(tensors, is_keras_tensor, logical(1)))) check(tensors)
  call_layer(layer, tensors, call = call)
}

# keras3's axis arguments are 1-based and count the batch axis (axis = 2 is
# the first axis of a sample); negative ones count from the end. Keras' own
# numbering is 0-based: positive axes move down by one.
as_keras_axis <- function(axis, arg, call = sys.call(-1)) {
  axis <- check_int(axis, arg, call = call)
  if (axis == 0L) {
    abort_value("{.arg {arg}} is 1-based (1 is the batch axis); 0 is not an axis.", call = call)
  }
  if (axis == 1L) {
    abort_value("{.arg {arg}} = 1 is the batch axis; merge layers work along the other axes.",
                call = call)
  }
  if (axis > 0L) axis - 1L else axis
}

#' Concatenate several inputs along an axis
#'
#' Joins two or more symbolic tensors along `axis`, as Keras' `Concatenate`
#' layer; the inputs must agree on every other axis.
#'
#' @inheritParams layer_add
#' @param axis Axis to join along, keras3-style: 1-based with the batch axis
#'   as 1 (so 2 is the first axis of a sample), or negative from the end
#'   (the default, -1, is the last axis).
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 3)
#' b <- keras_input(shape = 2)
#' y <- layer_concatenate(list(a, b))
#' dim(y)
#' @export
layer_concatenate <- function(inputs, ..., axis = -1L) {
  axis <- as_keras_axis(axis, "axis")
  merge_layer("Concatenate", list(axis = axis), if (missing(inputs)) NULL else inputs, list(...),
              "layer_concatenate")
}

#' Subtract two inputs
#'
#' `inputs[[1]] - inputs[[2]]`, element-wise, for exactly two symbolic
#' tensors of one shape (Keras' `Subtract` layer).
#'
#' @inheritParams layer_add
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 3)
#' b <- keras_input(shape = 3)
#' y <- layer_subtract(list(a, b))
#' @export
layer_subtract <- function(inputs, ...) {
  merge_layer("Subtract", list(), if (missing(inputs)) NULL else inputs, list(...),
              "layer_subtract", exact = TRUE)
}

#' Multiply several inputs
#'
#' The element-wise product of two or more symbolic tensors of one shape
#' (Keras' `Multiply` layer).
#'
#' @inheritParams layer_add
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 3)
#' y <- layer_multiply(list(a, a |> layer_dense(3)))
#' @export
layer_multiply <- function(inputs, ...) {
  merge_layer("Multiply", list(), if (missing(inputs)) NULL else inputs, list(...), "layer_multiply")
}

#' Average several inputs
#'
#' The element-wise mean of two or more symbolic tensors of one shape
#' (Keras' `Average` layer).
#'
#' @inheritParams layer_add
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 3)
#' y <- layer_average(list(a, a |> layer_dense(3)))
#' @export
layer_average <- function(inputs, ...) {
  merge_layer("Average", list(), if (missing(inputs)) NULL else inputs, list(...), "layer_average")
}

#' Element-wise maximum or minimum of several inputs
#'
#' The element-wise maximum (`layer_maximum()`) or minimum
#' (`layer_minimum()`) of two or more symbolic tensors of one shape (Keras'
#' `Maximum` and `Minimum` layers). Where several inputs tie, the gradient
#' goes to the first of them, so training is deterministic.
#'
#' @inheritParams layer_add
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 3)
#' b <- a |> layer_dense(3)
#' hi <- layer_maximum(list(a, b))
#' lo <- layer_minimum(list(a, b))
#' @export
layer_maximum <- function(inputs, ...) {
  merge_layer("Maximum", list(), if (missing(inputs)) NULL else inputs, list(...), "layer_maximum")
}

#' @rdname layer_maximum
#' @export
layer_minimum <- function(inputs, ...) {
  merge_layer("Minimum", list(), if (missing(inputs)) NULL else inputs, list(...), "layer_minimum")
}

#' Dot product of two inputs
#'
#' The per-sample dot product of two symbolic tensors along `axes` (Keras'
#' `Dot` layer, its `batch_dot`): inputs of shape `(batch, n)` give
#' `(batch, 1)`; inputs of shape `(batch, p, q)` and `(batch, s, t)` give the
#' per-sample matrix product over the named axes, of shape `(batch, x's other
#' axis, y's other axis)`. Other ranks, inputs of different ranks, and
#' `normalize = TRUE` along a non-last axis of rank-3 inputs are a
#' `mirrored_not_yet_error`.
#'
#' @inheritParams layer_add
#' @param axes The axis of each input to multiply along, keras3-style
#'   (1-based with the batch axis as 1, or negative from the end): one
#'   integer for both inputs or two.
#' @param normalize If `TRUE`, each input is L2-normalized along its axis
#'   first, so the output is the cosine similarity (Keras' `normalize`).
#' @return A symbolic tensor, or the layer when there are no inputs.
#' @family layers
#' @family merging layers
#' @seealso [layer_add()]
#' @examples
#' a <- keras_input(shape = 4)
#' b <- keras_input(shape = 4)
#' cosine <- layer_dot(list(a, b), axes = -1, normalize = TRUE)
#' dim(cosine)
#' @export
layer_dot <- function(inputs, ..., axes, normalize = FALSE) {
  if (missing(axes)) abort_value("{.arg axes} is required (an integer or 2 integers).")
  if (!(is.numeric(axes) && length(axes) %in% 1:2)) {
    abort_value("{.arg axes} must be an integer or 2 integers, not {describe(axes)}.")
  }
  ax <- integer(0)
  for (a in axes) ax <- c(ax, as_keras_axis(a, "axes"))
  check_bool(normalize, "normalize")
  call <- sys.call()
  # What the core computes but mirrored does not implement yet (Keras does).
  not_yet <- function(tensors) {
    ranks <- vapply(tensors, function(t) length(t$shape) + 1L, integer(1))
    if (ranks[1] != ranks[2] || !all(ranks %in% 2:3)) {
      abort_not_yet("{.fn layer_dot} of inputs of ranks {ranks[1]} and {ranks[2]} is not supported yet (equal ranks 2 or 3 are).",
                    call = call)
    }
    last <- ifelse(ax < 0, ax + ranks, ax) == ranks - 1L
    if (normalize && ranks[1] == 3 && !all(rep_len(last, 2))) {
      abort_not_yet("{.arg normalize} = TRUE along an axis other than the last is not supported yet for inputs of rank 3.",
                    call = call)
    }
  }
  merge_layer("Dot", list(axes = if (length(ax) == 1) ax else as.list(ax), normalize = normalize),
              if (missing(inputs)) NULL else inputs, list(...), "layer_dot", exact = TRUE,
              check = not_yet)
}
