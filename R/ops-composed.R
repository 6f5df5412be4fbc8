# Logical ops, reductions, normalizations, cross-entropy and tensor products
# composed from the core's ops (R/ops-core.R says how an op runs), in the
# forms of Keras 3's TensorFlow backend (keras/src/backend/tensorflow/), so
# that values and gradients are TensorFlow's. Products are matmuls after a
# transpose and a reshape; the batch axis of a batched tensor is never
# contracted or flattened.

#' Logical ops and boolean reductions
#'
#' - `op_logical_and()`, `op_logical_or()`, `op_logical_xor()`,
#'   `op_logical_not()`: element by element, non-zero values counting as
#'   `TRUE` (R's `&`, `|` and `!` on traced tensors are the first three).
#' - `op_all()`, `op_any()`: whether all (any) values along `axis` are
#'   non-zero.
#' - `op_count_nonzero()`: the number of non-zero values along `axis`.
#'
#' @param x,x1,x2 Arrays or traced tensors.
#' @param axis `NULL` (all axes) or axes: 1-based, negative counting from
#'   the end.
#' @param keepdims Whether reduced axes stay, with size 1.
#' @return A logical (integer for `op_count_nonzero()`) R array, or a traced
#'   tensor.
#' @family ops
#' @examples
#' op_logical_xor(c(TRUE, FALSE, TRUE), c(TRUE, TRUE, FALSE))
#' op_all(matrix(c(1, 1, 0, 1), 2), axis = 1)
#' op_any(c(0, 0, 2))
#' op_count_nonzero(matrix(c(1, 0, 0, 3), 2), axis = 2)
#' @export
op_logical_and <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    b1 <- op_not_equal(a$x1, 0)
    b2 <- op_not_equal(a$x2, 0)
    trace_record(b1$ctx, "multiply", list(b1, b2), dtype = "bool")
  }, sys.call())
}

#' @rdname op_logical_and
#' @export
op_logical_or <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    b1 <- op_not_equal(a$x1, 0)
    b2 <- op_not_equal(a$x2, 0)
    trace_record(b1$ctx, "maximum", list(b1, b2), dtype = "bool")
  }, sys.call())
}

#' @rdname op_logical_and
#' @export
op_logical_xor <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    op_not_equal(op_not_equal(a$x1, 0), op_not_equal(a$x2, 0))
  }, sys.call())
}

#' @rdname op_logical_and
#' @export
op_logical_not <- function(x) op_run(list(x = x), function(a) op_equal(a$x, 0), sys.call())

op_bool_reduce_ <- function(op, x, axis, keepdims, call) {
  axis <- as_op_axis(axis, call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  op_run(list(x = x), function(a) {
    b <- op_not_equal(a$x, 0)
    trace_record(b$ctx, op, list(b), list(axis = axis_json(axis), keepdims = keepdims), "bool")
  }, call)
}

#' @rdname op_logical_and
#' @export
op_all <- function(x, axis = NULL, keepdims = FALSE) op_bool_reduce_("min", x, axis, keepdims, sys.call())

#' @rdname op_logical_and
#' @export
op_any <- function(x, axis = NULL, keepdims = FALSE) op_bool_reduce_("max", x, axis, keepdims, sys.call())

#' @rdname op_logical_and
#' @export
op_count_nonzero <- function(x, axis = NULL) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  op_run(list(x = x), function(a) {
    b <- op_not_equal(a$x, 0)
    trace_record(b$ctx, "sum", list(b), list(axis = axis_json(axis), keepdims = FALSE), "int32")
  }, call)
}

#' Argmin, weighted average, moments
#'
#' - `op_argmin()`: the index of the smallest value along `axis` (of all
#'   values, in row-major order, when `NULL`), the first one on ties; `-0`
#'   counts as smaller than `0` (Keras). 1-based unless `zero_indexed =
#'   TRUE`, as in keras3.
#' - `op_average()`: the mean of `x` along `axis`, weighted by `weights`
#'   (`x`'s shape, or one weight per value along one `axis`): `sum(x *
#'   weights) / sum(weights)`.
#' - `op_moments()`: a list of the mean and the variance of `x` over `axes`
#'   (TensorFlow's `tf.nn.moments`: the variance is the mean squared
#'   deviation from the mean, through which no gradient flows).
#'
#' @param x An array or a traced tensor.
#' @param axis,axes `NULL` (all axes; not for `op_moments()`) or axes,
#'   1-based.
#' @param keepdims Whether reduced axes stay, with size 1.
#' @param zero_indexed Whether the index counts from 0.
#' @param weights `NULL` or weights (an array or traced tensor).
#' @param synchronized Not supported: `FALSE` only (reductions over the
#'   batch axis in a traced layer cover one replica's rows).
#' @return An R array (or a traced tensor); `op_moments()` a list of two.
#' @family ops
#' @examples
#' op_argmin(c(3, 1, 2))
#' op_average(c(1, 2, 3), weights = c(3, 1, 0))
#' op_moments(matrix(1:6, 2), axes = 1)
#' @export
op_argmin <- function(x, axis = NULL, keepdims = FALSE, zero_indexed = FALSE) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  zero_indexed <- check_bool(zero_indexed, "zero_indexed", call = call)
  op_run(list(x = x), function(a) {
    ctx <- a$x$ctx
    src <- a$x
    if (is_float_dtype(src$dtype)) {
      # -0 as minus the smallest normal float32, so it wins over 0.
      negzero <- op_logical_and(op_equal(src, 0), op_less(op_divide(1, src), 0))
      src <- op_where(negzero, -2^-126, src)
    }
    src <- op_negative(src)
    if (is.null(axis)) {
      if (tt_batched(src)) abort_value("{.arg axis} = NULL would reduce the batch axis of a batched tensor; give an axis.", call = call)
      src <- trace_record(ctx, "reshape", list(src), list(shape = I(-1L)), src$dtype)
    }
    y <- trace_record(ctx, "argmax", list(src), list(axis = axis %||% 0L, keepdims = keepdims && !is.null(axis)), "int32")
    if (is.null(axis) && keepdims) {
      y <- trace_record(ctx, "reshape", list(y), list(shape = I(rep(1L, length(a$x$shape)))), "int32")
    }
    if (!zero_indexed) y <- trace_record(ctx, "add", list(y, op_const(y, 1L)), dtype = "int32")
    y
  }, call)
}

#' @rdname op_argmin
#' @export
op_average <- function(x, axis = NULL, weights = NULL) {
  call <- sys.call()
  ax <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(x = x, weights = weights), function(a) {
    v <- tt_as_dtype(a$x, float_dtype(a$x$dtype))
    if (is.null(a$weights)) {
      return(trace_record(v$ctx, "mean", list(v), list(axis = ax), v$dtype))
    }
    w <- tt_as_dtype(a$weights, v$dtype)
    same <- length(w$shape) == length(v$shape)
    if (!same && is.null(ax)) abort_value("{.arg axis} must be given when {.arg weights} and {.arg x} have different shapes.", call = call)
    if (same) {
      num <- trace_record(v$ctx, "sum", list(op_multiply(v, w)), list(axis = ax), v$dtype)
      return(op_divide(num, trace_record(v$ctx, "sum", list(w), list(axis = ax), v$dtype)))
    }
    if (length(w$shape) != 1L) abort_value("{.arg weights} must have {.arg x}'s shape or be 1-D.", call = call)
    r <- length(v$shape)
    k <- tt_axis(ax, r, call)
    tt_check_not_batch(v, k, call, "{.fn op_average} with 1-D weights cannot contract")
    op_divide(tt_tensordot(v, w, k, 0L, call), op_sum(w))
  }, call)
}

#' @rdname op_argmin
#' @export
op_moments <- function(x, axes, keepdims = FALSE, synchronized = FALSE) {
  call <- sys.call()
  axes <- as_op_axis(axes, "axes", call = call)
  if (is.null(axes)) abort_value("{.arg axes} is required.", call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  if (!isFALSE(check_bool(synchronized, "synchronized", call = call))) {
    abort_not_yet("{.arg synchronized} = TRUE is not supported: reductions over the batch axis in a traced layer cover one replica's rows.", call = call)
  }
  op_run_list_(list(x = x), function(a) {
    v <- tt_as_dtype(a$x, float_dtype(a$x$dtype))
    at <- list(axis = axis_json(axes), keepdims = TRUE)
    m <- trace_record(v$ctx, "mean", list(v), at, v$dtype)
    dev <- op_subtract(v, op_stop_gradient(m))
    at$keepdims <- keepdims
    list(trace_record(v$ctx, "mean", list(v), at, v$dtype),
         trace_record(v$ctx, "mean", list(op_square(dev)), at, v$dtype))
  }, call)
}

#' Normalizations
#'
#' As Keras 3 computes them on TensorFlow:
#' - `op_normalize()`: `x` divided by its `order`-norm along `axis`; for
#'   `order = 2`, `x * min(1 / sqrt(sum(x^2)), 1 / epsilon)`, otherwise `x /
#'   max(norm, epsilon)`.
#' - `op_rms_normalization()`: `x / sqrt(mean(x^2) + epsilon)` along `axis`,
#'   times `scale`.
#' - `op_batch_normalization()`: `(x - mean) / sqrt(variance + epsilon) *
#'   scale + offset`, the statistics (1-D, the size of `axis`) broadcast
#'   along `axis`.
#'
#' `epsilon = NULL` is Keras' `epsilon()`, 1e-7.
#'
#' @param x An array or a traced tensor.
#' @param axis One axis (1-based; `op_rms_normalization()` may take
#'   several).
#' @param order The norm's order, a whole number >= 1.
#' @param epsilon A small number, or `NULL`.
#' @param scale,offset,mean,variance Arrays or traced tensors (`scale` and
#'   `offset` may be `NULL`).
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_normalize(c(3, 4))
#' op_rms_normalization(c(1, 2, 3))
#' op_batch_normalization(matrix(1:6, 2), mean = c(1, 2, 3), variance = c(1, 1, 4), axis = 2)
#' @export
op_normalize <- function(x, axis = -1L, order = 2L, epsilon = NULL) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  order <- check_int(order, "order", min = 1, call = call)
  if (order != 2L && length(axis) != 1L) abort_value("{.arg axis} must be one axis for {.arg order} = {order}.", call = call)
  epsilon <- check_num(epsilon, "epsilon", min = 0, null_ok = TRUE, call = call) %||% keras_epsilon
  op_run(list(x = x), function(a) {
    v <- tt_as_dtype(a$x, float_dtype(a$x$dtype))
    if (!length(v$shape)) v <- trace_record(v$ctx, "expand_dims", list(v), list(axis = 0L), v$dtype)
    at <- list(axis = axis_json(axis), keepdims = TRUE)
    if (order == 2L) {
      ss <- trace_record(v$ctx, "sum", list(op_square(v)), at, v$dtype)
      return(op_multiply(v, op_minimum(op_divide(1, op_sqrt(ss)), 1 / epsilon)))
    }
    av <- op_abs(v)
    norm <- if (order == 1L) trace_record(v$ctx, "sum", list(av), at, v$dtype) else
      op_power(trace_record(v$ctx, "sum", list(op_power(av, order)), at, v$dtype), 1 / order)
    op_divide(v, op_maximum(norm, epsilon))
  }, call)
}

#' @rdname op_normalize
#' @export
op_rms_normalization <- function(x, scale = NULL, axis = -1L, epsilon = NULL) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  epsilon <- check_num(epsilon, "epsilon", min = 0, null_ok = TRUE, call = call) %||% keras_epsilon
  op_run(list(x = x, scale = scale), function(a) {
    v <- tt_as_dtype(a$x, float_dtype(a$x$dtype))
    if (!length(v$shape)) v <- trace_record(v$ctx, "expand_dims", list(v), list(axis = 0L), v$dtype)
    ms <- trace_record(v$ctx, "mean", list(op_square(v)), list(axis = axis_json(axis), keepdims = TRUE), v$dtype)
    y <- op_multiply(v, op_divide(1, op_sqrt(op_add(ms, epsilon))))
    if (!is.null(a$scale)) y <- op_multiply(y, a$scale)
    y
  }, call)
}

#' @rdname op_normalize
#' @export
op_batch_normalization <- function(x, mean, variance, axis, offset = NULL, scale = NULL, epsilon = 0.001) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  if (is.null(axis)) abort_value("{.arg axis} is required.", call = call)
  epsilon <- check_num(epsilon, "epsilon", min = 0, call = call)
  op_run(list(x = x, mean = mean, variance = variance, offset = offset, scale = scale), function(a) {
    r <- length(a$x$shape)
    k <- tt_axis(axis, r, call)
    # The 1-D statistics as (n, 1, ..., 1): they broadcast along axis k.
    place <- function(t) {
      if (is.null(t) || k == r - 1L || length(t$shape) != 1L) return(t)
      trace_record(t$ctx, "reshape", list(t), list(shape = I(c(t$shape, rep(1L, r - 1L - k)))), t$dtype)
    }
    inv <- op_divide(1, op_sqrt(op_add(place(a$variance), epsilon)))
    if (!is.null(a$scale)) inv <- op_multiply(inv, place(a$scale))
    shift <- op_multiply(place(a$mean), inv)
    shift <- if (is.null(a$offset)) op_negative(shift) else op_subtract(place(a$offset), shift)
    op_add(op_multiply(a$x, inv), shift)
  }, call)
}

#' Categorical cross-entropy
#'
#' `op_categorical_crossentropy()`: for one-hot (or soft) targets and class
#' probabilities along `axis`, `-sum(target * log(p))`, as Keras 3 on
#' TensorFlow: the probabilities are rescaled to sum to 1 and clipped to
#' `[1e-7, 1 - 1e-7]`; from logits it is `-sum(target * log_softmax(x))`.
#' When `output` is the result of `op_softmax()` in a traced function, its
#' logits are used, as Keras does.
#'
#' @inheritParams op_sparse_categorical_crossentropy
#' @param target Targets of `output`'s shape.
#' @param axis The class axis (1-based, negative from the end).
#' @return An R array (or a traced tensor) without the class axis.
#' @family ops
#' @examples
#' op_categorical_crossentropy(rbind(c(1, 0), c(0, 1)), rbind(c(0.9, 0.1), c(0.2, 0.8)))
#' @export
op_categorical_crossentropy <- function(target, output, from_logits = FALSE, axis = -1L) {
  call <- sys.call()
  from_logits <- check_bool(from_logits, "from_logits", call = call)
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(target = target, output = output), function(a) {
    tgt <- a$target
    out <- a$output
    st <- tgt$shape
    so <- out$shape
    if (!length(so) || length(st) != length(so) || any(st != so, na.rm = TRUE)) {
      abort_value("{.arg target} and {.arg output} must have the same shape of rank 1 or more, not ({toString(st)}) and ({toString(so)}).",
                  call = call)
    }
    k <- tt_axis(axis, length(so), call)
    ctx <- out$ctx
    if (!from_logits && !is.null(out$logits) && k == length(so) - 1L) {
      out <- out$logits
      from_logits <- TRUE
    }
    d <- float_dtype(out$dtype)
    at <- list(axis = k, keepdims = FALSE)
    if (from_logits) {
      ls <- trace_record(ctx, "log_softmax", list(out), list(axis = k), d)
      return(op_negative(trace_record(ctx, "sum", list(op_multiply(tgt, ls)), at, d)))
    }
    total <- trace_record(ctx, "sum", list(out), list(axis = k, keepdims = TRUE), d)
    p <- op_clip(op_divide(out, total), keras_epsilon, 1 - keras_epsilon)
    op_negative(trace_record(ctx, "sum", list(op_multiply(tgt, op_log(p))), at, d))
  }, call)
}

# tensordot of traced tensors over 0-based axes `a1` of x1 and `a2` of x2:
# x1's free axes then x2's. x1's contracted axes go last and merge; x2's
# go first and merge, its free axes merge, so the product is one matmul
# (x1 keeps its leading axes, the batch axis among them).
tt_tensordot <- function(x1, x2, a1, a2, call) {
  ctx <- x1$ctx
  r1 <- length(x1$shape)
  r2 <- length(x2$shape)
  if (tt_batched(x2)) abort_value("The second tensor must not have a batch axis: tensor products never contract the batch axis.", call = call)
  tt_check_not_batch(x1, a1, call, "A tensor product cannot contract")
  if (length(a1) != length(a2) || any(x1$shape[a1 + 1L] != x2$shape[a2 + 1L])) {
    abort_value("The contracted axes must match in number and size: ({toString(x1$shape[a1 + 1L])}) and ({toString(x2$shape[a2 + 1L])}).",
                call = call)
  }
  d <- promote_dtype(x1, x2)
  if (!length(a1)) {
    # An outer product: x1 (..., 1, ...) times x2.
    y1 <- trace_record(ctx, "reshape", list(x1), list(shape = I(c(if (tt_batched(x1)) x1$shape[-1] else x1$shape, rep(1L, r2)))), x1$dtype)
    return(op_multiply(y1, x2))
  }
  f1 <- setdiff(seq_len(r1) - 1L, a1)
  f2 <- setdiff(seq_len(r2) - 1L, a2)
  kk <- as.integer(prod(x1$shape[a1 + 1L]))
  p1 <- c(f1, a1)
  y1 <- x1
  if (!identical(p1, seq_len(r1) - 1L)) y1 <- trace_record(ctx, "transpose", list(y1), list(axes = I(as.integer(p1))), y1$dtype)
  lead <- x1$shape[f1 + 1L]
  s1 <- c(lead, kk)
  if (tt_batched(x1)) s1 <- s1[-1L]
  y1 <- trace_record(ctx, "reshape", list(y1), list(shape = I(as.integer(s1))), y1$dtype)
  p2 <- c(a2, f2)
  y2 <- x2
  if (!identical(p2, seq_len(r2) - 1L)) y2 <- trace_record(ctx, "transpose", list(y2), list(axes = I(as.integer(p2))), y2$dtype)
  free2 <- x2$shape[f2 + 1L]
  y2 <- trace_record(ctx, "reshape", list(y2), list(shape = I(as.integer(c(kk, if (length(f2)) prod(free2))))), y2$dtype)
  y <- op_matmul(y1, y2)
  out <- c(lead, free2)
  if (identical(as.integer(y$shape), as.integer(out))) return(y)
  if (tt_batched(y)) out <- out[-1L]
  trace_record(ctx, "reshape", list(y), list(shape = I(as.integer(out))), d)
}

#' Tensor products
#'
#' - `op_tensordot()`: the sum of products over the axes `axes` lists (a
#'   list of two vectors of 1-based axes, of `x1` and of `x2`). An integer
#'   goes through keras3's 1-based axis conversion, so `N` contracts the
#'   last `N - 1` axes of `x1` with the first `N - 1` of `x2` (the default 3
#'   contracts two, numpy's default).
#' - `op_dot()`: numpy's `dot`: a product with a scalar; the last axis of
#'   `x1` with the only axis of a vector `x2`, else with the second-to-last
#'   axis of `x2`.
#' - `op_inner()`: the last axes of `x1` and `x2` contracted.
#' - `op_vdot()`: the dot product of the flattened tensors.
#' - `op_outer()`: every value of the flattened `x1` times every value of the
#'   flattened `x2`, a matrix.
#'
#' In a traced graph `x1` may be batched (its batch axis is never
#' contracted); `x2` may not.
#'
#' @param x1,x2 Arrays or traced tensors.
#' @param axes A whole number, or a list of two vectors of axes.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' a <- array(1:24, c(2, 3, 4))
#' dim(op_tensordot(a, array(1, c(3, 4, 5))))
#' op_tensordot(matrix(1:6, 2), matrix(1:6, 3), axes = list(2, 1))
#' op_dot(c(1, 2, 3), c(4, 5, 6))
#' op_inner(matrix(1:4, 2), c(1, 1))
#' op_vdot(matrix(1:4, 2), matrix(1:4, 2))
#' op_outer(c(1, 2), c(1, 10, 100))
#' @export
op_tensordot <- function(x1, x2, axes = 3L) {
  call <- sys.call()
  if (is.list(axes)) {
    if (length(axes) != 2L) abort_value("{.arg axes} must be a whole number or a list of two vectors of axes.", call = call)
    ax1 <- as_op_axis(axes[[1]], "axes", call = call)
    ax2 <- as_op_axis(axes[[2]], "axes", call = call)
    n <- NULL
  } else {
    n <- check_int(axes, "axes", min = 1, call = call) - 1L
  }
  op_run(list(x1 = x1, x2 = x2), function(a) {
    r1 <- length(a$x1$shape)
    r2 <- length(a$x2$shape)
    if (!is.null(n)) {
      if (n > r1 || n > r2) abort_value("{.arg axes} = {axes} contracts more axes than the tensors have.", call = call)
      a1 <- seq_len(n) + r1 - n - 1L
      a2 <- seq_len(n) - 1L
    } else {
      a1 <- tt_axis(ax1, r1, call, "axes")
      a2 <- tt_axis(ax2, r2, call, "axes")
    }
    tt_tensordot(a$x1, a$x2, a1, a2, call)
  }, call)
}

#' @rdname op_tensordot
#' @export
op_dot <- function(x1, x2) {
  call <- sys.call()
  op_run(list(x1 = x1, x2 = x2), function(a) {
    r1 <- length(a$x1$shape)
    r2 <- length(a$x2$shape)
    if (!r1 || !r2) return(op_multiply(a$x1, a$x2))
    tt_tensordot(a$x1, a$x2, r1 - 1L, if (r2 == 1L) 0L else r2 - 2L, call)
  }, call)
}

#' @rdname op_tensordot
#' @export
op_inner <- function(x1, x2) {
  call <- sys.call()
  op_run(list(x1 = x1, x2 = x2), function(a) {
    r1 <- length(a$x1$shape)
    r2 <- length(a$x2$shape)
    if (!r1 || !r2) return(op_multiply(a$x1, a$x2))
    tt_tensordot(a$x1, a$x2, r1 - 1L, r2 - 1L, call)
  }, call)
}

#' @rdname op_tensordot
#' @export
op_vdot <- function(x1, x2) {
  call <- sys.call()
  op_run(list(x1 = x1, x2 = x2), function(a) {
    u <- tt_flatten(a$x1, call, "It would flatten")
    v <- tt_flatten(a$x2, call, "It would flatten")
    tt_tensordot(u, v, 0L, 0L, call)
  }, call)
}

#' @rdname op_tensordot
#' @export
op_outer <- function(x1, x2) {
  call <- sys.call()
  op_run(list(x1 = x1, x2 = x2), function(a) {
    u <- tt_flatten(a$x1, call, "It would flatten")
    v <- tt_flatten(a$x2, call, "It would flatten")
    u <- trace_record(u$ctx, "reshape", list(u), list(shape = I(c(-1L, 1L))), u$dtype)
    op_multiply(u, v)
  }, call)
}
