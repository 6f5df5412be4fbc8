#' Get or set the weights of a model or a layer
#'
#' Weights come in Keras' order (layer by layer, kernel then bias) and
#' shapes (a Dense kernel is `input_dim x units`, a bias a 1-d array). On a
#' model with several replicas, `get_weights()` reads the first replica
#' (all are identical) and `set_weights()` writes every replica.
#'
#' A layer's weights exist once it is built: by `layer$build(input_shape)`
#' (a full shape, batch axis first: `layer$build(shape(NULL, 4))`), by a
#' call on arrays (`layer(x)`, which computes the layer in inference mode
#' and returns an array, as `model(x)` does for a model), or by the model it
#' is in. A model built with a layer starts from the layer's weights, and a
#' layer in a model shows (and sets) the model's.
#'
#' @param object A model or a layer.
#' @param weights A list of arrays as `get_weights()` returns.
#' @param ... Must be empty: an unknown argument is an error.
#' @return `get_weights()`: a list of arrays. `set_weights()`: the model,
#'   invisibly.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 2)
#' w <- get_weights(model)
#' str(w)
#' w[[2]][] <- 1
#' set_weights(model, w)
#' dense <- layer_dense(units = 2)
#' dense$build(shape(NULL, 3))
#' str(get_weights(dense))
#' dense(matrix(1, 2, 3))
#' @export
get_weights <- function(object, ...) UseMethod("get_weights")

#' @rdname get_weights
#' @export
get_weights.mirrored_model <- function(object, ...) {
  check_dots_empty(list(...), "get_weights", "object")
  object$get_weights()
}

#' @rdname get_weights
#' @export
set_weights <- function(object, weights, ...) UseMethod("set_weights")

#' @rdname get_weights
#' @export
set_weights.mirrored_model <- function(object, weights, ...) {
  check_dots_empty(list(...), "set_weights", c("object", "weights"))
  object$set_weights(weights)
  invisible(object)
}

#' Set the random seed
#'
#' Makes initial weights, dropout masks and shuffles reproducible: sets R's
#' seed, from which mirrored draws the seeds of its counter-based generator.
#'
#' @param seed An integer.
#' @return `NULL`, invisibly.
#' @family utilities
#' @seealso [layer_dropout()]
#' @examples
#' set_random_seed(42)
#' @export
set_random_seed <- function(seed) {
  seed <- check_int(seed, "seed")
  set.seed(seed)
  invisible(NULL)
}
