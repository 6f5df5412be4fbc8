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
