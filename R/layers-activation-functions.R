# Layers whose activation is an R function (keras3's `layer_dense(units,
# activation = custom_fn)`, `layer_activation(activation = custom_fn)`).
# Such a layer is a layer written in R (R/layers-custom.R) of Keras' class
# name: a Dense computes `activation(inputs %*% kernel + bias)` with the
# weights Keras' Dense has (kernel, then bias), an Activation
# `activation(inputs)`; both are traced at their first call into a graph
# the core runs and differentiates, so the function runs in no step. Their
# config is Keras' (the function as Keras serializes one: its registered
# name, register_keras_serializable()) plus the traced graph, so a saved
# model loads and runs without the function.

# The Keras config of an activation function: a registered one by its
# registered name ("package>name"), another as a plain function.
activation_function_config <- function(fn) {
  found <- registered_names(function(o) identical(o, fn))
  if (!is.null(found$full)) {
    return(list(module = "builtins", class_name = "function", config = sub("^.*>", "", found$full),
                registered_name = found$full))
  }
  list(module = "builtins", class_name = "function", config = found$any %||% "custom_activation",
       registered_name = "function")
}

# Whether `activation` is an R function mirrored has no built-in name for.
is_activation_function <- function(activation) {
  is.function(activation) && is.null(attr(activation, "mirrored_activation", exact = TRUE))
}

DenseActivationFunction <- R6::R6Class("Dense",
  inherit = CustomLayerBase, cloneable = FALSE, lock_objects = FALSE,
  public = list(
    units = NULL, activation = NULL, use_bias = TRUE, kernel_initializer = NULL, bias_initializer = NULL,
    initialize = function(units, activation, use_bias, kernel_initializer, bias_initializer, ...) {
      super$initialize(...)
      self$units <- units
      self$activation <- activation
      self$use_bias <- use_bias
      self$kernel_initializer <- kernel_initializer
      self$bias_initializer <- bias_initializer
    },
    build = function(input_shape) {
      d <- utils::tail(as.integer(input_shape), 1)
      self$kernel <- self$add_weight(shape = shape(d, self$units), initializer = self$kernel_initializer,
                                     name = "kernel")
      if (self$use_bias) {
        self$bias <- self$add_weight(shape = shape(self$units), initializer = self$bias_initializer, name = "bias")
      }
    },
    call = function(inputs) {
      y <- op_matmul(inputs, self$kernel)
      if (self$use_bias) y <- op_add(y, self$bias)
      self$activation(y)
    },
    get_config = function() {
      list(units = self$units, activation = activation_function_config(self$activation), use_bias = self$use_bias,
           kernel_initializer = initializer_keras_config(self$kernel_initializer),
           bias_initializer = initializer_keras_config(self$bias_initializer),
           kernel_regularizer = NULL, bias_regularizer = NULL, kernel_constraint = NULL,
           bias_constraint = NULL, quantization_config = NULL)
    }
  )
)

ActivationFunction <- R6::R6Class("Activation",
  inherit = CustomLayerBase, cloneable = FALSE, lock_objects = FALSE,
  public = list(
    activation = NULL,
    initialize = function(activation, ...) {
      super$initialize(...)
      self$activation <- activation
    },
    call = function(inputs) self$activation(inputs),
    get_config = function() list(activation = activation_function_config(self$activation))
  )
)

# The layer of instance `user` composed with `object` (as compose_layer()).
compose_activation_function_layer <- function(object, class_name, user) {
  compose_layer(object, TracedLayerNode$new(class_name, user = user))
}

# layer_dense(activation = fn): the options a traced layer cannot hold yet
# are errors; `dots` as layer_dots() checked them.
dense_with_activation_function <- function(object, units, activation, use_bias, k, b, options, dots,
                                           call = sys.call(-1)) {
  if (length(options)) {
    abort_not_yet(c("{.fn layer_dense} with an R function as {.arg activation} does not take {.arg {names(options)[1]}} yet.",
                    i = "Use a built-in activation name with it, or add the penalty with {.code self$add_loss()} in a {.fn Layer} class."),
                  call = call)
  }
  user <- do.call(DenseActivationFunction$new,
                  c(list(units = units, activation = activation, use_bias = use_bias, kernel_initializer = k,
                         bias_initializer = b), dots))
  compose_activation_function_layer(object, "Dense", user)
}

activation_with_function <- function(object, activation, dots) {
  user <- do.call(ActivationFunction$new, c(list(activation = activation), dots))
  compose_activation_function_layer(object, "Activation", user)
}
