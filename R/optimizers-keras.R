# Optimizers in Keras 3's serialization (the compile_config of a .keras
# file): get_config()'s keys in Keras' order, a schedule serialized as
# {module, class_name, config}, and back.

optimizer_keras_config <- function(opt) {
  if (inherits(opt, "mirrored_loss_scale_optimizer")) return(loss_scale_keras_config(opt))  # i14-mpapi
  c <- opt$config
  cm <- c$common %||% list()
  wd <- c$weight_decay %||% 0
  lr <- opt$learning_rate_setting
  cfg <- list(name = opt$name,
              learning_rate = if (inherits(lr, "mirrored_lr_schedule")) lr_schedule_keras_config(lr)
                              else as_float32(lr),
              weight_decay = if (c$kind == "adamw" || wd != 0) as.numeric(wd) else NULL,
              clipnorm = cm$clipnorm, global_clipnorm = cm$global_clipnorm, clipvalue = cm$clipvalue,
              use_ema = cm$use_ema %||% FALSE, ema_momentum = cm$ema_momentum %||% 0.99,
              ema_overwrite_frequency = cm$ema_overwrite_frequency, loss_scale_factor = NULL,
              gradient_accumulation_steps = cm$gradient_accumulation_steps)
  cfg <- c(cfg, switch(c$kind,
    adam = , adamw = list(beta_1 = c$beta_1, beta_2 = c$beta_2, epsilon = c$epsilon, amsgrad = c$amsgrad),
    sgd = list(momentum = c$momentum, nesterov = c$nesterov),
    rmsprop = list(rho = c$rho, momentum = c$momentum, epsilon = c$epsilon, centered = c$centered),
    adagrad = list(initial_accumulator_value = c$initial_accumulator_value, epsilon = c$epsilon),
    adadelta = list(rho = c$rho, epsilon = c$epsilon),
    adamax = , nadam = , lamb = list(beta_1 = c$beta_1, beta_2 = c$beta_2, epsilon = c$epsilon),
    ftrl = list(learning_rate_power = c$learning_rate_power,
                initial_accumulator_value = c$initial_accumulator_value,
                l1_regularization_strength = c$l1_regularization_strength,
                l2_regularization_strength = c$l2_regularization_strength,
                l2_shrinkage_regularization_strength = c$l2_shrinkage_regularization_strength,
                beta = c$beta),
    lion = list(beta_1 = c$beta_1, beta_2 = c$beta_2)
  ))
  list(module = "keras.optimizers", class_name = opt$class_name, config = cfg, registered_name = NULL)
}

optimizer_from_keras <- function(x, what) {
  if (is.character(x)) return(as_optimizer(x))
  cls <- cfg_get(x, "class_name", "")
  cfg <- cfg_get(x, "config", list())
  if (identical(cls, "LossScaleOptimizer")) return(loss_scale_from_keras(cfg, what))  # i14-mpapi
  check_null_options(cfg, "loss_scale_factor", cls, what)
  lr <- cfg_get(cfg, "learning_rate")
  if (is.list(lr)) {
    lr <- lr_schedule_from_keras(lr, what)
  } else if (!is.numeric(lr)) {
    abort_config(what, "the optimizer's learning rate is neither a number nor a schedule.")
  }
  args <- list(learning_rate = lr, name = cfg_get(cfg, "name"))
  keep <- function(keys) for (k in keys) if (!is.null(cfg_get(cfg, k))) args[[k]] <<- cfg[[k]]
  keep(c("clipnorm", "global_clipnorm", "clipvalue", "use_ema", "ema_momentum",
         "ema_overwrite_frequency", "gradient_accumulation_steps", "weight_decay"))
  fun <- switch(cls,
    Adam = { keep(c("beta_1", "beta_2", "epsilon", "amsgrad")); optimizer_adam },
    AdamW = { keep(c("beta_1", "beta_2", "epsilon", "amsgrad")); optimizer_adam_w },
    SGD = { keep(c("momentum", "nesterov")); optimizer_sgd },
    RMSprop = { keep(c("rho", "momentum", "epsilon", "centered")); optimizer_rmsprop },
    Adagrad = { keep(c("initial_accumulator_value", "epsilon")); optimizer_adagrad },
    Adadelta = { keep(c("rho", "epsilon")); optimizer_adadelta },
    Adamax = { keep(c("beta_1", "beta_2", "epsilon")); optimizer_adamax },
    Nadam = { keep(c("beta_1", "beta_2", "epsilon")); optimizer_nadam },
    Lamb = { keep(c("beta_1", "beta_2", "epsilon")); optimizer_lamb },
    Lion = { keep(c("beta_1", "beta_2")); optimizer_lion },
    Ftrl = { keep(c("learning_rate_power", "initial_accumulator_value", "l1_regularization_strength",
                    "l2_regularization_strength", "l2_shrinkage_regularization_strength", "beta"))
             optimizer_ftrl },
    abort_config(what, "optimizer class {.val {cls}} is not supported by mirrored.")
  )
  do.call(fun, args)
}
