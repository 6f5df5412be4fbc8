# Layers, symbolic tensors and the graph they build.
#
# A layer is an R6 object holding its Keras class name, its name and its
# configuration. Calling it on a symbolic tensor (keras_input() or another
# layer's output) records a node; keras_model() walks the nodes back from its
# outputs to build the graph the C++ core runs. Weights do not live in layers
# but in the model's replicas (see model.R).

LayerNode <- R6::R6Class("mirrored_layer",
  public = list(
    class_name = NULL,
    name = NULL,
    # The Keras config, as the core's layer registry normalized it (every
    # option written out): what get_config() and .keras files show.
    config = NULL,
    # Seeds what the config leaves unseeded (initializers, dropout masks);
    # drawn from R's generator, so set_random_seed() fixes it.
    seed = NULL,
    # input_shape = given to the first layer of a sequential model.
    input_shape = NULL,
    # Values adapt() computed for the layer's variables (a list of arrays in
    # the layer's weights order), written into every model built with the
    # layer (R/layers-preprocessing.R); NULL when never adapted.
    state_values = NULL,
    # The models built with this layer, so that a later adapt() reaches them.
    models = list(),
    # The function users hold (as_layer_function()), made once so that the
    # same layer is always the same (identical) function.
    fn = NULL,
    # The per-sample input shapes of the first call, and the weights they
    # gave: every later call (a shared layer) must need the same weights.
    built_weights = NULL,
    # The output tensor of the layer's last call (layer$output).
    last_output = NULL,
    # The layer's own model when it is built or called on arrays outside a
    # model: list(model, inputs_shapes) (R/layer-eager.R).
    standalone = NULL,
    initialize = function(class_name, config, input_shape = NULL, call = sys.call(-1)) {
      self$class_name <- class_name
      self$seed <- draw_seed()
      self$config <- with_core(cpp_layer_spec(class_name, config, self$seed, NULL), call = call)$config
      # The core writes trainable = TRUE: the flag is the R side's (R/freeze.R).
      if (identical(config$trainable, FALSE)) self$config$trainable <- FALSE
      self$name <- self$config$name
      self$input_shape <- input_shape
    },
    # keras3's layer methods (R/layer-weights.R): the weights of the model
    # holding the layer.
    get_weights = function() layer_get_weights(self),
    # keras3's build(input_shape): makes the weights for inputs of that
    # (full, batch-first) shape (R/layer-eager.R).
    build = function(input_shape) layer_build(self, input_shape, call = sys.call()),
    set_weights = function(weights) layer_set_weights(self, weights, call = sys.call()),
    count_params = function() count_params(self),
    # The core's answer for these per-sample input shapes (a list of shapes):
    # output_shape, and weights (name, shape, trainable, size).
    spec = function(input_shapes, call = sys.call(-1)) {
      with_core(cpp_layer_spec(self$class_name, self$config, self$seed,
                               lapply(input_shapes, as.numeric)), call = call)
    },
    # Per-sample output shape for the given per-sample input shape(s).
    output_shape = function(input_shapes, call = sys.call(-1)) {
      if (!is.list(input_shapes)) input_shapes <- list(input_shapes)
      as.integer(self$spec(input_shapes, call = call)$output_shape)
    },
    # keras3's compute_output_shape(input_shape): the full output shape
    # (batch axis first, NA) for a full input shape, or a list of them.
    compute_output_shape = function(input_shape) {
      call <- sys.call()
      shape(NA, self$output_shape(build_sample_shapes(input_shape, call), call = call))
    },
    print = function(...) {
      cat("<", self$class_name, " name=", self$name, ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    built = function() !is.null(self$built_weights),
    # Keras' trainable flag (R/freeze.R), kept in the config.
    trainable = function(value) {
      if (missing(value)) return(!identical(self$config$trainable, FALSE))
      self$config$trainable <- check_trainable_value(value, call = NULL)
    },
    # Variable objects (R/variables.R); get_weights() gives the arrays.
    weights = function() layer_variables(self),
    trainable_weights = function() layer_variables(self, "trainable"),
    non_trainable_weights = function() layer_variables(self, "non_trainable"),
    output = function() {
      if (is.null(self$last_output)) abort_value("Layer {.val {self$name}} has never been called: it has no output.", call = NULL)
      self$last_output
    },
    input = function() {
      if (is.null(self$last_output)) abort_value("Layer {.val {self$name}} has never been called: it has no input.", call = NULL)
      if (identical(self$class_name, "InputLayer")) return(self$last_output)  # Keras: its own tensor
      ins <- self$last_output$node$inputs
      if (length(ins) == 1) ins[[1]] else ins
    }
  )
)

# ---- layers as functions ------------------------------------------------------
#
# What layer_*() returns without an input: a function, so that a layer can be
# called like keras3's (`dense <- layer_dense(units = 4); y <- dense(x)`),
# holding the Layer object. R6 objects cannot be called, so the function is
# the user-facing form and `$`, `$<-`, `[[` and print() forward to the Layer:
# `layer$name`, `layer$config` keep working. Its classes are
# c("mirrored_layer_function", "mirrored_layer", "function"), so code that
# asks inherits(x, "mirrored_layer") accepts both forms; code that stores a
# layer keeps the Layer object (layer_object()).

as_layer_function <- function(layer) {
  if (inherits(layer, "mirrored_layer_function")) return(layer)
  if (is.null(layer$fn)) layer$fn <- make_layer_function(layer)
  layer$fn
}

make_layer_function <- function(layer) {
  force(layer)
  f <- function(inputs, ...) {
    call <- sys.call()
    training <- call_training_arg(list(...), "layer", layer$name, call)
    if (missing(inputs)) {
      abort_value("Layer {.val {layer$name}} must be called on a symbolic tensor (or a list of them).",
                  call = call)
    }
    # keras3: a layer called on a sequential model is added to it.
    if (inherits(inputs, "mirrored_sequential")) return(compose_layer(inputs, layer, call = call))
    if (is_traced_input(inputs)) return(traced_sublayer_call(layer, inputs, training, call))
    trace_ctx <- current_layer_trace()  # an R array inside a custom layer's traced call()
    if (!is.null(trace_ctx) && (is.numeric(inputs) || is.logical(inputs)) && !is.object(inputs)) {
      return(traced_sublayer_call(layer, trace_add_constant(trace_ctx, inputs), training, call))
    }
    if (is_eager_input(inputs)) return(eager_layer_call(layer, inputs, training, call))
    call_layer(layer, inputs, training = training, call = call)
  }
  class(f) <- c("mirrored_layer_function", "mirrored_layer", "function")
  f
}

# The Layer (R6) object behind either form.
layer_object <- function(x) {
  if (inherits(x, "mirrored_layer_function")) environment(unclass(x))$layer else x
}

#' @export
`$.mirrored_layer_function` <- function(x, name) {
  l <- layer_object(x)
  # A custom layer's own fields (self$units <- ... in initialize()), as
  # keras3's layer objects show them.
  if (inherits(l, "mirrored_traced_layer") && !is.null(l$user) && !exists(name, envir = l, inherits = FALSE)) {
    return(l$user[[name]])
  }
  l[[name]]
}

#' @export
`[[.mirrored_layer_function` <- function(x, i, ...) layer_object(x)[[i]]

#' @export
`$<-.mirrored_layer_function` <- function(x, name, value) {
  l <- layer_object(x)
  l[[name]] <- value
  x
}

#' @export
print.mirrored_layer_function <- function(x, ...) {
  print(layer_object(x))
  invisible(x)
}

#' @export
format.mirrored_layer_function <- function(x, ...) {
  l <- layer_object(x)
  paste0("<", l$class_name, " name=", l$name, ">")
}

#' @export
names.mirrored_layer_function <- function(x) names(layer_object(x))

# A layer of Keras class `class_name`: the layer_*() constructors' common end.
# `config` holds the layer's own options in Keras' names; `dots` the checked
# `...` (name, input_shape, trainable, dtype).
new_layer <- function(class_name, config, dots, call = sys.call(-1)) {
  config <- c(list(name = dots$name %||% auto_name(to_snake_case(class_name))), config)
  if (!is.null(dots$trainable)) config$trainable <- dots$trainable
  # The given policy, else the global one (R/mixed-precision.R).
  dtype <- layer_dtype_config(dots$dtype, call_name(call), call = call)
  if (!is.null(dtype)) config$dtype <- dtype
  LayerNode$new(class_name, config, input_shape = dots$input_shape, call = call)
}

# The InputLayer of a model taking samples of per-sample `shape`.
input_layer <- function(shape, name = NULL, dtype = "float32", call = sys.call(-1)) {
  dims <- lapply(as.integer(shape), function(d) if (is.na(d)) NULL else d)  # NULL: variable length
  LayerNode$new("InputLayer", list(batch_shape = c(list(NULL), dims),
                                   dtype = dtype, name = name %||% auto_name("input_layer")),
                call = call)
}

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
# `training`: keras3's training argument of the call (NULL: none).
keras_tensor <- function(layer, inputs, shape, training = NULL, dtype = "float32") {
  structure(list(node = list(id = next_node_id(), layer = layer, inputs = inputs, training = training),
                 shape = as.integer(shape), dtype = dtype),
            class = "mirrored_keras_tensor")
}

is_keras_tensor <- function(x) inherits(x, "mirrored_keras_tensor")

#' @export
print.mirrored_keras_tensor <- function(x, ...) {
  cat("<KerasTensor shape=(None", if (length(x$shape)) paste0(", ", paste(dim_text(x$shape), collapse = ", ")),
      "), dtype=", x$dtype, ", name=", x$node$layer$name, ">\n", sep = "")
  invisible(x)
}

#' @export
dim.mirrored_keras_tensor <- function(x) c(NA_integer_, x$shape)

# What every layer_*() function does with its first argument: missing ->
# the layer; a symbolic tensor -> the layer applied to it; a sequential
# model -> the layer added to it (in place, model returned invisibly).
compose_layer <- function(object, layer, call = sys.call(-1)) {
  if (missing(object) || is.null(object)) return(as_layer_function(layer))
  if (is_keras_tensor(object) ||
      (is.list(object) && length(object) && all(vapply(object, is_keras_tensor, logical(1))))) {
    return(call_layer(layer, object, call = call))
  }
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

# The `training` argument of a call of a layer or model (keras3's
# `layer(x, training = )`): NULL, TRUE or FALSE; any other argument is an
# error naming the layer.
call_training_arg <- function(dots, what, name, call) {
  nms <- names(dots) %||% rep("", length(dots))
  unknown <- setdiff(nms, "training")
  if (length(unknown) || any(!nzchar(nms))) {
    bad <- if (any(!nzchar(nms))) "an unnamed argument" else paste0("{.arg ", unknown[1], "}")
    abort_value(paste0("Unknown argument to ", what, " {.val {name}}: ", bad, "; a ", what,
                       " is called on its inputs (and {.arg training})."), call = call)
  }
  training <- dots$training
  if (!is.null(training) && !(is.logical(training) && length(training) == 1 && !is.na(training))) {
    abort_value("{.arg training} must be TRUE, FALSE or NULL, not {describe(training)}.", call = call)
  }
  training
}

# `x`: one symbolic tensor, or a list of them for layers of several inputs.
# `training`: NULL (the step decides) or TRUE / FALSE for this call.
call_layer <- function(layer, x, training = NULL, call = sys.call(-1)) {
  layer <- layer_object(layer)
  xs <- if (is_keras_tensor(x)) list(x) else x
  if (!is.list(xs) || inherits(xs, "mirrored_model") || !length(xs) ||
      !all(vapply(xs, is_keras_tensor, logical(1)))) {
    abort_value("Layer {.val {layer$name}} can only be called on a symbolic tensor (or a list of them), not {describe(x)}.",
                call = call)
  }
  xs <- unname(xs)
  shapes <- lapply(xs, function(t) t$shape)
  spec <- layer$spec(shapes, call = call)
  weights <- lapply(spec$weights$shape %||% list(), as.integer)
  if (is.null(layer$built_weights)) {
    layer$built_weights <- list(shapes = shapes, weights = weights)
  } else if (!identical(layer$built_weights$weights, weights)) {
    fmt <- function(ss) paste(vapply(ss, function(s) paste0("(None, ", paste(dim_text(s), collapse = ", "), ")"), ""),
                              collapse = ", ")
    abort_kind("shape", c("Layer {.val {layer$name}} is shared: it was first called on {fmt(layer$built_weights$shapes)} and is now called on {fmt(shapes)}, which needs other weights.",
                          i = "A shared layer has one set of weights: call it on inputs of compatible shapes."),
               call = call)
  }
  if (isTRUE(training)) {
    abort_not_yet("Calling layer {.val {layer$name}} with {.code training = TRUE} is not supported yet: give {.code training = FALSE} (inference mode in every pass) or leave it out.",
                  call = call)
  }
  t <- keras_tensor(layer, xs, as.integer(spec$output_shape), training)
  layer$last_output <- t
  t
}
