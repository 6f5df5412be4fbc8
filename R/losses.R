# Losses: the object every loss_*() constructor returns, its reduction, the
# names compile() accepts, and the Keras config of each loss. The objects
# carry the configuration to the C++ core; called as
# `loss(y_true, y_pred, sample_weight)` (as keras3's loss objects are) they
# compute the loss in R: a plain implementation the tests also use as a
# reference for the core. The per-sample formulas are in
# losses-probabilistic.R, losses-regression.R and losses-hinge.R.

loss_reductions <- c("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none")

# A loss object: a function of (y_true, y_pred, sample_weight) whose
# configuration reads with `$`: kind (the core's name), class_name (Keras'),
# name, reduction, and `args`, the Keras config entries after name and
# reduction, in the order Keras' get_config() writes them; every entry of
# args also reads directly (loss$from_logits).
new_loss <- function(kind, class_name, name, reduction, args, y_true, y_pred, call) {
  if (is.null(reduction)) reduction <- "none"
  reduction <- check_choice(reduction, "reduction", loss_reductions, call = call)
  self <- new.env(parent = emptyenv())
  self$kind <- kind
  self$class_name <- class_name
  self$name <- check_string(name, "name", call = call)
  self$reduction <- reduction
  self$args <- args
  obj <- function(y_true, y_pred, sample_weight = NULL) {
    loss_compute(self, y_true, y_pred, sample_weight, self$reduction, call = sys.call())
  }
  class(obj) <- c(paste0("mirrored_loss_", kind), "mirrored_loss", "function")
  if (is.null(y_true) && is.null(y_pred)) return(obj)
  if (is.null(y_true) || is.null(y_pred)) abort_value("Give both {.arg y_true} and {.arg y_pred}, or neither.", call = call)
  loss_compute(self, y_true, y_pred, NULL, reduction, call = call)
}

loss_self <- function(x) environment(unclass(x))$self

#' @export
`$.mirrored_loss` <- function(x, name) {
  self <- loss_self(x)
  if (exists(name, envir = self, inherits = FALSE)) self[[name]] else self$args[[name]]
}

#' @export
`[[.mirrored_loss` <- function(x, i, ...) `$.mirrored_loss`(x, i)

#' @export
`$<-.mirrored_loss` <- function(x, name, value) {
  self <- loss_self(x)
  self[[name]] <- value
  x
}

#' @export
print.mirrored_loss <- function(x, ...) {
  args <- x$args
  shown <- if (length(args)) paste0(", ", paste(names(args), vapply(args, function(a) if (is.null(a)) "NULL" else format(a), ""),
                                                  sep = " = ", collapse = ", ")) else ""
  cat("<loss ", x$class_name, ": name = \"", x$name, "\"", shown, ">\n", sep = "")
  invisible(x)
}

# The loss of y_pred against y_true reduced as Keras' reduce_weighted_values
# does: per-sample values times sample_weight (and the ignore_class mask,
# whose valid rows weigh total / valid under the mean reductions, as Keras'
# apply_mask), then summed; "sum_over_batch_size" and "mean" divide by the
# number of samples (not by the sum of the weights), "mean_with_sample_weight"
# by the sum of the weights; divisions by 0 give 0.
loss_compute <- function(self, y_true, y_pred, sample_weight, reduction, call) {
  p <- as_loss_matrix(y_pred, "y_pred", call)
  values <- loss_per_sample(self, y_true, p, call)
  n <- length(values)
  w <- if (is.null(sample_weight)) NULL else {
    if (!is.numeric(sample_weight) || !(length(sample_weight) %in% c(1L, n))) {
      abort_value("{.arg sample_weight} must be a number or {n} numbers (one per sample), not {describe(sample_weight)}.",
                  call = call)
    }
    rep_len(as.numeric(sample_weight), n)
  }
  mask <- attr(values, "mask")
  if (!is.null(mask)) {
    valid <- sum(mask)
    mw <- if (reduction %in% c("mean", "sum_over_batch_size")) ifelse(mask, if (valid > 0) n / valid else 0, 0)
          else as.numeric(mask)
    w <- if (is.null(w)) mw else w * mw
  }
  values <- as.numeric(values)
  if (!is.null(w)) values <- values * w
  if (reduction == "none" || n == 0) return(values)
  total <- sum(values)
  if (reduction == "sum") return(total)
  divisor <- if (reduction == "mean_with_sample_weight" && !is.null(w)) sum(w) else n
  if (divisor == 0) 0 else total / divisor
}

as_loss_matrix <- function(x, arg, call) {
  if (!is.numeric(x) && !is.logical(x)) abort_value("{.arg {arg}} must be a numeric array, not {describe(x)}.", call = call)
  m <- if (is.null(dim(x))) matrix(as.numeric(x), ncol = 1) else matrix(as.numeric(x), nrow = dim(x)[1])
  m
}

# Per-sample values of `self`'s loss (one per row of p), from the family
# files' formulas.
loss_per_sample <- function(self, y_true, p, call) {
  if (self$kind == "traced") return(traced_per_sample(self$fn, y_true, p, "The loss function", call))
  f <- c(loss_formulas_probabilistic, loss_formulas_regression, loss_formulas_hinge)[[self$kind]]
  f(self$args, y_true, p, call)
}

# Targets shaped like the prediction (every loss but the sparse one).
dense_targets <- function(y_true, p, call) {
  t <- as_loss_matrix(y_true, "y_true", call)
  if (!identical(dim(t), dim(p))) {
    abort_value("{.arg y_true} must have the shape of {.arg y_pred} ({nrow(p)} x {ncol(p)}), not {nrow(t)} x {ncol(t)}.",
                call = call)
  }
  t
}

check_from_logits <- function(x, call) check_bool(x, "from_logits", call = call)
check_label_smoothing <- function(x, call) check_num(x, "label_smoothing", min = 0, max = 1, call = call)
check_axis_last <- function(axis, call) {
  if (!(is.numeric(axis) && length(axis) == 1 && identical(as.integer(axis), -1L))) {
    abort_value("{.arg axis} must be -1 (the last axis), not {describe(axis)}.", call = call)
  }
  -1L
}

# The names compile() accepts for a loss, as keras.losses.get() does.
loss_constructors <- function() {
  list(sparse_categorical_crossentropy = loss_sparse_categorical_crossentropy,
       categorical_crossentropy = loss_categorical_crossentropy,
       binary_crossentropy = loss_binary_crossentropy, bce = loss_binary_crossentropy,
       BCE = loss_binary_crossentropy,
       binary_focal_crossentropy = loss_binary_focal_crossentropy,
       categorical_focal_crossentropy = loss_categorical_focal_crossentropy,
       mean_squared_error = loss_mean_squared_error, mse = loss_mean_squared_error,
       MSE = loss_mean_squared_error,
       mean_absolute_error = loss_mean_absolute_error, mae = loss_mean_absolute_error,
       MAE = loss_mean_absolute_error,
       mean_absolute_percentage_error = loss_mean_absolute_percentage_error,
       mape = loss_mean_absolute_percentage_error, MAPE = loss_mean_absolute_percentage_error,
       mean_squared_logarithmic_error = loss_mean_squared_logarithmic_error,
       msle = loss_mean_squared_logarithmic_error, MSLE = loss_mean_squared_logarithmic_error,
       huber = loss_huber, log_cosh = loss_log_cosh,
       kl_divergence = loss_kl_divergence, kld = loss_kl_divergence, KLD = loss_kl_divergence,
       poisson = loss_poisson, cosine_similarity = loss_cosine_similarity,
       hinge = loss_hinge, squared_hinge = loss_squared_hinge,
       categorical_hinge = loss_categorical_hinge)
}

as_loss <- function(x, call = sys.call(-1)) {
  # A function written with op_* (R/losses-custom.R).
  if (inherits(x, "mirrored_custom_loss_class")) x <- x()  # a Loss() class, not called
  if (is.function(x) && !inherits(x, "mirrored_loss")) {
    # keras3 takes a loss constructor uncalled (loss = loss_mean_squared_error).
    ctor <- Find(function(f) identical(f, x), loss_constructors())
    return(if (!is.null(ctor)) ctor() else function_loss(x, call = call))
  }
  if (inherits(x, "mirrored_loss")) {
    if (x$reduction != "sum_over_batch_size") {
      abort_value("Training uses reduction \"sum_over_batch_size\"; got {.val {x$reduction}}.", call = call)
    }
    return(x)
  }
  known <- loss_constructors()
  if (is.character(x) && length(x) == 1 && x %in% names(known)) {
    # Keras names a loss given by a string after the string's function
    # (its default name) and saves the string.
    obj <- known[[x]]()
    obj$string <- x
    return(obj)
  }
  abort_value("{.arg loss} must be a loss object or one of {.val {names(known)}}, not {describe(x)}.",
              call = call)
}

# What the core takes (src/r_model.cpp): the kind, the name and every
# argument of LossParams, with Keras' defaults for those the loss lacks.
loss_core_spec <- function(loss) {
  a <- loss$args
  ic <- a$ignore_class
  list(kind = loss$kind, name = loss$name, from_logits = isTRUE(a$from_logits),
       label_smoothing = as.numeric(a$label_smoothing %||% 0),
       has_ignore = !is.null(ic), ignore_class = as.numeric(ic %||% 0),
       delta = as.numeric(a$delta %||% 1), alpha = as.numeric(a$alpha %||% 0.25),
       gamma = as.numeric(a$gamma %||% 2),
       apply_class_balancing = isTRUE(a$apply_class_balancing))
}

# ---- .keras compile config ------------------------------------------------
# A loss as Keras' serialize_keras_object() writes it: a string stays a
# string; an object is its class and config (name, reduction, then its
# arguments as its get_config() orders them).
loss_keras_config <- function(loss) {
  if (!is.null(loss$string)) return(loss$string)
  if (loss$kind == "traced") return(traced_keras_config(loss))
  cfg <- c(list(name = loss$name, reduction = loss$reduction), loss$args)
  list(module = "keras.losses", class_name = loss$class_name, config = cfg, registered_name = NULL)
}

# A loss from a Keras compile config entry (a string or a class and config).
loss_from_keras <- function(x, what, custom_objects = list()) {
  custom <- traced_from_keras(x, what, custom_objects, "loss")
  if (!is.null(custom)) return(custom)
  if (is.character(x)) {
    if (!x %in% names(loss_constructors())) abort_config(what, "loss {.val {x}} is not supported by mirrored.")
    return(as_loss(x))
  }
  cls <- cfg_get(x, "class_name", "")
  cfg <- cfg_get(x, "config", list())
  red <- cfg_get(cfg, "reduction", "sum_over_batch_size")
  if (!identical(red, "sum_over_batch_size")) abort_config(what, "loss reduction {.val {red}} is not supported.")
  ctor <- loss_classes()[[cls]]
  if (is.null(ctor)) abort_config(what, "loss class {.val {cls}} is not supported by mirrored.")
  # Keras' from_config passes the config to the constructor: pass what the
  # constructor takes (dtype is float32 here).
  args <- cfg[intersect(names(cfg), setdiff(names(formals(ctor)), c("y_true", "y_pred", "...", "dtype")))]
  args <- args[!vapply(args, is.null, logical(1)) | names(args) == "ignore_class"]
  do.call(ctor, args)
}

loss_classes <- function() {
  list(SparseCategoricalCrossentropy = loss_sparse_categorical_crossentropy,
       CategoricalCrossentropy = loss_categorical_crossentropy,
       BinaryCrossentropy = loss_binary_crossentropy,
       BinaryFocalCrossentropy = loss_binary_focal_crossentropy,
       CategoricalFocalCrossentropy = loss_categorical_focal_crossentropy,
       MeanSquaredError = loss_mean_squared_error, MeanAbsoluteError = loss_mean_absolute_error,
       MeanAbsolutePercentageError = loss_mean_absolute_percentage_error,
       MeanSquaredLogarithmicError = loss_mean_squared_logarithmic_error,
       Huber = loss_huber, LogCosh = loss_log_cosh, KLDivergence = loss_kl_divergence,
       Poisson = loss_poisson, CosineSimilarity = loss_cosine_similarity, Hinge = loss_hinge,
       SquaredHinge = loss_squared_hinge, CategoricalHinge = loss_categorical_hinge)
}
