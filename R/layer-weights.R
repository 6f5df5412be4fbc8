# The model-structure API: get_layer(), count_params(), a layer's weights,
# clone_model().
#
# Weights live in the core, in the replicas of each model built with a layer
# (R/model-class.R); a layer remembers the models that hold it
# (`layer$models`, registered when a model is created). A layer's weights are
# those of the last model registered with it (a layer in several models has a
# copy in each: Keras shares one set of variables, mirrored copies them when
# a model is built). The core says which variables belong to which node
# (cpp_model_weight_owners()), so the R side never recomputes a layer's
# weight list.

# Registers `model` with every layer of its graph (nested models' layers too).
register_layer_models <- function(model) {
  g <- model$graph()
  if (is.null(g)) return(invisible(model))
  for (n in g$nodes) {
    layer <- n$layer
    if (!any(vapply(layer$models, function(m) identical(m, model), logical(1)))) {
      layer$models <- c(layer$models, list(model))
    }
  }
  invisible(model)
}

# The model whose weights a layer shows: the last registered model that still
# holds it (a sequential model may have been rebuilt without it).
layer_host_model <- function(layer) {
  # The layer's standalone model (R/layer-eager.R) only when no other holds it.
  standalone <- layer$standalone$model
  for (m in rev(layer$models)) {
    if (!is.null(standalone) && identical(m, standalone)) next
    g <- m$graph()
    if (!is.null(g) && any(vapply(g$nodes, function(n) identical(n$layer, layer), logical(1)))) return(m)
  }
  standalone
}

# Indices (1-based, into model$get_weights()) of the variables of `layer`,
# with the core's names and trainable flags.
layer_weight_index <- function(model, layer) {
  own <- with_core(cpp_model_weight_owners(model$ptr()))
  g <- model$graph()
  mine <- vapply(own$node, function(k) identical(g$nodes[[k + 1L]]$layer, layer), logical(1))
  list(index = which(mine), name = own$name[mine], trainable = own$trainable[mine],
       size = own$size[mine])
}

# list(values, name, trainable) of a layer's weights in `model`, in Keras'
# order; trainable is FALSE for every weight of a frozen layer.
layer_weight_values <- function(layer, model = layer_host_model(layer)) {
  layer <- layer_object(layer)
  if (is.null(model)) return(list(values = list(), name = character(), trainable = logical()))
  idx <- layer_weight_index(model, layer)
  w <- model$get_weights()[idx$index]
  list(values = w, name = idx$name, trainable = idx$trainable & isTRUE(layer$trainable))
}

layer_get_weights <- function(layer) layer_weight_values(layer)$values

# Writes `weights` into every model holding the layer (checked against the
# first before any is changed).
layer_set_weights <- function(layer, weights, call = sys.call(-1)) {
  layer <- layer_object(layer)
  if (!is.list(weights)) abort_value("{.arg weights} must be a list of arrays, not {describe(weights)}.", call = call)
  models <- Filter(function(m) {
    g <- m$graph()
    !is.null(g) && any(vapply(g$nodes, function(n) identical(n$layer, layer), logical(1)))
  }, layer$models)
  if (!length(models)) {
    abort_value("Layer {.val {layer$name}} has no weights yet: use it in a model first.", call = call)
  }
  for (m in models) {
    idx <- layer_weight_index(m, layer)
    if (length(weights) != length(idx$index)) {
      abort_value("Layer {.val {layer$name}} has {length(idx$index)} weight{?s}; {.arg weights} has {length(weights)}.",
                  call = call)
    }
    w <- m$get_weights()
    for (j in seq_along(weights)) {
      target <- w[[idx$index[j]]]
      got <- weights[[j]]
      dt <- dim(target) %||% length(target)
      dg <- dim(got) %||% length(got)
      if (!is.numeric(got) || !identical(as.integer(dt), as.integer(dg))) {
        abort_kind("shape", "Weight {j} ({.val {idx$name[j]}}) of layer {.val {layer$name}} has shape ({paste(dt, collapse = ', ')}); {.arg weights[[{j}]]} has shape ({paste(dg, collapse = ', ')}).",
                   call = call)
      }
      target[] <- as.numeric(got)
      w[[idx$index[j]]] <- target
    }
    m$set_weights(w)
  }
  invisible(layer)
}

#' Retrieve a layer of a model
#'
#' Finds a layer by name or by position in `model$layers` (1-based, as
#' keras3).
#'
#' @param object A model.
#' @param name The layer's name.
#' @param index The layer's position in `object$layers` (1-based; negative
#'   counts from the end).
#' @return The layer (or nested model). Its `$weights`, `$get_weights()`,
#'   `$set_weights()`, `$trainable`, `$output` and `$input` reflect and change
#'   the model's current state.
#' @family model functions
#' @seealso [freeze_weights()], [count_params()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |>
#'   layer_dense(units = 4, name = "hidden") |>
#'   layer_dense(units = 1)
#' hidden <- get_layer(model, "hidden")
#' str(hidden$get_weights())
#' get_layer(model, index = 2)
#' @export
get_layer <- function(object, name = NULL, index = NULL) {
  if (!inherits(object, "mirrored_model")) abort_value("{.arg object} must be a model, not {describe(object)}.")
  if (is.null(name) == is.null(index)) abort_value("Give exactly one of {.arg name} and {.arg index}.")
  layers <- object$layers
  names <- vapply(layers, function(l) l$name, character(1))
  if (!is.null(name)) {
    check_string(name, "name")
    k <- match(name, names)
    if (is.na(k)) abort_value(c("Model {.val {object$name}} has no layer named {.val {name}}.",
                                i = "Its layers are {.val {names}}."))
    return(layers[[k]])
  }
  n <- length(layers)
  if (!(is.numeric(index) && length(index) == 1 && !is.na(index) && index == round(index) &&
        index != 0 && abs(index) <= n)) {
    abort_value("{.arg index} must be a position in 1..{n} (negative from the end), not {describe(index)}.")
  }
  layers[[if (index < 0) n + index + 1 else index]]
}

#' Count the parameters of a model or layer
#'
#' The number of scalars in all its weights, trainable or not (Keras'
#' `count_params()`).
#'
#' @param object A model or a layer (used in a model).
#' @return A number.
#' @family model functions
#' @seealso [get_layer()], [summary.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 4)
#' count_params(model)  # 3 * 4 + 4
#' count_params(model$layers[[1]])
#' @export
count_params <- function(object) {
  if (inherits(object, "mirrored_model")) {
    own <- with_core(cpp_model_weight_owners(model_object(object)$ptr()))
    return(sum(own$size))
  }
  if (inherits(object, "mirrored_layer")) {
    layer <- layer_object(object)
    model <- layer_host_model(layer)
    if (is.null(model)) abort_value("Layer {.val {layer$name}} is not built: use it in a model first.")
    return(sum(layer_weight_index(model, layer)$size))
  }
  abort_value("{.arg object} must be a model or a layer, not {describe(object)}.")
}

# Model-level weight lists (model$trainable_weights and friends): per weight
# in Keras' order, whether it trains after the next compile().
model_weight_trainable <- function(model) {
  model <- model_object(model)
  own <- with_core(cpp_model_weight_owners(model$ptr()))
  frozen <- model_frozen_nodes(model)
  own$trainable & !frozen[own$node + 1L]
}

#' Clone a model
#'
#' A new model with the same structure and layer configurations as `model`
#' and freshly initialized weights (as keras3's `clone_model()`): new layers,
#' sharing nothing with the original. Copy the weights with
#' `set_weights(clone, get_weights(model))` if wanted.
#'
#' @param model A model.
#' @param input_tensors,clone_function,call_function Not supported yet:
#'   `NULL`.
#' @param recursive Not supported yet: `FALSE`.
#' @param ... Unknown arguments are an error.
#' @return A new, uncompiled model.
#' @family model functions
#' @seealso [get_config()], [from_config()]
#' @examples
#' model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 2)
#' twin <- clone_model(model)
#' identical(twin$layers[[1]]$name, model$layers[[1]]$name)
#' @export
clone_model <- function(model, input_tensors = NULL, clone_function = NULL, call_function = NULL,
                        recursive = FALSE, ...) {
  if (...length()) {
    nm <- names(list(...)) %||% rep("", ...length())
    nm[nm == ""] <- "<unnamed>"
    abort_value("Unknown argument{?s} {.arg {nm}} to {.fn clone_model}.")
  }
  if (!inherits(model, "mirrored_model")) abort_value("{.arg model} must be a model, not {describe(model)}.")
  check_not_yet_null(list(input_tensors = input_tensors, clone_function = clone_function,
                          call_function = call_function))
  if (!identical(recursive, FALSE)) abort_not_yet("{.arg recursive} must be FALSE; recursive cloning is not supported yet.")
  # New layers from the same configs: they draw new seeds, so the weights are
  # freshly initialized.
  from_config(get_config(model))
}

# Called when a model's core is created fresh: a layer that already has
# weights in another built model (a feature extractor built from a trained
# model's tensors, a new head on a trained base) starts from them, as Keras'
# layers keep their variables in every model that uses them.
apply_layer_start_weights <- function(model) {
  g <- model$graph()
  shares <- graph_shares(g)
  w <- NULL
  own <- NULL
  for (k in seq_along(g$nodes)) {
    layer <- g$nodes[[k]]$layer
    if (shares[k] >= 0 || !length(g$nodes[[k]]$inputs)) next
    src <- NULL
    for (m in rev(layer$models)) {
      if (identical(m, model) || !m$is_built()) next
      mg <- m$graph()
      if (!is.null(mg) && any(vapply(mg$nodes, function(n) identical(n$layer, layer), logical(1)))) {
        src <- m
        break
      }
    }
    if (is.null(src)) next
    if (is.null(w)) {
      w <- model$get_weights()
      own <- with_core(cpp_model_weight_owners(model$ptr()))
    }
    mine <- which(own$node == k - 1L)
    theirs <- layer_weight_values(layer, src)$values
    if (length(theirs) == length(mine)) w[mine] <- theirs
  }
  if (!is.null(w)) model$set_weights(w)
  invisible(model)
}
