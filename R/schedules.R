# Learning rate schedules (keras3's learning_rate_schedule_*()). A schedule
# is a function of the optimizer's iteration count; the core evaluates it at
# every update (src/mr/nn/lr_schedule.cpp) and R calls the same code to show
# values. The object keeps its Keras 3 class name and config for saving.

new_lr_schedule <- function(class_name, kind, config) {
  # The core's spec: plain vectors (the Keras config keeps JSON lists).
  spec <- c(list(kind = kind), lapply(config[setdiff(names(config), "name")],
                                      function(v) if (is.list(v)) as.numeric(unlist(v)) else v))
  f <- function(step) {
    step <- check_steps(step)
    with_core(cpp_lr_schedule_values(spec, step))
  }
  structure(f, class = c(class_name, "mirrored_lr_schedule", "function"),
            keras_class = class_name, keras_config = config, spec = spec)
}

check_steps <- function(step, call = sys.call(-1)) {
  if (!(is.numeric(step) && length(step) >= 1 && all(is.finite(step)) && all(step >= 0))) {
    abort_value("{.arg step} must be numbers >= 0 (optimizer iterations), not {describe(step)}.",
                call = call)
  }
  as.numeric(step)
}

lr_schedule_spec <- function(x) attr(x, "spec")

#' @export
print.mirrored_lr_schedule <- function(x, ...) {
  cfg <- attr(x, "keras_config")
  shown <- vapply(cfg, function(v) if (is.null(v)) "NULL" else paste(format(v), collapse = ", "), "")
  cat("<", attr(x, "keras_class"), "> ", paste0(names(cfg), "=", shown, collapse = " "), "\n", sep = "")
  invisible(x)
}

#' Learning rate schedules
#'
#' Functions of the optimizer's iteration count `step` (the number of
#' updates done before the current one), with Keras 3's formulas, to pass as
#' an optimizer's `learning_rate`. Each returned schedule is also an R
#' function: `schedule(step)` gives its values.
#' - `exponential_decay`: `initial_learning_rate * decay_rate^(step / decay_steps)`
#'   (`staircase`: the exponent is floored).
#' - `inverse_time_decay`: `initial_learning_rate / (1 + decay_rate * step / decay_steps)`.
#' - `piecewise_constant_decay`: `values[i]` for `boundaries[i-1] < step <= boundaries[i]`.
#' - `polynomial_decay`: from `initial_learning_rate` to `end_learning_rate`
#'   over `decay_steps` steps with `power` (`cycle`: restart every multiple).
#' - `cosine_decay`: an optional linear warmup from `initial_learning_rate`
#'   to `warmup_target` over `warmup_steps`, then a cosine decay over
#'   `decay_steps` down to `alpha` times its start.
#' - `cosine_decay_restarts`: cosine decay with warm restarts (SGDR), the
#'   periods growing by `t_mul` and the peaks by `m_mul`.
#'
#' @param initial_learning_rate The initial learning rate.
#' @param decay_steps Number of steps to decay over (> 0).
#' @param decay_rate The decay rate.
#' @param staircase Whether to decay at discrete intervals.
#' @param boundaries,values Increasing step boundaries and the
#'   `length(boundaries) + 1` learning rates of the intervals.
#' @param end_learning_rate,power,cycle Polynomial decay's final rate, power
#'   and restart switch.
#' @param alpha Minimum learning rate as a fraction of the initial one.
#' @param warmup_target,warmup_steps Cosine decay's warmup (`NULL`: none).
#' @param first_decay_steps,t_mul,m_mul Cosine restarts' first period, period
#'   factor and peak factor.
#' @param name Name of the schedule.
#' @return A learning rate schedule (a function of `step`).
#' @family learning rate schedules
#' @seealso [optimizer_sgd()], [callback_learning_rate_scheduler()]
#' @examples
#' s <- learning_rate_schedule_exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5)
#' s(c(0, 10, 20))
#' optimizer_sgd(learning_rate = s)
#' learning_rate_schedule_cosine_decay(0, decay_steps = 100, warmup_target = 0.1,
#'                                     warmup_steps = 10)(c(0, 5, 10, 60))
#' @export
learning_rate_schedule_exponential_decay <- function(initial_learning_rate, decay_steps, decay_rate,
                                                     staircase = FALSE, name = "ExponentialDecay") {
  new_lr_schedule("ExponentialDecay", "exponential_decay", list(
    initial_learning_rate = check_num(initial_learning_rate, "initial_learning_rate", min = 0),
    decay_steps = check_num(decay_steps, "decay_steps", min = 0, min_open = TRUE),
    decay_rate = check_num(decay_rate, "decay_rate"),
    staircase = check_bool(staircase, "staircase"), name = check_string(name, "name")))
}

#' @rdname learning_rate_schedule_exponential_decay
#' @export
learning_rate_schedule_inverse_time_decay <- function(initial_learning_rate, decay_steps, decay_rate,
                                                      staircase = FALSE, name = "InverseTimeDecay") {
  new_lr_schedule("InverseTimeDecay", "inverse_time_decay", list(
    initial_learning_rate = check_num(initial_learning_rate, "initial_learning_rate", min = 0),
    decay_steps = check_num(decay_steps, "decay_steps", min = 0, min_open = TRUE),
    decay_rate = check_num(decay_rate, "decay_rate"),
    staircase = check_bool(staircase, "staircase"), name = check_string(name, "name")))
}

#' @rdname learning_rate_schedule_exponential_decay
#' @export
learning_rate_schedule_piecewise_constant_decay <- function(boundaries, values, name = "PiecewiseConstant") {
  ok_b <- is.numeric(boundaries) && length(boundaries) >= 1 && all(is.finite(boundaries))
  if (!ok_b) abort_value("{.arg boundaries} must be finite numbers, not {describe(boundaries)}.")
  ok_v <- is.numeric(values) && all(is.finite(values))
  if (!ok_v) abort_value("{.arg values} must be finite numbers, not {describe(values)}.")
  if (length(values) != length(boundaries) + 1) {
    abort_value("The length of {.arg boundaries} should be 1 less than the length of {.arg values}; got {length(boundaries)} boundaries and {length(values)} values.")
  }
  new_lr_schedule("PiecewiseConstantDecay", "piecewise_constant_decay", list(
    boundaries = as.list(as.numeric(boundaries)), values = as.list(as.numeric(values)),
    name = check_string(name, "name")))
}

#' @rdname learning_rate_schedule_exponential_decay
#' @export
learning_rate_schedule_polynomial_decay <- function(initial_learning_rate, decay_steps,
                                                    end_learning_rate = 1e-04, power = 1, cycle = FALSE,
                                                    name = "PolynomialDecay") {
  new_lr_schedule("PolynomialDecay", "polynomial_decay", list(
    initial_learning_rate = check_num(initial_learning_rate, "initial_learning_rate", min = 0),
    decay_steps = check_num(decay_steps, "decay_steps", min = 0, min_open = TRUE),
    end_learning_rate = check_num(end_learning_rate, "end_learning_rate", min = 0),
    power = check_num(power, "power"), cycle = check_bool(cycle, "cycle"),
    name = check_string(name, "name")))
}

#' @rdname learning_rate_schedule_exponential_decay
#' @export
learning_rate_schedule_cosine_decay <- function(initial_learning_rate, decay_steps, alpha = 0,
                                                name = "CosineDecay", warmup_target = NULL,
                                                warmup_steps = 0) {
  new_lr_schedule("CosineDecay", "cosine_decay", list(
    initial_learning_rate = check_num(initial_learning_rate, "initial_learning_rate", min = 0),
    decay_steps = check_num(decay_steps, "decay_steps", min = 0, min_open = TRUE),
    alpha = check_num(alpha, "alpha"), name = check_string(name, "name"),
    warmup_target = check_num(warmup_target, "warmup_target", min = 0, null_ok = TRUE),
    warmup_steps = check_num(warmup_steps, "warmup_steps", min = 0)))
}

#' @rdname learning_rate_schedule_exponential_decay
#' @export
learning_rate_schedule_cosine_decay_restarts <- function(initial_learning_rate, first_decay_steps,
                                                         t_mul = 2, m_mul = 1, alpha = 0,
                                                         name = "SGDRDecay") {
  cfg <- list(
    initial_learning_rate = check_num(initial_learning_rate, "initial_learning_rate", min = 0),
    first_decay_steps = check_num(first_decay_steps, "first_decay_steps", min = 0, min_open = TRUE),
    t_mul = check_num(t_mul, "t_mul", min = 0, min_open = TRUE),
    m_mul = check_num(m_mul, "m_mul", min = 0), alpha = check_num(alpha, "alpha"),
    name = check_string(name, "name"))
  s <- new_lr_schedule("CosineDecayRestarts", "cosine_decay_restarts", cfg)
  # The core names the first period decay_steps.
  spec <- attr(s, "spec")
  spec$decay_steps <- spec$first_decay_steps
  attr(s, "spec") <- spec
  environment(s)$spec <- spec
  s
}

# A schedule from its Keras 3 serialization ({class_name, config}).
lr_schedule_from_keras <- function(x, what) {
  cls <- cfg_get(x, "class_name", "")
  cfg <- cfg_get(x, "config", list())
  fun <- switch(cls,
    ExponentialDecay = learning_rate_schedule_exponential_decay,
    InverseTimeDecay = learning_rate_schedule_inverse_time_decay,
    PiecewiseConstantDecay = learning_rate_schedule_piecewise_constant_decay,
    PolynomialDecay = learning_rate_schedule_polynomial_decay,
    CosineDecay = learning_rate_schedule_cosine_decay,
    CosineDecayRestarts = learning_rate_schedule_cosine_decay_restarts,
    abort_config(what, "learning rate schedule {.val {cls}} is not supported by mirrored."))
  args <- cfg[intersect(names(cfg), names(formals(fun)))]
  if (!is.null(args$boundaries)) args$boundaries <- unlist(args$boundaries)
  if (!is.null(args$values)) args$values <- unlist(args$values)
  do.call(fun, args)
}

# Keras 3's serialization of a schedule inside an optimizer's config.
lr_schedule_keras_config <- function(x) {
  list(module = "keras.optimizers.schedules", class_name = attr(x, "keras_class"),
       config = attr(x, "keras_config"), registered_name = NULL)
}
