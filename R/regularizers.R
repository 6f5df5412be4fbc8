# Weight and activity regularizers (Keras 3's keras.regularizers). An R
# regularizer holds the Keras config the core reads; the penalty, its
# gradient and how it enters the loss are the core's (src/mr/nn/regularization.h).

new_regularizer <- function(class_name, config) {
  structure(list(class_name = class_name, config = config), class = "mirrored_regularizer")
}

#' Regularizers
#'
#' Penalties on a layer's weights (`kernel_regularizer`, `bias_regularizer`,
#' `embeddings_regularizer`, `beta_regularizer`, `gamma_regularizer`) or on its
#' output (`activity_regularizer`), added to the loss that training minimizes,
#' as Keras 3 does:
#' - `regularizer_l1()`: `l1 * sum(abs(x))`;
#' - `regularizer_l2()`: `l2 * sum(x^2)`;
#' - `regularizer_l1_l2()`: both;
#' - `regularizer_orthogonal()`: `factor * 0.5 * sum(abs(P - diag(P))) / (n (n - 1) / 2)`
#'   where `P` holds the cosine similarities of the weight's rows (`mode = "rows"`)
#'   or columns (`"columns"`), `n` of them (weights of rank 2 only).
#'
#' Weight penalties count once per step, whatever the batch size and the
#' number of replicas; an activity penalty is divided by the batch's rows.
#' The loss `fit()` and `evaluate()` report includes them, as Keras' does.
#' Layers also accept the names `"l1"`, `"l2"` and `"orthogonal_regularizer"`
#' (Keras' defaults).
#'
#' @param l1,l2 Non-negative penalty factors.
#' @param factor Non-negative factor of the orthogonality penalty.
#' @param mode `"rows"` or `"columns"`: which vectors of the weight should be orthogonal.
#' @return A regularizer object, for a layer's `*_regularizer` argument.
#' @family regularizers
#' @examples
#' layer_dense(units = 4, kernel_regularizer = regularizer_l2(0.01),
#'             activity_regularizer = regularizer_l1(1e-4))
#' regularizer_l1_l2(l1 = 0.01, l2 = 0.001)
#' @export
regularizer_l1 <- function(l1 = 0.01) {
  new_regularizer("L1", list(l1 = check_num(l1, "l1", min = 0)))
}

#' @rdname regularizer_l1
#' @export
regularizer_l2 <- function(l2 = 0.01) {
  new_regularizer("L2", list(l2 = check_num(l2, "l2", min = 0)))
}

#' @rdname regularizer_l1
#' @export
regularizer_l1_l2 <- function(l1 = 0, l2 = 0) {
  new_regularizer("L1L2", list(l1 = check_num(l1, "l1", min = 0), l2 = check_num(l2, "l2", min = 0)))
}

#' @rdname regularizer_l1
#' @export
regularizer_orthogonal <- function(factor = 0.01, mode = "rows") {
  new_regularizer("OrthogonalRegularizer",
                  list(factor = check_num(factor, "factor", min = 0),
                       mode = check_choice(mode, "mode", c("rows", "columns"))))
}

#' @export
format.mirrored_regularizer <- function(x, ...) {
  args <- vapply(names(x$config), function(n) paste0(n, " = ", format(x$config[[n]])), "")
  paste0("<regularizer ", x$class_name, "(", paste(args, collapse = ", "), ")>")
}

#' @export
print.mirrored_regularizer <- function(x, ...) {
  cat(format(x), "\n", sep = "")
  invisible(x)
}

# What a layer's `*_regularizer` argument passes to the core: NULL, a name
# Keras' regularizers.get() accepts, or a regularizer object's Keras config.
regularizer_keras_config <- function(x, arg, call = sys.call(-1)) {
  if (is.null(x)) return(NULL)
  if (inherits(x, "mirrored_regularizer")) {
    return(list(module = "keras.regularizers", class_name = x$class_name, config = x$config,
                registered_name = NULL))
  }
  known <- c("l1", "l2", "orthogonal_regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer")
  if (is.character(x) && length(x) == 1 && x %in% known) return(x)
  abort_value("{.arg {arg}} must be a regularizer (see {.fn regularizer_l2}), one of {.val {known}}, or NULL, not {describe(x)}.",
              call = call)
}

# The Keras configs of a layer's weight options, for its config: `args` is a
# named list of `*_regularizer` and `*_constraint` arguments; NULL ones are
# left out (the core writes them as null).
weight_option_configs <- function(args, call = sys.call(-1)) {
  out <- list()
  for (nm in names(args)) {
    v <- if (endsWith(nm, "_constraint")) {
      constraint_keras_config(args[[nm]], nm, call = call)
    } else {
      regularizer_keras_config(args[[nm]], nm, call = call)
    }
    if (!is.null(v)) out[[nm]] <- v
  }
  out
}
