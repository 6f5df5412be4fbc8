# Neural-network op_* functions: activations, softmax, one-hot and the two
# cross-entropies (R/ops-core.R says how an op runs). The cross-entropies
# are compositions, in the numerically stable forms of Keras' TensorFlow
# backend.

# Keras' backend.epsilon(), the clipping of probabilities in the
# cross-entropies.
keras_epsilon <- 1e-7

#' Activations as ops
#'
#' `op_relu()` (`max(x, 0)`), `op_sigmoid()` (`1 / (1 + exp(-x))`),
#' `op_silu()` (`x * sigmoid(x)`) and `op_gelu()` (with `approximate = TRUE`,
#' Keras' default, the tanh approximation; otherwise `x * Phi(x)` with the
#' normal CDF), element by element.
#'
#' @param x A numeric array or a traced tensor.
#' @param approximate Whether `op_gelu()` uses the tanh approximation.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_relu(c(-1, 0, 2))
#' op_sigmoid(0)
#' op_gelu(c(-1, 1), approximate = FALSE)
#' op_silu(1)
#' @export
op_relu <- function(x) op_unary_("relu", x, sys.call(), dtype = float_dtype)

#' @rdname op_relu
#' @export
op_sigmoid <- function(x) {
  op_run(list(x = x), function(a) {
    y <- trace_record(a$x$ctx, "sigmoid", list(a$x), dtype = float_dtype(a$x$dtype))
    y$logits <- a$x  # Keras' _keras_logits: binary_crossentropy uses them
    y
  }, sys.call())
}

#' @rdname op_relu
#' @export
op_silu <- function(x) op_unary_("silu", x, sys.call(), dtype = float_dtype)

#' @rdname op_relu
#' @export
op_gelu <- function(x, approximate = TRUE) {
  call <- sys.call()
  approximate <- check_bool(approximate, "approximate", call = call)
  op_unary_("gelu", x, call, attrs = list(approximate = approximate), dtype = float_dtype)
}

#' Softmax
#'
#' `op_softmax()`: `exp(x) / sum(exp(x))` along `axis`; `op_log_softmax()`
#' its logarithm, computed stably (`x - logsumexp(x)`).
#'
#' @param x A numeric array or a traced tensor.
#' @param axis One axis: 1-based, negative counting from the end (the last
#'   by default).
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_softmax(c(1, 2, 3))
#' op_log_softmax(matrix(1:6, 2), axis = 1)
#' @export
op_softmax <- function(x, axis = -1L) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(x = x), function(a) {
    y <- trace_record(a$x$ctx, "softmax", list(a$x), list(axis = axis), float_dtype(a$x$dtype))
    if (identical(axis, -1L) || identical(norm_op_axis(axis, length(a$x$shape)), length(a$x$shape) - 1L)) {
      y$logits <- a$x  # Keras' _keras_logits
    }
    y
  }, call)
}

#' @rdname op_softmax
#' @export
op_log_softmax <- function(x, axis = -1L) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(x = x), function(a) {
    trace_record(a$x$ctx, "log_softmax", list(a$x), list(axis = axis), float_dtype(a$x$dtype))
  }, call)
}

#' One-hot encoding
#'
#' `op_one_hot()`: for class ids `x`, a new axis of `num_classes` values at
#' `axis`, 1 at the class and 0 elsewhere (ids out of range give all
#' zeros). As in keras3 the ids are 1-based unless `zero_indexed = TRUE`; a
#' factor gives its codes, and its number of levels when `num_classes` is
#' missing.
#'
#' @param x Integer class ids: an array, a factor or a traced tensor.
#' @param num_classes The number of classes.
#' @param axis Where the new axis goes (of the result): 1-based, negative
#'   counting from the end (last by default).
#' @param dtype The result's dtype (`NULL`: `"float32"`).
#' @param sparse Not supported: `FALSE` only.
#' @param zero_indexed Whether ids count from 0 (Python's convention).
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_one_hot(c(1, 3, 2), 3)
#' op_one_hot(factor(c("a", "c")))
#' @export
op_one_hot <- function(x, num_classes, axis = -1L, dtype = NULL, sparse = FALSE, zero_indexed = FALSE) {
  call <- sys.call()
  zero_indexed <- check_bool(zero_indexed, "zero_indexed", call = call)
  if (!isFALSE(sparse)) abort_not_yet("{.arg sparse} = TRUE is not supported; use FALSE.", call = call)
  if (is.factor(x)) {
    if (zero_indexed) abort_value("{.arg zero_indexed} = TRUE cannot be used with a factor {.arg x} (its codes count from 1).", call = call)
    if (missing(num_classes)) num_classes <- nlevels(x)
    x <- array(as.integer(x), dim(x) %||% length(x))
    if (length(x) == 1L) dim(x) <- NULL
  }
  if (missing(num_classes)) abort_value("{.arg num_classes} is required.", call = call)
  num_classes <- check_int(num_classes, "num_classes", min = 1, call = call)
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  dtype <- dtype %||% "float32"
  dtype <- check_string(dtype, "dtype", call = call)
  if (!zero_indexed && !is_traced_tensor(x) && is.numeric(x)) {
    x[!is.na(x) & x > 0] <- x[!is.na(x) & x > 0] - 1L
    zero_indexed <- TRUE
  }
  op_run(list(x = x), function(a) {
    ids <- if (zero_indexed) a$x else op_from_r_index_(a$x)
    y <- trace_record(ids$ctx, "one_hot", list(ids), list(num_classes = num_classes, axis = axis), "float32")
    if (!identical(dtype, "float32")) y <- trace_record(y$ctx, "cast", list(y), list(dtype = dtype), dtype)
    y
  }, call)
}

#' Cross-entropies
#'
#' - `op_sparse_categorical_crossentropy()`: for integer class ids `target`
#'   (counting from 0, as Keras' losses take them) and class probabilities
#'   (or logits) `output` along the last axis, `-log(p[target])`. From
#'   logits it is `logsumexp(output) - output[target]`; from probabilities
#'   these are clipped to `[1e-7, 1 - 1e-7]` first (Keras' TensorFlow
#'   backend).
#' - `op_binary_crossentropy()`: `-(target * log(p) + (1 - target) * log(1 -
#'   p))` element by element, `p` clipped to `[1e-7, 1 - 1e-7]`; from logits
#'   the stable `max(x, 0) - x * target + log1p(exp(-|x|))`.
#'
#' When `output` is the result of `op_softmax()` (resp. `op_sigmoid()`) in
#' a traced function, its logits are used, as Keras does.
#'
#' @param target The targets: class ids (sparse) or values in `[0, 1]`.
#' @param output Probabilities, or logits with `from_logits = TRUE`.
#' @param from_logits Whether `output` holds logits.
#' @param axis The class axis: the last only (-1).
#' @return An R array (or a traced tensor) of the per-element losses.
#' @family ops
#' @examples
#' op_sparse_categorical_crossentropy(c(0, 2), matrix(c(2, 0, 1, 1, 0, 3), 2), from_logits = TRUE)
#' op_binary_crossentropy(c(1, 0), c(0.9, 0.2))
#' @export
op_sparse_categorical_crossentropy <- function(target, output, from_logits = FALSE, axis = -1L) {
  call <- sys.call()
  from_logits <- check_bool(from_logits, "from_logits", call = call)
  ax <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(target = target, output = output), function(a) {
    out <- a$output
    rank <- length(out$shape)
    if (rank < 1L) abort_value("{.arg output} must have rank 1 or more.", call = call)
    if (!identical(ax, -1L) && !identical(ax, rank - 1L)) {
      abort_value("Only {.arg axis} = -1 (the last axis) is supported, as in Keras; got {axis}.", call = call)
    }
    ctx <- out$ctx
    tgt <- a$target
    if (length(tgt$shape) == rank && identical(tgt$shape[[rank]], 1L)) {
      tgt <- trace_record(ctx, "squeeze", list(tgt), list(axis = -1L), tgt$dtype)
    }
    if (length(tgt$shape) != rank - 1L) {
      abort_value("{.arg target} must have rank {rank - 1} ({.arg output}'s rank - 1), not {length(tgt$shape)}.", call = call)
    }
    if (!from_logits && !is.null(out$logits)) {
      out <- out$logits
      from_logits <- TRUE
    }
    if (!from_logits) {
      clipped <- op_clip(out, keras_epsilon, 1 - keras_epsilon)
      out <- trace_record(ctx, "log", list(clipped), dtype = clipped$dtype)
    }
    ids <- trace_record(ctx, "cast", list(tgt), list(dtype = "int32"), "int32")
    ids <- trace_record(ctx, "expand_dims", list(ids), list(axis = -1L), "int32")
    picked <- trace_record(ctx, "take_along_axis", list(out, ids), list(axis = -1L), out$dtype)
    picked <- trace_record(ctx, "squeeze", list(picked), list(axis = -1L), out$dtype)
    lse <- trace_record(ctx, "logsumexp", list(out), list(axis = -1L), out$dtype)
    trace_record(ctx, "subtract", list(lse, picked), dtype = out$dtype)
  }, call)
}

#' @rdname op_sparse_categorical_crossentropy
#' @export
op_binary_crossentropy <- function(target, output, from_logits = FALSE) {
  call <- sys.call()
  from_logits <- check_bool(from_logits, "from_logits", call = call)
  op_run(list(target = target, output = output), function(a) {
    tgt <- a$target
    out <- a$output
    st <- tgt$shape
    so <- out$shape
    if (length(st) != length(so) || any(st != so, na.rm = TRUE)) {
      abort_value("{.arg target} and {.arg output} must have the same shape, not ({toString(st)}) and ({toString(so)}).",
                  call = call)
    }
    ctx <- out$ctx
    d <- float_dtype(out$dtype)
    rec <- function(op, ...) trace_record(ctx, op, list(...), dtype = d)
    if (!from_logits && !is.null(out$logits)) {
      out <- out$logits
      from_logits <- TRUE
    }
    if (from_logits) {
      # TensorFlow's sigmoid_cross_entropy_with_logits.
      pos <- rec("relu", out)
      xz <- rec("multiply", out, tgt)
      soft <- rec("log1p", rec("exp", rec("negative", rec("abs", out))))
      return(rec("add", rec("subtract", pos, xz), soft))
    }
    p <- op_clip(out, keras_epsilon, 1 - keras_epsilon)
    one <- op_const(p, 1)
    a1 <- rec("multiply", tgt, rec("log", p))
    a0 <- rec("multiply", rec("subtract", one, tgt), rec("log", rec("subtract", one, p)))
    rec("negative", rec("add", a1, a0))
  }, call)
}
