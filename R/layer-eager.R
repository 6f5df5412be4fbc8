# Layers and models as objects, outside a model graph: keras3's
# `layer$build(input_shape)`, `layer(array)` and `model(array)` (eager
# calls), `get_weights(layer)` / `set_weights(layer)`.
#
# A layer's weights live in the models built with it (R/layer-weights.R).
# A layer used on its own gets a standalone model (`layer$standalone`): its
# input(s) and the layer, made by build() or by the first eager call. That
# model holds the layer's weights until the layer is in a real model; a
# model built later with the layer starts from them (Keras: the variables
# build() made), and an eager call afterwards first copies the weights of
# the model the layer is in (Keras shares one set of variables; mirrored
# keeps a copy per model, so the copy is refreshed before it is used).

# Per-sample shapes of keras3's build() argument: a full shape (batch axis
# first, NULL or NA there) or a list of them for a layer of several inputs.
build_sample_shapes <- function(input_shape, call) {
  one <- function(s) {
    d <- tryCatch(as.integer(shape(s)), error = function(e) NULL)
    if (is.null(d) || length(d) < 2 || anyNA(d[-1]) || any(d[-1] < 0)) {
      abort_value("{.arg input_shape} must be a full shape with the batch axis first, such as {.code shape(NULL, 4)}, with known dimensions after it; not {describe(s)}.",
                  call = call)
    }
    d[-1]
  }
  several <- is.list(input_shape) && !inherits(input_shape, "keras_shape") &&
    length(input_shape) && all(vapply(input_shape, function(s) length(s) > 1 || inherits(s, "keras_shape"), logical(1)))
  if (several) lapply(input_shape, one) else list(one(input_shape))
}

# The layer's standalone model for these per-sample input shapes (made, and
# its weights initialized, if it does not exist or took other shapes).
layer_standalone_model <- function(layer, shapes, call) {
  m <- layer$standalone
  if (!is.null(m) && identical(lapply(m$inputs_shapes, as.integer), lapply(shapes, as.integer))) return(m$model)
  inputs <- lapply(shapes, function(s) keras_input(s))
  out <- call_layer(layer, if (length(inputs) == 1) inputs[[1]] else inputs, call = call)
  model <- model_object(keras_model(inputs, out, name = paste0(layer$name, "_standalone")))
  layer$standalone <- list(model = model, inputs_shapes = shapes)
  model$get_weights()  # builds it: the layer's weights exist from now on
  model
}

# keras3's layer$build(input_shape).
layer_build <- function(layer, input_shape, call) {
  layer <- layer_object(layer)
  shapes <- build_sample_shapes(input_shape, call)
  if (!is.null(layer$built_weights)) {
    if (identical(lapply(layer$built_weights$shapes, as.integer), lapply(shapes, as.integer))) return(invisible(layer))
  }
  layer_standalone_model(layer, shapes, call)
  invisible(layer)
}

# keras3's layer(array): the layer applied to R arrays (one per input), in
# inference mode, as Keras calls a layer outside fit().
eager_layer_call <- function(layer, x, training, call) {
  layer <- layer_object(layer)
  if (isTRUE(training)) {
    abort_not_yet("Calling layer {.val {layer$name}} on arrays with {.code training = TRUE} is not supported yet: eager calls run in inference mode.",
                  call = call)
  }
  xs <- if (is.list(x) && !is.data.frame(x)) x else list(x)
  xs <- lapply(seq_along(xs), function(k) as_sample_array(xs[[k]], if (length(xs) == 1) "inputs" else paste0("inputs[[", k, "]]"), call = call))
  check_batch_axis(xs, layer$name, call)
  shapes <- lapply(xs, function(a) dim(a)[-1])
  model <- layer_standalone_model(layer, shapes, call)
  host <- layer_host_model(layer)
  if (!is.null(host) && !identical(host, model)) {
    layer_set_weights_in(model, layer, layer_weight_values(layer, host)$values)
  }
  predict(model, if (length(xs) == 1) xs[[1]] else xs, verbose = 0)
}

# keras3's model(array): predictions of R arrays, in inference mode.
eager_model_call <- function(model, x, training, call) {
  if (isTRUE(training)) {
    abort_not_yet("Calling model {.val {model$name}} on arrays with {.code training = TRUE} is not supported yet: eager calls run in inference mode (use {.fn train_on_batch} to train on a batch).",
                  call = call)
  }
  check_batch_axis(x, model$name, call)
  predict(model, x, verbose = 0)
}

# An eager call's inputs carry a batch axis and at least one feature axis, as
# Keras' layers require (a bare vector has neither).
check_batch_axis <- function(x, name, call) {
  xs <- if (is.list(x) && !is.data.frame(x)) x else list(x)
  for (a in xs) {
    if (!is.data.frame(a) && length(dim(a)) < 2L) {
      abort_value(c("{.val {name}} was called on a vector of length {length(a)}.",
                       i = "Inputs need a batch axis and a feature axis: a matrix or array with one sample per row (e.g. {.code matrix(x, nrow = 1)})."),
                  call = call)
    }
  }
}

# Whether `x` is an eager call's input: R arrays (a numeric array, or a
# list of them), not symbolic tensors.
is_eager_input <- function(x) {
  if (is_traced_input(x)) return(FALSE)
  one <- function(a) (is.numeric(a) || is.logical(a)) && !is.object(a) || is.data.frame(a)
  one(x) || (is.list(x) && !is.data.frame(x) && length(x) && all(vapply(x, one, logical(1))))
}

# Writes `weights` (the layer's, in Keras' order) into model m's copy.
layer_set_weights_in <- function(m, layer, weights) {
  idx <- layer_weight_index(m, layer)
  w <- m$get_weights()
  for (j in seq_along(idx$index)) w[[idx$index[j]]][] <- as.numeric(weights[[j]])
  m$set_weights(w)
}

#' @rdname get_weights
#' @export
get_weights.mirrored_layer <- function(object, ...) {
  check_dots_empty(list(...), "get_weights", call = sys.call())
  layer_get_weights(object)
}

#' @rdname get_weights
#' @export
set_weights.mirrored_layer <- function(object, weights, ...) {
  check_dots_empty(list(...), "set_weights", call = sys.call())
  layer_set_weights(object, weights, call = sys.call())
  invisible(object)
}
