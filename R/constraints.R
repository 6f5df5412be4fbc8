# Weight constraints (Keras 3's keras.constraints), applied by the core to
# their variables after every optimizer update.

new_constraint <- function(class_name, config) {
  structure(list(class_name = class_name, config = config), class = "mirrored_constraint")
}

# keras3's axes are 1-based (negative ones count from the end); Keras' are
# 0-based. One axis is written as an integer, several as a list.
constraint_axis <- function(axis, call = sys.call(-1)) {
  ok <- is.numeric(axis) && length(axis) >= 1 && all(is.finite(axis)) &&
    all(axis == round(axis)) && all(axis != 0) && !anyDuplicated(axis)
  if (!ok) {
    abort_value("{.arg axis} must be a nonzero whole number or a vector of distinct ones (1 is the first axis, -1 the last), not {describe(axis)}.",
                call = call)
  }
  axis <- as.integer(ifelse(axis > 0, axis - 1L, axis))
  if (length(axis) == 1) axis else as.list(axis)
}

#' Weight constraints
#'
#' Constraints applied to a layer's weights after every optimizer update, as
#' Keras 3 does:
#' - `constraint_maxnorm()`: rescales each weight vector whose L2 norm exceeds
#'   `max_value` to that norm;
#' - `constraint_minmaxnorm()`: moves each norm into `[min_value, max_value]`
#'   (`rate` of the way: `norm <- rate * clip(norm) + (1 - rate) * norm`);
#' - `constraint_unitnorm()`: rescales each vector to norm 1;
#' - `constraint_nonneg()`: sets negative weights to 0.
#'
#' Norms are taken over `axis` (1-based as in keras3: for a dense kernel of
#' shape `(input_dim, units)`, `axis = 1` constrains each unit's incoming
#' weights; for a 2D convolution kernel, `axis = c(1, 2, 3)` each filter).
#' Layers also accept Keras' names `"max_norm"`, `"min_max_norm"`,
#' `"unit_norm"` and `"non_neg"`.
#'
#' @param max_value,min_value Bounds of the norms.
#' @param rate Rate of the move into the bounds (1: all the way).
#' @param axis Axis or axes along which the norms are computed, consecutive.
#' @return A constraint object, for a layer's `*_constraint` argument.
#' @family constraints
#' @examples
#' layer_dense(units = 4, kernel_constraint = constraint_maxnorm(2),
#'             bias_constraint = constraint_nonneg())
#' constraint_minmaxnorm(min_value = 0.5, max_value = 1, rate = 0.5)
#' @export
constraint_maxnorm <- function(max_value = 2L, axis = 1L) {
  max_value <- check_num(max_value, "max_value", min = 0)
  if (max_value == round(max_value)) max_value <- as.integer(max_value)  # Keras writes 2, not 2.0
  new_constraint("MaxNorm", list(max_value = max_value, axis = constraint_axis(axis)))
}

#' @rdname constraint_maxnorm
#' @export
constraint_minmaxnorm <- function(min_value = 0, max_value = 1, rate = 1, axis = 1L) {
  min_value <- check_num(min_value, "min_value", min = 0)
  max_value <- check_num(max_value, "max_value", min = min_value)
  new_constraint("MinMaxNorm", list(min_value = min_value, max_value = max_value,
                                    rate = check_num(rate, "rate"), axis = constraint_axis(axis)))
}

#' @rdname constraint_maxnorm
#' @export
constraint_nonneg <- function() {
  new_constraint("NonNeg", structure(list(), names = character(0)))
}

#' @rdname constraint_maxnorm
#' @export
constraint_unitnorm <- function(axis = 1L) {
  new_constraint("UnitNorm", list(axis = constraint_axis(axis)))
}

#' @export
format.mirrored_constraint <- function(x, ...) {
  args <- vapply(names(x$config), function(n) {
    v <- unlist(x$config[[n]])
    if (n == "axis") v <- ifelse(v >= 0, v + 1L, v)  # keras3's 1-based axes
    paste0(n, " = ", if (length(v) > 1) paste0("c(", paste(v, collapse = ", "), ")") else format(v))
  }, "")
  paste0("<constraint ", x$class_name, "(", paste(args, collapse = ", "), ")>")
}

#' @export
print.mirrored_constraint <- function(x, ...) {
  cat(format(x), "\n", sep = "")
  invisible(x)
}

# What a layer's `*_constraint` argument passes to the core.
constraint_keras_config <- function(x, arg, call = sys.call(-1)) {
  if (is.null(x)) return(NULL)
  if (inherits(x, "mirrored_constraint")) {
    return(list(module = "keras.constraints", class_name = x$class_name, config = x$config,
                registered_name = NULL))
  }
  known <- c("max_norm", "non_neg", "unit_norm", "min_max_norm",
             "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm")
  if (is.character(x) && length(x) == 1 && x %in% known) return(x)
  abort_value("{.arg {arg}} must be a constraint (see {.fn constraint_maxnorm}), one of {.val {known}}, or NULL, not {describe(x)}.",
              call = call)
}
