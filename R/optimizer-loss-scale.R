# Keras 3's LossScaleOptimizer: dynamic loss scaling around another
# optimizer, for "mixed_float16" models (compile(auto_scale_loss = TRUE)
# wraps the optimizer in one). The core scales the loss's gradient, skips a
# step whose all-reduced gradients are not finite (every replica the same
# step) and halves or doubles the scale (src/mr/train/loss_scale.h); this
# file is the R object: its arguments, its Keras config and its state.

LossScaleOptimizer <- R6::R6Class("mirrored_loss_scale_optimizer",
  inherit = Optimizer,
  public = list(
    inner_optimizer = NULL,
    # Whether compile() made it (auto_scale_loss): the compile config then
    # records the optimizer the user gave, as Keras' does.
    auto = FALSE,
    # config: the inner optimizer's (so that clipping, EMA and accumulation
    # read as the inner one's) plus loss_scale = list(initial_scale,
    # dynamic_growth_steps).
    initialize = function(inner_optimizer, name, initial_scale, dynamic_growth_steps, auto = FALSE) {
      self$class_name <- "LossScaleOptimizer"
      self$name <- name
      self$inner_optimizer <- inner_optimizer
      self$auto <- auto
      self$config <- c(inner_optimizer$config,
                       list(loss_scale = list(initial_scale = initial_scale,
                                              dynamic_growth_steps = dynamic_growth_steps)))
    },
    attach = function(model) {
      private$model <- model
      self$inner_optimizer$attach(model)
      invisible(self)
    },
    core_spec = function() c(self$inner_optimizer$core_spec(), list(loss_scale = self$config$loss_scale)),
    print = function(...) {
      cat("<LossScaleOptimizer of ", self$inner_optimizer$class_name, " dynamic_scale=",
          format(self$dynamic_scale), ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    # Keras forwards these to the inner optimizer.
    learning_rate = function(value) {
      if (missing(value)) return(self$inner_optimizer$learning_rate)
      self$inner_optimizer$learning_rate <- value
    },
    learning_rate_setting = function() self$inner_optimizer$learning_rate_setting,
    iterations = function() self$inner_optimizer$iterations,
    # Keras' variables dynamic_scale and step_counter: the scale the next
    # step multiplies the loss by, and the finite steps since it last changed.
    dynamic_scale = function() loss_scale_state(self)$scale,
    step_counter = function() loss_scale_state(self)$step_counter,
    initial_scale = function() self$config$loss_scale$initial_scale,
    dynamic_growth_steps = function() self$config$loss_scale$dynamic_growth_steps
  )
)

# The core's loss-scale state of the model `opt` is attached to, or the
# initial one before the model's first compile.
loss_scale_state <- function(opt) {
  m <- opt$.__enclos_env__$private$model
  if (is.null(m) || !m$is_built()) {
    return(list(scale = opt$config$loss_scale$initial_scale, step_counter = 0, skipped = 0,
                last_skipped = FALSE))
  }
  with_core(cpp_model_loss_scale_state(m$ptr()))
}

#' An optimizer that dynamically scales the loss
#'
#' Keras 3's `LossScaleOptimizer`: wraps `inner_optimizer` and multiplies the
#' loss by a scale before the gradients are computed, so that small float16
#' gradients do not underflow; the gradients are divided by the scale before
#' `inner_optimizer` applies them. When the gradients (summed over every
#' replica) are not all finite, the step is skipped on every replica, the scale
#' is halved and the count restarts; after `dynamic_growth_steps` finite steps
#' in a row the scale is doubled. `compile(auto_scale_loss = TRUE)` (the
#' default) wraps the optimizer in one when the model's dtype policy is
#' `"mixed_float16"`.
#'
#' `model$optimizer$dynamic_scale` and `model$optimizer$step_counter` read
#' the current state; both are saved with the optimizer by [save_model()].
#'
#' @param inner_optimizer The optimizer to wrap (an `optimizer_*()` object).
#' @param initial_scale The initial loss scale (a number > 0 and at most
#'   3.4e38, float32's range; default `2^15`). A high value is lowered
#'   quickly, a low one raised slowly.
#' @param dynamic_growth_steps After this many finite steps in a row the
#'   scale doubles (an integer >= 1).
#' @param ... Must be empty: an unknown argument is an error.
#' @param name Name of the optimizer (default `"loss_scale_optimizer"`).
#' @param weight_decay,clipnorm,clipvalue,global_clipnorm,use_ema,ema_momentum,ema_overwrite_frequency,loss_scale_factor,gradient_accumulation_steps
#'   Must stay at their defaults, as in Keras: set them on
#'   `inner_optimizer` instead.
#' @return An optimizer object for [compile.mirrored_model()].
#' @family optimizers
#' @seealso [config_set_dtype_policy()]
#' @examples
#' opt <- optimizer_loss_scale(optimizer_adam(), initial_scale = 1024)
#' opt$dynamic_scale
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' model |> compile(optimizer = opt, loss = "mse")
#' @export
optimizer_loss_scale <- function(inner_optimizer, initial_scale = 32768, dynamic_growth_steps = 2000L,
                                 ..., name = NULL, weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                                 global_clipnorm = NULL, use_ema = NULL, ema_momentum = NULL,
                                 ema_overwrite_frequency = NULL, loss_scale_factor = NULL,
                                 gradient_accumulation_steps = NULL) {
  check_dots_empty(list(...), "optimizer_loss_scale", names(formals(optimizer_loss_scale)))
  if (missing(inner_optimizer) || !inherits(inner_optimizer, "mirrored_optimizer")) {
    abort_value("{.fn optimizer_loss_scale}: {.arg inner_optimizer} must be an optimizer such as {.code optimizer_adam()}, not {if (missing(inner_optimizer)) 'missing' else describe(inner_optimizer)}.")
  }
  if (inherits(inner_optimizer, "mirrored_loss_scale_optimizer")) {
    abort_value("{.fn optimizer_loss_scale}: {.arg inner_optimizer} is already a loss scale optimizer; wrap its inner optimizer instead.")
  }
  # Keras refuses the base optimizer's arguments at other than their defaults.
  defaults <- list(weight_decay = NULL, clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL,
                   use_ema = FALSE, ema_momentum = 0.99, ema_overwrite_frequency = NULL,
                   loss_scale_factor = NULL, gradient_accumulation_steps = NULL)
  given <- list(weight_decay = weight_decay, clipnorm = clipnorm, clipvalue = clipvalue,
                global_clipnorm = global_clipnorm, use_ema = use_ema, ema_momentum = ema_momentum,
                ema_overwrite_frequency = ema_overwrite_frequency, loss_scale_factor = loss_scale_factor,
                gradient_accumulation_steps = gradient_accumulation_steps)
  for (nm in names(given)) {
    if (!is.null(given[[nm]]) && !identical(given[[nm]], defaults[[nm]])) {
      abort_value(c("{.fn optimizer_loss_scale} does not take {.arg {nm}} (got {describe(given[[nm]])}).",
                    i = "Set {.arg {nm}} on {.arg inner_optimizer} instead, as in Keras."))
    }
  }
  # At most float32's largest value: the scale is a float32 variable.
  initial_scale <- check_num(initial_scale, "initial_scale", min = 0, min_open = TRUE, max = 3.4e38)
  dynamic_growth_steps <- check_int(dynamic_growth_steps, "dynamic_growth_steps", min = 1)
  name <- check_string(name, "name", null_ok = TRUE) %||% "loss_scale_optimizer"
  LossScaleOptimizer$new(inner_optimizer, name, as.numeric(initial_scale),
                         as.integer(dynamic_growth_steps))
}

# compile(auto_scale_loss = TRUE): Keras wraps the optimizer when the
# model's policy is "mixed_float16" and it is not a loss scale optimizer.
auto_loss_scale <- function(model, opt, auto_scale_loss) {
  if (!auto_scale_loss || !identical(model$dtype_policy, "mixed_float16") ||
      inherits(opt, "mirrored_loss_scale_optimizer")) {
    return(opt)
  }
  LossScaleOptimizer$new(opt, "loss_scale_optimizer", 32768, 2000L, auto = TRUE)
}

# Keras' get_config() of a loss scale optimizer.
loss_scale_keras_config <- function(opt) {
  list(module = "keras.optimizers", class_name = "LossScaleOptimizer",
       config = list(name = opt$name, inner_optimizer = optimizer_keras_config(opt$inner_optimizer),
                     initial_scale = as.numeric(opt$initial_scale),
                     dynamic_growth_steps = as.integer(opt$dynamic_growth_steps)),
       registered_name = NULL)
}

# A saved LossScaleOptimizer config back into one.
loss_scale_from_keras <- function(cfg, what) {
  inner <- cfg_get(cfg, "inner_optimizer")
  if (is.null(inner)) abort_config(what, "the LossScaleOptimizer has no {.field inner_optimizer}.")
  if (identical(cfg_get(inner, "class_name"), "LossScaleOptimizer")) {
    abort_config(what, "a LossScaleOptimizer inside a LossScaleOptimizer is not supported.")
  }
  if (!is.null(cfg_get(cfg, "dynamic")) && !isTRUE(cfg_get(cfg, "dynamic")))
    abort_config(what, "LossScaleOptimizer(dynamic = FALSE) is not supported (as in Keras 3).")
  tryCatch(optimizer_loss_scale(optimizer_from_keras(inner, what),
                                initial_scale = cfg_get(cfg, "initial_scale", 32768),
                                dynamic_growth_steps = cfg_get(cfg, "dynamic_growth_steps", 2000L),
                                name = cfg_get(cfg, "name")),
           mirrored_value_error = function(e) abort_config(what, conditionMessage(e)))
}
