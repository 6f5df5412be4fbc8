# keras3's Model() / new_model_class(): subclassed models. Their
# train_step(), test_step() and predict_step() are R code run in every step,
# which mirrored's core (C++ decides, R displays) never does; a subclass's
# call() is better written as a Layer() inside a functional model, which
# the core runs and differentiates like any layer.

#' Subclassed models (not supported)
#'
#' keras3's `Model()` and its alias `new_model_class()` define a model class
#' in R, often with its own `train_step()`. mirrored runs every training
#' step in its C++ core, with no R in the step, so it cannot run an R
#' `train_step()`; both functions raise an error of class
#' `mirrored_not_supported_error` that says what to use instead: a loss
#' written as an R function (`compile(loss = function(y_true, y_pred) ...)`,
#' [Loss()]), a custom metric ([custom_metric()]) and custom layers
#' ([Layer()], [layer_lambda()]) in a [keras_model()]. A class with only
#' `initialize()` and `call()` (a model written as a layer) is a
#' `mirrored_not_yet_error`: it comes with custom layers that call
#' sub-layers.
#'
#' @param classname The class name.
#' @param ... The class's methods (`initialize`, `call`, `train_step`, ...).
#' @return Never returns.
#' @family model functions
#' @examples
#' try(Model("MyModel", train_step = function(data) NULL))
#' @export
Model <- function(classname, ...) {
  call <- sys.call()
  methods <- names(list(...))
  steps <- intersect(methods, c("train_step", "test_step", "predict_step", "compute_loss"))
  if (length(steps)) {
    abort_kind("not_supported", c("Model class {.cls {classname}} defines {.fn {steps}}: mirrored runs every step in its C++ core and cannot call R there.",
                          i = "Write the loss as a function of (y_true, y_pred) with op_* for {.code compile(loss = )}, metrics with {.fn custom_metric}, and layers with {.fn Layer}; the core runs them in the step."),
                        call = call)
  }
  abort_not_yet(c("Subclassed models ({.fn Model} with {.fn initialize} and {.fn call}) are not supported yet.",
                  i = "Build the model with {.fn keras_model} from layers; a custom computation is a {.fn Layer} class or {.fn layer_lambda}."),
                call = call)
}

#' @rdname Model
#' @export
new_model_class <- Model
