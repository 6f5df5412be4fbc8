# Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion and Lamb with Keras 3's
# defaults and update rules (src/mr/backends/common/optimizer_math.h).

new_optimizer <- function(class_name, name, kind, learning_rate, common, ..., call = sys.call(-1)) {
  Optimizer$new(class_name, check_string(name, "name", call = call),
                c(list(kind = kind, learning_rate = check_learning_rate(learning_rate, call = call),
                       common = common), list(...)))
}

#' More optimizers: Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion, Lamb
#'
#' Keras 3's defaults and update rules (per step `t`, gradient `g`, weight
#' `w`, learning rate `lr`):
#' - Adagrad: `acc += g^2; w -= lr * g / sqrt(acc + epsilon)`, `acc`
#'   starting at `initial_accumulator_value`.
#' - Adadelta: running means of `g^2` and of the squared updates with rate
#'   `rho`; `w += lr * delta`.
#' - Adamax: Adam with the infinity norm, `u = max(beta_2 * u, |g|)`.
#' - Nadam: Adam with Nesterov momentum and Keras' momentum schedule
#'   (`u_t = beta_1 * (1 - 0.5 * 0.96^t)`).
#' - Ftrl: follow-the-regularized-leader with L1, L2 and L2-shrinkage terms.
#' - Lion: `w -= lr * sign(beta_1 * m + (1 - beta_1) * g)`, then
#'   `m = beta_2 * m + (1 - beta_2) * g`.
#' - Lamb: Adam's bias-corrected update scaled per variable by the trust
#'   ratio `||w|| / ||update||`.
#'
#' The shared arguments (clipping, EMA, gradient accumulation, weight
#' decay) behave as in [optimizer_sgd()].
#'
#' @inheritParams optimizer_sgd
#' @param initial_accumulator_value Starting value of the accumulators
#'   (Adagrad, Ftrl).
#' @param epsilon Small constant for numerical stability.
#' @param rho Adadelta's decay rate.
#' @param beta_1,beta_2 Decay rates of the first moment and of the second
#'   moment (Adamax: infinity norm; Lion: of the momentum).
#' @param learning_rate_power Ftrl's power of the learning rate (<= 0).
#' @param l1_regularization_strength,l2_regularization_strength,l2_shrinkage_regularization_strength
#'   Ftrl's regularization strengths (>= 0).
#' @param beta Ftrl's beta (>= 0).
#' @return An optimizer object for [compile.mirrored_model()].
#' @family optimizers
#' @seealso [optimizer_sgd()], [learning_rate_schedule_exponential_decay()]
#' @examples
#' optimizer_adagrad(learning_rate = 0.01)
#' optimizer_lion(learning_rate = 1e-4, weight_decay = 0.01)
#' optimizer_nadam(clipnorm = 1)
#' @export
optimizer_adagrad <- function(learning_rate = 0.001, initial_accumulator_value = 0.1, epsilon = 1e-07,
                              weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                              global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                              ema_overwrite_frequency = NULL, name = "adagrad", ...,
                              loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Adagrad", name, "adagrad", learning_rate, common,
                initial_accumulator_value = check_num(initial_accumulator_value, "initial_accumulator_value", min = 0),
                epsilon = check_num(epsilon, "epsilon", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_adadelta <- function(learning_rate = 0.001, rho = 0.95, epsilon = 1e-07, weight_decay = NULL,
                               clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL,
                               use_ema = FALSE, ema_momentum = 0.99, ema_overwrite_frequency = NULL,
                               name = "adadelta", ..., loss_scale_factor = NULL,
                               gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Adadelta", name, "adadelta", learning_rate, common,
                rho = check_num(rho, "rho", min = 0, max = 1),
                epsilon = check_num(epsilon, "epsilon", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_adamax <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07,
                             weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                             global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                             ema_overwrite_frequency = NULL, name = "adamax", ...,
                             loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Adamax", name, "adamax", learning_rate, common,
                beta_1 = check_num(beta_1, "beta_1", min = 0, max = 1, max_open = TRUE),
                beta_2 = check_num(beta_2, "beta_2", min = 0, max = 1, max_open = TRUE),
                epsilon = check_num(epsilon, "epsilon", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_nadam <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07,
                            weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                            global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                            ema_overwrite_frequency = NULL, name = "nadam", ...,
                            loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Nadam", name, "nadam", learning_rate, common,
                beta_1 = check_num(beta_1, "beta_1", min = 0, max = 1, max_open = TRUE),
                beta_2 = check_num(beta_2, "beta_2", min = 0, max = 1, max_open = TRUE),
                epsilon = check_num(epsilon, "epsilon", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_ftrl <- function(learning_rate = 0.001, learning_rate_power = -0.5,
                           initial_accumulator_value = 0.1, l1_regularization_strength = 0,
                           l2_regularization_strength = 0, l2_shrinkage_regularization_strength = 0,
                           beta = 0, weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                           global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                           ema_overwrite_frequency = NULL, name = "ftrl", ...,
                           loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Ftrl", name, "ftrl", learning_rate, common,
                learning_rate_power = check_num(learning_rate_power, "learning_rate_power", max = 0),
                initial_accumulator_value = check_num(initial_accumulator_value, "initial_accumulator_value", min = 0),
                l1_regularization_strength = check_num(l1_regularization_strength, "l1_regularization_strength", min = 0),
                l2_regularization_strength = check_num(l2_regularization_strength, "l2_regularization_strength", min = 0),
                l2_shrinkage_regularization_strength = check_num(l2_shrinkage_regularization_strength,
                                                                 "l2_shrinkage_regularization_strength", min = 0),
                beta = check_num(beta, "beta", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_lion <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.99, weight_decay = NULL,
                           clipnorm = NULL, clipvalue = NULL, global_clipnorm = NULL,
                           use_ema = FALSE, ema_momentum = 0.99, ema_overwrite_frequency = NULL,
                           name = "lion", ..., loss_scale_factor = NULL,
                           gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  # Keras requires 0 < beta_1 <= 1 (and beta_2 in [0, 1]).
  new_optimizer("Lion", name, "lion", learning_rate, common,
                beta_1 = check_num(beta_1, "beta_1", min = 0, max = 1, min_open = TRUE),
                beta_2 = check_num(beta_2, "beta_2", min = 0, max = 1),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

#' @rdname optimizer_adagrad
#' @export
optimizer_lamb <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07,
                           weight_decay = NULL, clipnorm = NULL, clipvalue = NULL,
                           global_clipnorm = NULL, use_ema = FALSE, ema_momentum = 0.99,
                           ema_overwrite_frequency = NULL, name = "lamb", ...,
                           loss_scale_factor = NULL, gradient_accumulation_steps = NULL) {
  check_dots_empty_opt(...)
  common <- optimizer_common(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor, gradient_accumulation_steps)
  new_optimizer("Lamb", name, "lamb", learning_rate, common,
                beta_1 = check_num(beta_1, "beta_1", min = 0, max = 1, max_open = TRUE),
                beta_2 = check_num(beta_2, "beta_2", min = 0, max = 1, max_open = TRUE),
                epsilon = check_num(epsilon, "epsilon", min = 0),
                weight_decay = check_num(weight_decay, "weight_decay", min = 0, null_ok = TRUE) %||% 0)
}

# Keras raises on unknown keyword arguments ("Argument(s) not recognized").
check_dots_empty_opt <- function(..., call = sys.call(-1)) {
  n <- length(list(...))
  extra <- names(list(...)) %||% rep("", n)
  if (n > 0) {
    extra[is.na(extra) | extra == ""] <- "(unnamed)"
    abort_value("Unknown argument{?s} {.arg {extra}}.", call = call)
  }
}
