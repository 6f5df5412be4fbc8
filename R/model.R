#' Create a symbolic input
#'
#' The start of a functional model: a placeholder for a batch of samples of
#' the given per-sample `shape`.
#'
#' @param shape Per-sample shape, e.g. `784` or `c(28, 28)` (the batch
#'   dimension is left out).
#' @param batch_size Not used for training (batches may have any size);
#'   accepted for compatibility.
#' @param dtype Only `"float32"` (the default) is supported.
#' @param name Optional name of the input layer.
#' @return A symbolic tensor to call layers on.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' inputs <- keras_input(shape = 784)
#' inputs
#' @export
keras_input <- function(shape = NULL, batch_size = NULL, dtype = NULL, name = NULL) {
  shape <- check_shape(shape, "shape")
  check_int(batch_size, "batch_size", min = 1, null_ok = TRUE)
  if (!is.null(dtype) && !identical(dtype, "float32")) {
    abort_value("{.arg dtype} must be \"float32\" (the only dtype supported), not {describe(dtype)}.")
  }
  check_string(name, "name", null_ok = TRUE)
  layer <- input_layer(shape, name)
  keras_tensor(layer, list(), shape)
}

#' Create a functional model
#'
#' Builds a model from symbolic inputs and outputs: the layers between them
#' form a directed acyclic graph. Its weights are created (from their
#' initializers' seeds) on the devices of the strategy in scope, or on the
#' CPU.
#'
#' @param inputs A symbolic tensor from [keras_input()] (or a list of them).
#' @param outputs The symbolic tensor(s) computed from `inputs`.
#' @param ... `name`: the model's name (default `"functional"`, then
#'   `"functional_1"`, ...).
#' @return A model, with reference semantics: [compile()] and [fit()] change
#'   it in place.
#' @family model functions
#' @seealso [keras_input()], [layer_dense()], [compile.mirrored_model()],
#'   [fit.mirrored_model()]
#' @examples
#' inputs <- keras_input(shape = 784)
#' outputs <- inputs |>
#'   layer_dense(units = 32, activation = "relu") |>
#'   layer_dense(units = 10)
#' model <- keras_model(inputs, outputs)
#' model
#' @export
keras_model <- function(inputs = NULL, outputs = NULL, ...) {
  dots <- list(...)
  inputs <- as_tensor_list(inputs, "inputs")
  outputs <- as_tensor_list(outputs, "outputs")
  name <- check_string(dots$name, "name", null_ok = TRUE) %||% auto_name("functional")
  graph <- trace_graph(inputs, outputs)
  FunctionalModel$new(name, graph)
}

#' Create a sequential model
#'
#' A linear stack of layers, added with the `layer_*()` functions.
#'
#' @param input_shape Per-sample input shape. When `NULL`, the first
#'   layer's `input_shape` or the data given to [fit()] fixes it.
#' @param name Name of the model (default `"sequential"`, ...).
#' @param ... Layers to add.
#' @param input_name Name of the model's input layer (default
#'   `"input_layer"`, then `"input_layer_1"`, ...).
#' @return A sequential model.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 784) |>
#'   layer_dense(units = 32, activation = "relu") |>
#'   layer_dense(units = 10)
#' model
#' @export
keras_model_sequential <- function(input_shape = NULL, name = NULL, ..., input_name = NULL) {
  if (!is.null(input_shape)) input_shape <- check_shape(input_shape, "input_shape")
  check_string(name, "name", null_ok = TRUE)
  check_string(input_name, "input_name", null_ok = TRUE)
  model <- SequentialModel$new(name %||% auto_name("sequential"), input_shape, input_name)
  for (layer in list(...)) model$add(layer)
  model
}

as_tensor_list <- function(x, arg, call = sys.call(-1)) {
  if (is_keras_tensor(x)) return(list(x))
  if (is.list(x) && length(x) > 0 && all(vapply(x, is_keras_tensor, logical(1)))) return(unname(x))
  abort_value("{.arg {arg}} must be a symbolic tensor or a list of them, not {describe(x)}.", call = call)
}

# Collects the nodes between inputs and outputs, in creation order (which is
# a topological order: a node is created after its inputs).
trace_graph <- function(inputs, outputs, call = sys.call(-1)) {
  nodes <- list()
  visit <- function(t) {
    key <- as.character(t$node$id)
    if (!is.null(nodes[[key]])) return()
    nodes[[key]] <<- t
    for (i in t$node$inputs) visit(i)
  }
  for (o in outputs) visit(o)
  ids <- as.integer(names(nodes))
  nodes <- nodes[order(ids)]
  ids <- sort(ids)
  input_ids <- vapply(inputs, function(t) t$node$id, integer(1))
  for (t in nodes) {
    if (length(t$node$inputs) == 0 && !(t$node$id %in% input_ids)) {
      abort_value("The outputs depend on input {.val {t$node$layer$name}}, which is not in {.arg inputs}.",
                  call = call)
    }
  }
  for (t in inputs) {
    if (length(t$node$inputs) != 0) {
      abort_value("{.arg inputs} must come from {.fn keras_input}; {.val {t$node$layer$name}} is a layer output.",
                  call = call)
    }
    if (!(t$node$id %in% ids)) {
      abort_value("Input {.val {t$node$layer$name}} is not connected to the outputs.", call = call)
    }
  }
  layer_names <- vapply(nodes, function(t) t$node$layer$name, character(1))
  for (nm in unique(layer_names[duplicated(layer_names)])) {
    same <- nodes[layer_names == nm]
    shared <- identical(same[[1]]$node$layer, same[[2]]$node$layer)
    if (shared) {
      abort_value("Layer {.val {nm}} is called more than once in the model; shared layers are not supported yet.",
                  call = call)
    }
    abort_value("Two layers of the model are named {.val {nm}}; layer names must be unique.", call = call)
  }
  list(
    nodes = lapply(seq_along(nodes), function(k) {
      t <- nodes[[k]]
      list(layer = t$node$layer, shape = t$shape,
           inputs = match(vapply(t$node$inputs, function(i) i$node$id, integer(1)), ids) - 1L)
    }),
    inputs = match(input_ids, ids) - 1L,
    outputs = match(vapply(outputs, function(t) t$node$id, integer(1)), ids) - 1L
  )
}
