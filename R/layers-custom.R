# Custom layers written in R (issue 15, docs/traced-graphs.md §5): keras3's
# Layer() / new_layer_class() and layer_lambda(). A custom layer's call() is
# traced once, on the shapes of its first call, into a graph the core runs
# as the registry kind "Traced" (nn/layers/traced_layer.cpp): its config
# carries the graph under "mirrored_graph", so the layer is placed,
# replicated, all-reduced, frozen and saved like a built-in one, and no R
# runs in the step.
#
# Two objects make one custom layer: the user's instance (an R6 object of
# the class Layer() made, holding the user's fields and methods, `self` in
# them), and a TracedLayerNode, the graph node the model holds (R/layer.R).
# build() runs once on the user's instance; add_weight() returns a handle
# that stands for the weight in the user's fields, and tracing swaps every
# handle for the weight's traced tensor while call() runs.

# ---- the base class of every user class --------------------------------------

CustomLayerBase <- R6::R6Class("mirrored_custom_layer_base",
  cloneable = FALSE, lock_objects = FALSE,
  public = list(
    name = NULL,
    trainable = TRUE,
    dtype = NULL,
    built = FALSE,
    # Keras' Layer.__init__ arguments mirrored honours; `...` takes what a
    # user's initialize() forwards, and anything else is an error.
    initialize = function(..., name = NULL, trainable = TRUE, dtype = NULL, input_shape = NULL) {
      cls <- class(self)[1]
      dots <- list(...)
      check_dots_empty(dots, cls, c("name", "trainable", "dtype", "input_shape"), call = NULL)
      self$name <- if (is.null(name)) auto_name(to_snake_case(cls)) else check_string(name, "name", call = NULL)
      self$trainable <- check_trainable_value(trainable, call = NULL)
      self$dtype <- dtype
      private$.input_shape <- input_shape
      private$.weights <- list()
      invisible(self)
    },
    # keras3's add_weight(): the weight as the graph declares it. Returns a
    # handle that stands for the weight in the user's fields (tracing swaps
    # it for the weight's tensor).
    add_weight = function(shape = NULL, initializer = NULL, dtype = NULL, trainable = TRUE,
                          autocast = TRUE, regularizer = NULL, constraint = NULL,
                          aggregation = "none", overwrite_with_gradient = FALSE, name = NULL) {
      fn <- "add_weight"
      dims <- as.integer(shape(shape %||% integer()))
      if (anyNA(dims)) abort_value("{.arg shape} of {.fn {fn}} must be fully known, not {format(shape(shape))}.", call = NULL)
      if (!is.null(dtype) && !identical(dtype, "float32")) {
        abort_not_yet("{.fn {fn}}: weights are float32; {.arg dtype} = {.val {dtype}} is not supported yet.", call = NULL)
      }
      # Keras configs the core applies as for a built-in layer's weights.
      reg <- regularizer_keras_config(regularizer, "regularizer", call = NULL)
      con <- constraint_keras_config(constraint, "constraint", call = NULL)
      if (!identical(aggregation, "none") && !identical(aggregation, "mean")) {
        abort_not_yet("{.fn {fn}}: {.arg aggregation} = {.val {aggregation}} is not supported yet.", call = NULL)
      }
      if (isTRUE(overwrite_with_gradient)) {
        abort_not_yet("{.fn {fn}}: {.arg overwrite_with_gradient} is not supported yet.", call = NULL)
      }
      # Keras' default: glorot_uniform for float weights.
      init <- as_initializer(initializer %||% "glorot_uniform", "initializer", call = NULL)
      index <- length(private$.weights) + 1L
      wname <- if (is.null(name)) paste0("variable", if (index > 1) paste0("_", index - 1L)) else
        check_string(name, "name", call = NULL)
      private$.weights[[index]] <- list(name = wname, shape = dims,
                                        initializer = initializer_keras_config(init),
                                        trainable = check_bool(trainable, "trainable", call = NULL),
                                        regularizer = reg, constraint = con)
      structure(list(index = index, name = wname, shape = dims), class = "mirrored_weight_handle")
    },
    # keras3's add_loss() in call(): a loss term of the layer's own (an
    # activity regularization, a VAE's KL term), computed from the traced
    # call's tensors and added to the model's loss in training and
    # evaluation. Terms are summed (a non-scalar term first, as Keras
    # does) into one more output of the layer's graph
    # (nn/layers/traced_layer.cpp); each replica's value counts with the
    # weight of its rows, so a batch mean gives the same numbers whatever
    # the split.
    add_loss = function(loss) {
      if (!is_traced_tensor(loss)) {
        abort_not_yet(c("{.code self$add_loss()} takes a tensor computed in {.fn call} from its inputs or weights, not {describe(loss)}.",
                        i = "A constant adds nothing to train: leave it out."), call = NULL)
      }
      ctx <- loss$ctx
      if (tt_batched(loss)) {
        trace_abort(ctx, paste0("self$add_loss() takes one number: reduce the batch axis of ", format(loss),
                                " first (op_mean() or op_sum())."), kind = "shape")
      }
      if (length(loss$shape)) loss <- op_sum(loss)
      ctx$added_losses[[length(ctx$added_losses) + 1L]] <- loss
      invisible(NULL)
    },
    build = function(input_shape) invisible(NULL),
    call = function(inputs) {
      abort_value("Layer class {.cls {class(self)[1]}} has no {.fn call} method.", call = NULL)
    },
    # The base config: what Keras' Layer.get_config() writes.
    get_config = function() {
      cfg <- list(name = self$name, trainable = self$trainable)
      dt <- layer_dtype_config(self$dtype, "Layer", call = NULL)
      if (!is.null(dt)) cfg$dtype <- dt
      cfg
    },
    # The weights add_weight() declared, in order (for the tracer).
    weight_specs = function() private$.weights,
    print = function(...) {
      cat("<", class(self)[1], " name=", self$name, ">\n", sep = "")
      invisible(self)
    }
  ),
  private = list(.weights = NULL, .input_shape = NULL)
)

#' @export
print.mirrored_weight_handle <- function(x, ...) {
  cat("<Variable name=", x$name, ", shape=", format(shape(x$shape)), ", dtype=float32>\n", sep = "")
  invisible(x)
}

# ---- Layer() ----------------------------------------------------------------------

#' Define a custom layer class
#'
#' keras3's `Layer()`: a new layer class whose `call()` is written with
#' `op_*` functions. The class's `call()` is traced once, on the shapes of
#' the layer's first call, into a graph that mirrored's core runs and
#' differentiates on every replica and device: no R code runs while the
#' model trains. Weights come from `self$add_weight()` (in `initialize()`
#' or `build()`) and are placed, replicated, all-reduced and saved like a
#' built-in layer's.
#'
#' Methods see `self` (the instance) and `super` (the base class). The
#' base class's `initialize(name = NULL, trainable = TRUE, dtype = NULL)`
#' takes Keras' common arguments: a custom `initialize()` forwards `...`
#' to `super$initialize(...)`. `build(input_shape)` gets the input's
#' [shape()] (`NA` for the batch axis; a list of them for several inputs).
#' `call(inputs)` gets a tensor (or a list of them) and returns one
#' tensor. `get_config()` returns the arguments that re-create the layer.
#'
#' Because `call()` is traced, it must not read tensor values: `if (x >
#' 0)`, `as.numeric(x)` and functions that are not ops are errors of class
#' `mirrored_trace_error` naming the line. `call()` is traced once, so a
#' `training` argument is `NULL` and cannot change the graph: pass it on to
#' sub-layers (`self$dropout(x, training = training)`), whose dropout then
#' runs in training steps only, as in Keras.
#'
#' `call()` can call layers the instance holds (`self$proj <-
#' layer_dense(units = 32)` in `initialize()`, `self$proj(x)` in `call()`):
#' Dense, Dropout, Embedding, LayerNormalization (over the last axis), Activation,
#' Flatten, Reshape and other custom `Layer()`s are
#' written into the same graph, built at their first call, and their
#' weights become the custom layer's, after its own (Keras' order); a layer
#' called twice shares its weights. Other layers, and models, called there
#' are a `mirrored_not_yet_error`: apply them to the custom layer's output.
#'
#' `self$add_loss(value)` in `call()` adds a term computed from the call's
#' tensors (reduced to one number, such as `rate * op_mean(inputs)`) to the
#' model's loss in training and evaluation, as Keras does. Each replica
#' computes it on its own rows and counts it with the weight of its rows,
#' so a batch mean gives the same numbers on any number of replicas.
#'
#' @param classname The class name (CamelCase, as Keras writes it in
#'   `.keras` files).
#' @param initialize,call,build,get_config The class's methods (see
#'   Details).
#' @param ...,public Other methods and fields of the class.
#' @param private,active Private fields and active bindings (R6).
#' @param parent_env The environment the methods are defined in.
#' @return A layer constructor: `function(object, ...)`. With `object`
#'   missing it returns the layer; with a symbolic tensor it returns the
#'   layer applied to it; with a sequential model it adds the layer.
#'   `...` goes to `initialize()`.
#' @family layers
#' @examples
#' layer_simple_dense <- Layer("SimpleDense",
#'   initialize = function(units = 32, ...) {
#'     super$initialize(...)
#'     self$units <- units
#'   },
#'   build = function(input_shape) {
#'     self$kernel <- self$add_weight(shape = shape(tail(input_shape, 1), self$units),
#'                                    initializer = "glorot_uniform", name = "kernel")
#'     self$bias <- self$add_weight(shape = shape(self$units), initializer = "zeros",
#'                                  name = "bias")
#'   },
#'   call = function(inputs) op_matmul(inputs, self$kernel) + self$bias,
#'   get_config = function() c(super$get_config(), list(units = self$units))
#' )
#' inputs <- keras_input(shape = 4)
#' outputs <- inputs |> layer_simple_dense(units = 3)
#' model <- keras_model(inputs, outputs)
#' predict(model, matrix(1, 2, 4), verbose = 0)
#' @export
Layer <- function(classname, initialize = NULL, call = NULL, build = NULL, get_config = NULL, ...,
                  public = list(), private = list(), active = list(), parent_env = parent.frame()) {
  fn_call <- sys.call()
  classname <- check_string(classname, "classname", call = fn_call)
  parts <- class_members("layer", classname, list(initialize = initialize, call = call, build = build,
                                                  get_config = get_config),
                         list(...), public, active, call = fn_call)
  members <- parts$public
  active <- parts$active
  # R6 evaluates `inherit` in parent_env, which is the user's: hand it the
  # generator itself.
  gen <- do.call(R6::R6Class, list(classname, inherit = CustomLayerBase, public = members,
                                   private = if (length(private)) private, active = if (length(active)) active,
                                   parent_env = parent_env, lock_objects = FALSE, cloneable = FALSE))
  wrapper <- function(object, ...) {
    if (!missing(object)) force(object)
    user <- gen$new(...)
    node <- TracedLayerNode$new(classname, user = user)
    compose_layer(if (missing(object)) NULL else object, node)
  }
  structure(wrapper, class = c("mirrored_custom_layer_class", "function"), classname = classname,
            generator = gen)
}

#' @rdname Layer
#' @export
new_layer_class <- Layer

#' @export
print.mirrored_custom_layer_class <- function(x, ...) {
  cat("<custom layer class ", attr(x, "classname"), ">\n", sep = "")
  invisible(x)
}

# keras3 lets methods declare `self` as their first argument; R6 supplies it.
drop_self_formal <- function(f) {
  if (is.function(f) && length(formals(f)) && identical(names(formals(f))[1], "self")) {
    formals(f) <- formals(f)[-1]
  }
  f
}
