# Optimizers: Keras 3's defaults and update rules (applied by the C++ core
# in one fused pass over each replica's flat parameter buffer).

Optimizer <- R6::R6Class("mirrored_optimizer",
  public = list(
    class_name = NULL,
    name = NULL,
    config = NULL,
    # config$common: clipping, EMA and accumulation (optimizer_common()).
    # A schedule is kept aside (private$lr) and its Keras serialization in
    # config$schedule, so that config stays plain data (mirrored.json).
    initialize = function(class_name, name, config) {
      lr <- config$learning_rate
      if (!is.null(config$schedule) && !inherits(lr, "mirrored_lr_schedule")) {
        lr <- lr_schedule_from_keras(config$schedule, "the optimizer's saved schedule")
      }
      if (inherits(lr, "mirrored_lr_schedule")) {
        config$schedule <- lr_schedule_keras_config(lr)
        config$learning_rate <- NULL
      }
      self$class_name <- class_name
      self$name <- name
      self$config <- config
      private$lr <- lr
    },
    # Called by compile(): updates to learning_rate reach this model's core.
    attach = function(model) {
      private$model <- model
      invisible(self)
    },
    core_spec = function() {
      c <- self$config
      sched <- if (inherits(private$lr, "mirrored_lr_schedule")) private$lr
      spec <- list(kind = c$kind,
           learning_rate = if (is.null(sched)) private$lr else lr_schedule_spec(sched)$initial_learning_rate %||% 0,
           beta_1 = c$beta_1 %||% 0.9,
           beta_2 = c$beta_2 %||% 0.999, epsilon = c$epsilon %||% 1e-7,
           amsgrad = c$amsgrad %||% FALSE, weight_decay = c$weight_decay %||% 0,
           momentum = c$momentum %||% 0, nesterov = c$nesterov %||% FALSE, rho = c$rho %||% 0.9,
           centered = c$centered %||% FALSE,
           schedule = if (!is.null(sched)) lr_schedule_spec(sched))
      c(spec, optimizer_extra_spec(c))
    },
    print = function(...) {
      lr <- if (inherits(private$lr, "mirrored_lr_schedule")) class(private$lr)[[1]] else format(private$lr)
      cat("<", self$class_name, " learning_rate=", lr, ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    # Reading gives the learning rate the next update uses (a schedule's
    # value at the current iteration, computed by the core); a schedule
    # cannot be replaced by a number (Keras refuses it too).
    learning_rate = function(value) {
      if (missing(value)) {
        if (!inherits(private$lr, "mirrored_lr_schedule")) return(private$lr)
        if (!is.null(private$model) && private$model$is_built())
          return(with_core(cpp_model_current_learning_rate(private$model$ptr())))
        return(private$lr(0))
      }
      if (inherits(private$lr, "mirrored_lr_schedule"))
        abort_value("This optimizer was created with a learning rate schedule ({.cls {class(private$lr)[[1]]}}); its {.arg learning_rate} cannot be set.")
      value <- check_num(value, "learning_rate", min = 0)
      private$lr <- value
      if (!is.null(private$model) && private$model$is_built()) {
        with_core(cpp_model_set_learning_rate(private$model$ptr(), value))
      }
    },
    # The learning rate as given: a number or a schedule.
    learning_rate_setting = function() private$lr,
    # Keras' optimizer.iterations: applied updates (under gradient
    # accumulation the count of steps divided by the accumulation steps).
    iterations = function() {
      if (is.null(private$model) || !private$model$is_built()) return(0)
      it <- with_core(cpp_model_iterations(private$model$ptr()))
      n <- self$config$common$gradient_accumulation_steps
      if (is.null(n)) it else it %/% n
    }
  ),
  private = list(lr = NULL, model = NULL)
)

check_unsupported <- function(...) {
  args <- list(...)
  for (nm in names(args)) {
    v <- args[[nm]]
    if (!is.null(v) && !identical(v, FALSE)) {
      abort_value("{.arg {nm}} is not supported yet; leave it at its default.", call = sys.call(-1))
    }
  }
}

#' Optimizers
#'
#' Gradient descent (with momentum), Adam, AdamW and RMSprop with Keras 3's
#' defaults and update rules. Adam folds both bias corrections into the step
#' size, `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`, with `epsilon` added to
#' `sqrt(v)`, as Keras does; AdamW first decays each weight by
#' `weight_decay * learning_rate`.
#'
#' @param learning_rate Step size: a number >= 0 (it can be changed later
#'   with `model$optimizer$learning_rate <- value`) or a learning rate
#'   schedule such as [learning_rate_schedule_exponential_decay()], evaluated
#'   at every update from the optimizer's iteration count.
#' @param momentum,nesterov SGD momentum and Nesterov momentum; RMSprop momentum.
#' @param beta_1,beta_2,epsilon,amsgrad Adam's exponential decay rates,
#'   stability constant and AMSGrad variant.
#' @param weight_decay Decoupled weight decay (`NULL`: none; AdamW: 0.004).
#' @param rho,centered RMSprop's discounting factor and centred variant.
#' @param clipnorm Clip each variable's gradient to this L2 norm (`NULL`: off).
#' @param clipvalue Clip each gradient element to `[-clipvalue, clipvalue]`.
#' @param global_clipnorm Clip all gradients together so that their global
#'   L2 norm (of the gradient summed over replicas) is at most this value.
#'   At most one of the three clipping arguments may be set.
#' @param use_ema,ema_momentum Keep an exponential moving average of the
#'   weights (`average = m * average + (1 - m) * weight` after every step,
#'   `m = 0` on the first); at the end of `fit()` the weights take their
#'   averages, as Keras' `finalize_variable_values()` does.
#' @param ema_overwrite_frequency With `use_ema`, also overwrite the weights
#'   with their averages every this many steps (`NULL`: only at the end).
#' @param gradient_accumulation_steps `NULL`, or an integer >= 2: gradients
#'   are accumulated over this many steps and their mean applied on every
#'   such step (the all-reduce across replicas runs only then). The
#'   iteration count (and a schedule) advance on every step, as in Keras.
#' @param loss_scale_factor Not supported yet (must stay `NULL`).
#' @param name Name of the optimizer.
#' @param ... Must be empty: an unknown argument is an error, as in Keras.
#' @return An optimizer object for [compile.mirrored_model()].
#' @family optimizers
#' @seealso [compile.mirrored_model()]
#' @examples
#' optimizer_adam(learning_rate = 1e-3)
#' optimizer_sgd(learning_rate = 0.1, momentum = 0.9, nesterov = TRUE)
#' optimizer_adam(global_clipnorm = 1, use_ema = TRUE)
#' @export
optimizer_sgd <- function(learning_rate = 0.01, momentum = 0, nesterov = FALSE, weight_decay = NULL,
                          clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL, use_ema = FALSE,
                          ema_momentum = 0.99, ema_overwrite_frequency = NULL, name = "SGD", ...,
                          loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  Optimizer$new("SGD", check_string(name, "name"), list(
    kind = "sgd", learning_rate = check_learning_rate(learning_rate), common = common,
    momentum = check_num(momentum, "momentum", min = 0, max = 1), nesterov = check_bool(nesterov, "nesterov"),
    weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0))
}

#' @rdname optimizer_sgd
#' @export
optimizer_adam <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07,
                           amsgrad = FALSE, weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                           global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                           ema_overwrite_frequency = NULL, name = "adam", ..., loss_scale_factor = NULL,
                           gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  Optimizer$new("Adam", check_string(name, "name"), adam_config("adam", learning_rate, beta_1, beta_2,
                                                               epsilon, amsgrad, weight_decay %||% 0, common))
}

#' @rdname optimizer_sgd
#' @export
optimizer_adam_w <- function(learning_rate = 0.001, weight_decay = 0.004, beta_1 = 0.9, beta_2 = 0.999,
                             epsilon = 1e-07, amsgrad = FALSE, clipnorm = NULL, clipvalue = NULL,
                             global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                             ema_overwrite_frequency = NULL, name = "adamw", ..., loss_scale_factor = NULL,
                             gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  Optimizer$new("AdamW", check_string(name, "name"), adam_config("adamw", learning_rate, beta_1, beta_2,
                                                                epsilon, amsgrad, weight_decay, common))
}

#' @rdname optimizer_sgd
#' @export
optimizer_rmsprop <- function(learning_rate = 0.001, rho = 0.9, momentum = 0, epsilon = 1e-07,
                              centered = FALSE, weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                              global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                              ema_overwrite_frequency = NULL, name = "rmsprop", ..., loss_scale_factor = NULL,
                              gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  Optimizer$new("RMSprop", check_string(name, "name"), list(
    kind = "rmsprop", learning_rate = check_learning_rate(learning_rate), common = common,
    rho = check_num(rho, "rho", min = 0, max = 1), momentum = check_num(momentum, "momentum", min = 0, max = 1),
    epsilon = check_num(epsilon, "epsilon", min = 0), centered = check_bool(centered, "centered"),
    weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0))
}

adam_config <- function(kind, learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay,
                        common, call = sys.call(-1)) {
  list(kind = kind, learning_rate = check_learning_rate(learning_rate, call = call), common = common,
       beta_1 = check_num(beta_1, "beta_1", min = 0, max = 1, max_open = TRUE, call = call),
       beta_2 = check_num(beta_2, "beta_2", min = 0, max = 1, max_open = TRUE, call = call),
       epsilon = check_num(epsilon, "epsilon", min = 0, call = call),
       amsgrad = check_bool(amsgrad, "amsgrad", call = call),
       weight_decay = check_num(weight_decay, "weight_decay", min = 0, call = call))
}

as_optimizer <- function(x, call = sys.call(-1)) {
  if (inherits(x, "mirrored_optimizer")) return(x)
  known <- list(sgd = optimizer_sgd, adam = optimizer_adam, adamw = optimizer_adam_w,
                adam_w = optimizer_adam_w, rmsprop = optimizer_rmsprop,
                adagrad = optimizer_adagrad, adadelta = optimizer_adadelta,
                adamax = optimizer_adamax, nadam = optimizer_nadam, ftrl = optimizer_ftrl,
                lion = optimizer_lion, lamb = optimizer_lamb)
  if (is.character(x) && length(x) == 1 && tolower(x) %in% names(known)) return(known[[tolower(x)]]())
  abort_value("{.arg optimizer} must be one of {.val {setdiff(names(known), 'adam_w')}} or an optimizer object, not {describe(x)}.",
              call = call)
}
