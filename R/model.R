#' Create a symbolic input
#'
#' The start of a functional model: a placeholder for a batch of samples of
#' the given per-sample `shape`. `layer_input()` is keras3's older name for
#' it (the same function).
#'
#' @param shape Per-sample shape, e.g. `784` or `c(28, 28)` (the batch
#'   dimension is left out). One axis may be `NA` (or `NULL` in a list or
#'   [shape()]): a variable length, e.g. `c(NA)` for sequences of ids or
#'   `c(NA, 16)` for sequences of 16 features. Each batch then takes one
#'   length there (arrays: theirs; datasets: each batch's, e.g. from
#'   [dataset_padded_batch()]); the model runs every length with the same
#'   weights, so a layer whose weights would depend on the length (a
#'   [layer_dense()] after [layer_flatten()]) is an error. Memory is sized for
#'   the longest length seen; once it has run, shorter ones allocate nothing.
#'   Losses and metrics written in R need a fixed-length output, and
#'   [predict()] stacks batches only of one length (else use
#'   [predict_on_batch()]). More than one variable axis per input is not
#'   supported yet.
#' @param batch_size Not used for training (batches may have any size);
#'   accepted for compatibility.
#' @param dtype The input's dtype: `"float32"` (the default), or `"int32"`,
#'   `"int64"` or `"bool"` for ids (an Embedding's input, lookups). The data
#'   given to an integer input must hold whole numbers (logical values for
#'   `"bool"`), at most 2^24 in magnitude: batches travel as float32, exact up
#'   to there.
#' @param sparse,ragged `NULL` or `FALSE`; sparse and ragged inputs are not
#'   supported yet.
#' @param batch_shape The shape with the batch dimension first (`NA` for
#'   any batch size), instead of `shape` and `batch_size`, as Keras takes it.
#' @param name Optional name of the input layer.
#' @param tensor,optional Keras' input wrapping an existing tensor and
#'   optional (`NULL`-able) inputs: not supported yet (`NULL`, `FALSE`).
#' @return A symbolic tensor to call layers on.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' inputs <- keras_input(shape = 784)
#' inputs
#' keras_input(batch_shape = c(NA, 28, 28))
#' # sequences of any length
#' keras_input(shape = c(NA), dtype = "int32")
#' @export
keras_input <- function(shape = NULL, batch_size = NULL, dtype = NULL, sparse = NULL, ragged = NULL,
                        batch_shape = NULL, name = NULL, tensor = NULL, optional = FALSE) {
  if (!is.null(batch_shape)) {
    # Keras' InputLayer: batch_shape replaces both shape and batch_size.
    if (!is.null(shape)) abort_value("You cannot pass both {.arg shape} and {.arg batch_shape} at the same time.")
    if (!is.null(batch_size)) {
      abort_value("You cannot pass both {.arg batch_size} and {.arg batch_shape} at the same time.")
    }
    if (is.list(batch_shape)) batch_shape <- shape_dims(batch_shape)
    if (!(is.numeric(batch_shape) || (is.logical(batch_shape) && all(is.na(batch_shape)))) ||
        length(batch_shape) < 2) {
      abort_value("{.arg batch_shape} must be the batch size (or NA) followed by the per-sample shape, not {describe(batch_shape)}.")
    }
    if (!is.na(batch_shape[[1]])) batch_size <- batch_shape[[1]]
    shape <- batch_shape[-1]
  }
  check_variable_axes(shape, if (is.null(batch_shape)) "shape" else "batch_shape")
  shape <- check_shape(shape, "shape", na_ok = TRUE)
  check_int(batch_size, "batch_size", min = 1, null_ok = TRUE)
  dtype <- check_input_dtype(dtype, "dtype")
  if (isTRUE(sparse)) abort_not_yet("{.arg sparse} = TRUE (sparse inputs) is not supported yet.")
  if (isTRUE(ragged)) abort_not_yet("{.arg ragged} = TRUE (ragged inputs) is not supported yet.")
  if (!is.null(tensor)) abort_not_yet("{.arg tensor} (an input wrapping an existing tensor) is not supported yet.")
  if (!identical(optional, FALSE)) abort_not_yet("{.arg optional} = TRUE (inputs that may be NULL) is not supported yet.")
  check_string(name, "name", null_ok = TRUE)
  layer <- input_layer(shape, name, dtype)
  layer$last_output <- keras_tensor(layer, list(), shape, dtype = dtype)
  layer$last_output
}

# A shape's dimensions as a vector, NA for an unknown one (NULL in a list or
# a keras3 shape()); unlist() would drop the NULLs silently.
shape_dims <- function(x) {
  if (!is.list(x)) return(x)
  vapply(x, function(d) if (is.null(d) || (length(d) == 1 && is.na(d))) NA_real_ else as.numeric(d)[1], numeric(1))
}

# Variable-length axes (NA/NULL after the batch axis): each batch takes one
# length there (the core binds the model's graph to it, src/mr/nn/graph.h);
# one such axis per input is built.
check_variable_axes <- function(shape, arg, call = sys.call(-1)) {
  dims <- shape_dims(shape)
  if ((is.numeric(dims) || is.logical(dims)) && sum(is.na(dims)) > 1) {
    abort_not_yet(c("More than one variable-length axis ({.code NA} or {.code NULL} in {.arg {arg}}) is not supported yet; one per input is.",
                    i = "Give every other axis its size, e.g. {.code shape = c(NA, 64)}."),
                  call = call)
  }
}

# keras_input()'s dtype: float32, or integers and booleans (ids).
input_dtypes <- c("float32", "int32", "int64", "bool")
check_input_dtype <- function(dtype, arg, call = sys.call(-1)) {
  if (is.null(dtype)) return("float32")
  if (!is.character(dtype) || length(dtype) != 1 || !dtype %in% input_dtypes) {
    if (is.character(dtype) && length(dtype) == 1 && dtype %in% c("float16", "bfloat16", "float64", "int8", "int16", "uint8", "uint16", "uint32", "uint64", "string", "complex64")) {
      abort_not_yet("Inputs of dtype {.val {dtype}} are not supported yet; use one of {.val {input_dtypes}}.", call = call)
    }
    abort_value("{.arg {arg}} must be one of {.val {input_dtypes}}, not {describe(dtype)}.", call = call)
  }
  dtype
}

#' @rdname keras_input
#' @export
layer_input <- keras_input

#' Create a functional model
#'
#' Builds a model from symbolic inputs and outputs: the layers between them
#' form a directed acyclic graph. Its weights are created (from their
#' initializers' seeds) on the devices of the strategy in scope, or on the
#' CPU.
#'
#' @param inputs A symbolic tensor from [keras_input()] (or a list of them,
#'   in the order `x` gives the arrays to [fit()]).
#' @param outputs The symbolic tensor computed from `inputs`, or a list of
#'   them; a named list names the outputs (the names of [compile()]'s
#'   per-output losses and metrics, of the logs and of [predict()]'s list),
#'   else the output layers' names do.
#' @param ... `name`: the model's name (default `"functional"`, then
#'   `"functional_1"`, ...); `trainable`: `FALSE` freezes every layer (see
#'   [freeze_weights()]).
#' @return A model, with reference semantics: [compile()] and [fit()] change
#'   it in place. The model is also a function: see "Models as layers".
#' @section Models as layers:
#' A model (functional or sequential) can be called on symbolic tensors like
#' a layer, `y <- model(x)` (a list of tensors for a model of several inputs;
#' it returns a list for a model of several outputs), or added to a
#' sequential model. Its layers become part of the new model: a model called
#' twice has one set of weights, and [summary()] and `model$layers` show it
#' as one layer (of type `Functional` or `Sequential`), as Keras does;
#' [save_model()] writes it in Keras 3's layout.
#'
#' The new model starts from the nested model's current weights (a trained
#' or loaded model keeps what it learned). Unlike Keras, where both share
#' the same variables, the two models then hold their own copies: the nested
#' model object receives the outer model's weights at the end of each
#' [fit()] and when weights are loaded into the outer model, but not while
#' the outer model trains, and weights set on the nested model afterwards do
#' not reach the outer model.
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
#'
#' # A model used as a layer of another model.
#' x <- keras_input(shape = 784)
#' classifier <- keras_model(x, layer_dense(model(x), units = 2))
#' summary(classifier)
#' @export
keras_model <- function(inputs = NULL, outputs = NULL, ...) {
  dots <- list(...)
  unknown <- setdiff(names(dots), c("name", "trainable"))
  if (length(unknown) || (length(dots) && is.null(names(dots)))) {
    abort_value("Unknown argument{?s} {.arg {if (length(unknown)) unknown else '<unnamed>'}} to {.fn keras_model}.")
  }
  inputs <- as_tensor_list(inputs, "inputs")
  output_names <- if (is.list(outputs) && !is_keras_tensor(outputs)) names(outputs)
  outputs <- as_tensor_list(outputs, "outputs")
  if (!is.null(output_names) && (anyNA(output_names) || !all(nzchar(output_names)) || anyDuplicated(output_names))) {
    abort_value("A named list of {.arg outputs} needs unique, non-empty names; got {.val {output_names}}.")
  }
  name <- check_string(dots$name, "name", null_ok = TRUE) %||% auto_name("functional")
  graph <- collect_model_graph(inputs, outputs)
  graph$output_names <- output_names
  model <- FunctionalModel$new(name, graph)
  if (!is.null(dots$trainable) && !check_trainable_value(dots$trainable)) model$trainable <- FALSE
  as_model_function(model)
}

#' Create a sequential model
#'
#' A linear stack of layers, added with the `layer_*()` functions, given in
#' `layers`, or added with `...`.
#'
#' @param input_shape Per-sample input shape. When `NULL`, the first
#'   layer's `input_shape`, `input_batch_shape` or the data given to [fit()]
#'   fixes it.
#' @param name Name of the model (default `"sequential"`, ...).
#' @param ... Layers to add (after those of `layers`).
#' @param input_dtype `NULL` (float32) or the input's dtype, as
#'   [keras_input()]'s `dtype`.
#' @param input_batch_size Accepted for compatibility (batches may have any
#'   size).
#' @param input_sparse,input_ragged,input_tensor Not supported yet: `NULL`
#'   (or `FALSE`).
#' @param input_batch_shape The input shape with the batch dimension first
#'   (`list(NULL, 28, 28)`), instead of `input_shape`.
#' @param input_name Name of the model's input layer (default
#'   `"input_layer"`, then `"input_layer_1"`, ...).
#' @param input_optional Only `FALSE`.
#' @param trainable Whether the model's layers train (`FALSE` freezes them
#'   all, as [freeze_weights()]).
#' @param layers A list of layers (or models) to add, in order.
#' @return A sequential model; like any model, it can be called on symbolic
#'   tensors or added to another model (see "Models as layers" in
#'   [keras_model()]).
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 784) |>
#'   layer_dense(units = 32, activation = "relu") |>
#'   layer_dense(units = 10)
#' model
#' model2 <- keras_model_sequential(input_shape = 4, layers = list(
#'   layer_dense(units = 8, activation = "relu"), layer_dense(units = 2)))
#' # A model as the first layer of another.
#' model3 <- keras_model_sequential(layers = list(model2, layer_dense(units = 1)))
#' model3
#' @export
keras_model_sequential <- function(input_shape = NULL, name = NULL, ..., input_dtype = NULL,
                                   input_batch_size = NULL, input_sparse = NULL, input_ragged = NULL,
                                   input_batch_shape = NULL, input_name = NULL, input_tensor = NULL,
                                   input_optional = FALSE, trainable = TRUE, layers = list()) {
  if (inherits(input_shape, "mirrored_layer") || inherits(input_shape, "mirrored_model") ||
      (is.list(input_shape) && any(vapply(input_shape, inherits, logical(1), "mirrored_layer")))) {
    abort_value("{.arg layers} must be passed in as a named argument, not as {.arg input_shape}.")
  }
  if (!is.null(input_batch_shape)) {
    if (!is.null(input_shape)) abort_value("Give {.arg input_shape} or {.arg input_batch_shape}, not both.")
    bs <- as.list(input_batch_shape)
    if (length(bs) < 2 || !(is.null(bs[[1]]) || (is.numeric(bs[[1]]) && (is.na(bs[[1]]) || bs[[1]] >= 1)))) {
      abort_value("{.arg input_batch_shape} must be {.code list(NULL, d1, ...)} (batch dimension first), not {describe(input_batch_shape)}.")
    }
    check_variable_axes(bs[-1], "input_batch_shape")
    input_shape <- check_shape(bs[-1], "input_batch_shape", na_ok = TRUE)
  }
  if (!is.null(input_shape)) {
    check_variable_axes(input_shape, "input_shape")
    input_shape <- check_shape(input_shape, "input_shape", na_ok = TRUE)
  }
  check_string(name, "name", null_ok = TRUE)
  check_string(input_name, "input_name", null_ok = TRUE)
  input_dtype <- check_input_dtype(input_dtype, "input_dtype")
  check_int(input_batch_size, "input_batch_size", min = 1, null_ok = TRUE)
  for (nm in c("input_sparse", "input_ragged")) {
    v <- get(nm)
    if (!is.null(v) && !identical(v, FALSE)) abort_not_yet("{.arg {nm}} is not supported yet; use NULL or FALSE, not {describe(v)}.")
  }
  if (!is.null(input_tensor)) abort_not_yet("{.arg input_tensor} is not supported yet; use NULL (and {.arg input_shape}).")
  if (!identical(input_optional, FALSE)) abort_not_yet("{.arg input_optional} must be FALSE; optional inputs are not supported yet.")
  check_trainable_value(trainable)
  if (inherits(layers, "mirrored_layer") || inherits(layers, "mirrored_model")) layers <- list(layers)
  if (!is.list(layers)) abort_value("{.arg layers} must be a list of layers, not {describe(layers)}.")
  model <- SequentialModel$new(name %||% auto_name("sequential"), input_shape, input_name, input_dtype)
  for (layer in c(layers, list(...))) model$add(layer)
  if (!trainable) model$trainable <- FALSE
  as_model_function(model)
}

#' Remove the last layer of a sequential model
#'
#' keras3's `pop_layer()`: the sequential model loses its last layer; the
#' other layers keep their weights. Compile the model again before training
#' it (its outputs changed).
#'
#' @param object A sequential model.
#' @param rebuild Keras rebuilds the model's graph now (`TRUE`) or at its
#'   next use (`FALSE`); mirrored always rebuilds it now, which no later call
#'   can tell apart.
#' @returns The model, invisibly (modified in place).
#' @family model functions
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |>
#'   layer_dense(units = 8) |> layer_dense(units = 2)
#' pop_layer(model)
#' length(model$layers)
#' @export
pop_layer <- function(object, rebuild = TRUE) {
  m <- model_object(object)
  if (!inherits(m, "mirrored_sequential")) {
    abort_value("{.arg object} must be a sequential model (see {.fn keras_model_sequential}), not {describe(object)}.")
  }
  m$pop(rebuild)
  invisible(object)
}

# For each node of a graph: -1, or the 0-based index of the earlier node
# whose layer it calls again (a shared layer; the first call owns it).
graph_shares <- function(g) {
  seen <- list()
  vapply(seq_along(g$nodes), function(k) {
    l <- g$nodes[[k]]$layer
    for (j in seq_along(seen)) if (identical(seen[[j]]$layer, l)) return(seen[[j]]$index)
    seen[[length(seen) + 1L]] <<- list(layer = l, index = k - 1L)
    -1L
  }, integer(1))
}

as_tensor_list <- function(x, arg, call = sys.call(-1)) {
  if (is_keras_tensor(x)) return(list(x))
  if (is.list(x) && length(x) > 0 && all(vapply(x, is_keras_tensor, logical(1)))) return(unname(x))
  abort_value("{.arg {arg}} must be a symbolic tensor or a list of them, not {describe(x)}.", call = call)
}

# Collects the nodes between inputs and outputs, in creation order (which is
# a topological order: a node is created after its inputs).
collect_model_graph <- function(inputs, outputs, call = sys.call(-1)) {
  nodes <- list()
  visit <- function(t) {
    key <- as.character(t$node$id)
    if (!is.null(nodes[[key]])) return()
    nodes[[key]] <<- t
    for (i in t$node$inputs) visit(i)
    # A nested model's call is inlined whole (all its outputs), so that it
    # stays one layer with all its weights.
    for (o in t$node$scope$outputs) visit(o)
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
      abort_value(c("{.arg inputs} holds input {.val {t$node$layer$name}}, which is not connected to {.arg outputs}:",
                    "every input must be used to compute the outputs."), call = call)
    }
  }
  # A layer called at several places (a shared layer) is one layer: its
  # nodes share its weights. Two different layers may not share a name. The
  # layers of a nested model are named within that model, as in Keras: at
  # this level the model's name counts.
  owner <- function(t) t$node$scope$model %||% t$node$layer
  layer_names <- vapply(nodes, function(t) owner(t)$name, character(1))
  for (nm in unique(layer_names[duplicated(layer_names)])) {
    same <- nodes[layer_names == nm]
    for (t in same[-1]) {
      if (!identical(owner(t), owner(same[[1]]))) {
        abort_value("Two layers of the model are named {.val {nm}}; layer names must be unique.", call = call)
      }
    }
    if (is.null(same[[1]]$node$scope) && same[[1]]$node$layer$class_name == "InputLayer") {
      abort_value("Input {.val {nm}} appears twice in the model.", call = call)
    }
  }
  list(
    nodes = lapply(seq_along(nodes), function(k) {
      t <- nodes[[k]]
      list(layer = t$node$layer, shape = t$shape, id = t$node$id, scope = t$node$scope, tensor = t,
           inputs = match(vapply(t$node$inputs, function(i) i$node$id, integer(1)), ids) - 1L,
           training = t$node$training)
    }),
    inputs = match(input_ids, ids) - 1L,
    outputs = match(vapply(outputs, function(t) t$node$id, integer(1)), ids) - 1L
  )
}
