# The arguments every optimizer shares (Keras 3's BaseOptimizer): gradient
# clipping, EMA of the weights and gradient accumulation. R checks them and
# keeps them as Keras writes them in get_config(); the core applies them
# (src/mr/train/update.h).

optimizer_common <- function(clipnorm, clipvalue, global_clipnorm, use_ema, ema_momentum,
                             ema_overwrite_frequency, loss_scale_factor,
                             gradient_accumulation_steps, call = sys.call(-1)) {
  clipnorm <- check_num(clipnorm, "clipnorm", min = 0, min_open = TRUE, null_ok = TRUE, call = call)
  clipvalue <- check_num(clipvalue, "clipvalue", min = 0, min_open = TRUE, null_ok = TRUE, call = call)
  global_clipnorm <- check_num(global_clipnorm, "global_clipnorm", min = 0, min_open = TRUE,
                               null_ok = TRUE, call = call)
  set <- c(clipnorm = !is.null(clipnorm), clipvalue = !is.null(clipvalue),
           global_clipnorm = !is.null(global_clipnorm))
  if (sum(set) > 1) {
    given <- names(set)[set]
    abort_value("Only one of {.arg clipnorm}, {.arg clipvalue} and {.arg global_clipnorm} can be set; got {.arg {given}}.",
                call = call)
  }
  use_ema <- check_bool(use_ema, "use_ema", call = call)
  ema_momentum <- check_num(ema_momentum, "ema_momentum", min = 0, max = 1, call = call)
  ema_overwrite_frequency <- check_int(ema_overwrite_frequency, "ema_overwrite_frequency", min = 1,
                                       null_ok = TRUE, call = call)
  if (!is.null(loss_scale_factor)) {
    abort_value("{.arg loss_scale_factor} is not supported yet; leave it at its default.", call = call)
  }
  gradient_accumulation_steps <- check_int(gradient_accumulation_steps, "gradient_accumulation_steps",
                                           min = 2, null_ok = TRUE, call = call)
  list(clipnorm = clipnorm, global_clipnorm = global_clipnorm, clipvalue = clipvalue,
       use_ema = use_ema, ema_momentum = ema_momentum,
       ema_overwrite_frequency = ema_overwrite_frequency, loss_scale_factor = NULL,
       gradient_accumulation_steps = gradient_accumulation_steps)
}

# A number >= 0 or a learning rate schedule.
check_learning_rate <- function(x, call = sys.call(-1)) {
  if (inherits(x, "mirrored_lr_schedule")) return(x)
  if (!(is.numeric(x) && length(x) == 1 && !is.na(x) && is.finite(x) && x >= 0)) {
    abort_value("{.arg learning_rate} must be a number >= 0 or a learning rate schedule (such as {.fn learning_rate_schedule_exponential_decay}), not {describe(x)}.",
                call = call)
  }
  as.numeric(x)
}

# The entries of the core's optimizer spec beyond the first four
# optimizers' (read by src/r_optimizer.cpp).
optimizer_extra_spec <- function(c) {
  cm <- c$common %||% list()
  spec <- list(clipnorm = cm$clipnorm, clipvalue = cm$clipvalue, global_clipnorm = cm$global_clipnorm,
               use_ema = cm$use_ema %||% FALSE, ema_momentum = cm$ema_momentum %||% 0.99,
               ema_overwrite_frequency = cm$ema_overwrite_frequency,
               gradient_accumulation_steps = cm$gradient_accumulation_steps)
  if (c$kind == "adadelta") spec$rho_adadelta <- c$rho
  for (k in c("initial_accumulator_value", "learning_rate_power", "l1_regularization_strength",
              "l2_regularization_strength", "l2_shrinkage_regularization_strength", "beta")) {
    if (!is.null(c[[k]])) spec[[k]] <- c[[k]]
  }
  spec[!vapply(spec, is.null, TRUE)]
}

# Keras' optimizer.finalize_variable_values() at the end of fit(): with
# use_ema, the trainable weights take their moving averages.
finalize_optimizer <- function(model) {
  if (isTRUE(model$optimizer$config$common$use_ema)) {
    with_core(cpp_model_finalize_optimizer(model$ptr()))
  }
  invisible(model)
}
