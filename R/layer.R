# Layers, symbolic tensors and the graph they build.
#
# A layer is an R6 object holding its Keras class name, its name and its
# configuration. Calling it on a symbolic tensor (keras_input() or another
# layer's output) records a node; keras_model() walks the nodes back from its
# outputs to build the graph the C++ core runs. Weights do not live in layers
# but in the model's replicas (see model.R).

Layer <- R6::R6Class("mirrored_layer",
  public = list(
    class_name = NULL,
    name = NULL,
    config = NULL,
    initialize = function(class_name, name, config) {
      self$class_name <- class_name
      self$name <- name
      self$config <- config
    },
    # Per-sample output shape for the given per-sample input shape.
    output_shape = function(input_shape) {
      switch(self$class_name,
        Dense = c(utils::head(input_shape, -1), self$config$units),
        Flatten = prod(input_shape),
        input_shape
      )
    },
    print = function(...) {
      cat("<", self$class_name, " name=", self$name, ">\n", sep = "")
      invisible(self)
    }
  )
)

# Keras' automatic names: the snake_case class name, then _1, _2, ... for
# later layers of the same class in this R session.
.names <- new.env(parent = emptyenv())
auto_name <- function(base) {
  n <- .names[[base]]
  .names[[base]] <- if (is.null(n)) 1L else n + 1L
  if (is.null(n)) base else paste0(base, "_", n)
}

.node_counter <- new.env(parent = emptyenv())
next_node_id <- function() {
  id <- if (is.null(.node_counter$id)) 1L else .node_counter$id + 1L
  .node_counter$id <- id
  id
}

# A symbolic tensor: the output of one node (a layer applied to inputs).
keras_tensor <- function(layer, inputs, shape) {
  structure(list(node = list(id = next_node_id(), layer = layer, inputs = inputs),
                 shape = as.integer(shape), dtype = "float32"),
            class = "mirrored_keras_tensor")
}

is_keras_tensor <- function(x) inherits(x, "mirrored_keras_tensor")

#' @export
print.mirrored_keras_tensor <- function(x, ...) {
  cat("<KerasTensor shape=(None", if (length(x$shape)) paste0(", ", paste(x$shape, collapse = ", ")),
      "), dtype=", x$dtype, ", name=", x$node$layer$name, ">\n", sep = "")
  invisible(x)
}

#' @export
dim.mirrored_keras_tensor <- function(x) c(NA_integer_, x$shape)

# What every layer_*() function does with its first argument: missing ->
# the layer; a symbolic tensor -> the layer applied to it; a sequential
# model -> the layer added to it (in place, model returned invisibly).
compose_layer <- function(object, layer, call = sys.call(-1)) {
  if (missing(object) || is.null(object)) return(layer)
  if (is_keras_tensor(object)) return(call_layer(layer, object, call = call))
  if (inherits(object, "mirrored_sequential")) {
    object$add(layer)
    return(invisible(object))
  }
  if (inherits(object, "mirrored_model")) {
    abort_value("{.arg object} is a functional model; layers are added to sequential models only.",
                call = call)
  }
  abort_value(c("{.arg object} must be a symbolic tensor (from {.fn keras_input}), a sequential model,",
                "or missing; not {describe(object)}."), call = call)
}

call_layer <- function(layer, x, call = sys.call(-1)) {
  if (!is_keras_tensor(x)) {
    abort_value("Layer {.val {layer$name}} can only be called on a symbolic tensor, not {describe(x)}.",
                call = call)
  }
  if (layer$class_name == "Dense" && length(x$shape) < 1) {
    abort_value("Layer {.val {layer$name}} (Dense) needs an input of rank >= 1 per sample.", call = call)
  }
  keras_tensor(layer, list(x), layer$output_shape(x$shape))
}
