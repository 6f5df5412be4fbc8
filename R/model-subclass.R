# keras3's Model() / new_model_class(): subclassed models. A class with
# initialize() and call() is a Sequential model holding one traced layer of
# the class (R/layers-traced.R, R/layers-traced-sublayers.R), built at the
# model's first use. train_step(), test_step() and predict_step() would be
# R code run in every step, which mirrored's core (C++ decides, R displays)
# never does: they are a not-supported error.

#' Subclassed models
#'
#' keras3's `Model()` and its alias `new_model_class()`: a model class whose
#' `call()` is written in R, calling the layers its `initialize()` makes
#' (`self$dense <- layer_dense(units = 64)`) and `op_*` functions. An
#' instance is a model like any other (compile, fit, evaluate, predict,
#' save): mirrored traces its `call()` once, at the model's first use (a
#' call on an array, fit, predict), on the inputs' shape, into a graph its
#' core runs and differentiates, as for a [Layer()] class -- the same rules
#' hold (Dense, Dropout, Embedding, LayerNormalization, Activation, Flatten, Reshape
#' and custom layers can be called in `call()`; other layers are a `mirrored_not_yet_error`). The model
#' holds that traced layer: `summary()` shows it as one layer of the class,
#' and a saved file records it as a custom layer in a Sequential model.
#'
#' A class that defines `train_step()`, `test_step()`, `predict_step()` or
#' `compute_loss()` is an error of class `mirrored_not_supported_error`:
#' mirrored runs every training step in its C++ core, with no R in the
#' step. Write the loss as an R function (`compile(loss = function(y_true,
#' y_pred) ...)`, [Loss()]) and metrics with [custom_metric()] instead.
#'
#' @inheritParams Layer
#' @param initialize,call The class's methods: `initialize(...)` forwards
#'   `...` to `super$initialize(...)` (`name`, `trainable`, `dtype`);
#'   `call(inputs)` returns the outputs.
#' @return A model constructor: its arguments go to `initialize()`.
#' @family model functions
#' @examples
#' MLP <- Model("MLP",
#'   initialize = function(...) {
#'     super$initialize(...)
#'     self$hidden <- layer_dense(units = 16, activation = "relu")
#'     self$out <- layer_dense(units = 2)
#'   },
#'   call = function(inputs) inputs |> self$hidden() |> self$out()
#' )
#' mlp <- MLP()
#' mlp |> compile(optimizer = "adam", loss = "mse")
#' mlp |> fit(matrix(runif(40), 10, 4), matrix(runif(20), 10, 2), epochs = 1, verbose = 0)
#' count_params(mlp)
#' @export
Model <- function(classname, initialize = NULL, call = NULL, ..., public = list(), private = list(),
                  active = list(), parent_env = parent.frame()) {
  fn_call <- sys.call()
  classname <- check_string(classname, "classname", call = fn_call)
  methods <- c(names(list(...)), names(public))
  steps <- intersect(methods, c("train_step", "test_step", "predict_step", "compute_loss"))
  if (length(steps)) {
    abort_kind("not_supported", c("Model class {.cls {classname}} defines {.fn {steps}}: mirrored runs every step in its C++ core and cannot call R there.",
                          i = "Write the loss as a function of (y_true, y_pred) with op_* for {.code compile(loss = )}, metrics with {.fn custom_metric}, and layers with {.fn Layer}; the core runs them in the step."),
                        call = fn_call)
  }
  if (!is.function(call)) {
    abort_value("Model class {.cls {classname}} needs a {.fn call} method (a function of the inputs), not {describe(call)}.",
                call = fn_call)
  }
  layer_class <- Layer(classname, initialize = initialize, call = call, ..., public = public,
                       private = private, active = active, parent_env = parent_env)
  gen <- attr(layer_class, "generator")
  structure(function(...) {
    user <- gen$new(...)
    node <- TracedLayerNode$new(classname, user = user)
    model <- keras_model_sequential(name = user$name)
    model$add(node)
    model
  }, class = c("mirrored_custom_model_class", "function"), classname = classname, generator = gen)
}

#' @export
print.mirrored_custom_model_class <- function(x, ...) {
  cat("<custom model class ", attr(x, "classname"), ">\n", sep = "")
  invisible(x)
}

#' @rdname Model
#' @export
new_model_class <- Model
