# Reductions, shape ops, products and index ops (keras.ops' numpy family;
# R/ops-core.R says how an op runs). Axes are keras3's: 1-based, negative
# from the end, the batch axis (axis 1) included.

op_reduce_ <- function(op, x, axis, keepdims, call, dtype = identity) {
  axis <- as_op_axis(axis, call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  op_run(list(x = x), function(a) {
    d <- if (identical(a$x$dtype, "bool") && op == "sum") "int32" else dtype(a$x$dtype)
    trace_record(a$x$ctx, op, list(a$x), list(axis = axis_json(axis), keepdims = keepdims), d)
  }, call)
}

#' Reductions
#'
#' keras3's reductions over `axis` (all axes when `NULL`): `op_sum()`,
#' `op_mean()`, `op_max()`, `op_min()`, `op_var()` (the mean of the squared
#' deviations from the mean, as numpy's `var`: no Bessel correction) and
#' `op_std()` (its square root). `keepdims = TRUE` keeps the reduced axes with
#' size 1. R's `sum()`, `max()`, `min()` and `mean()` of a traced tensor
#' reduce over all its axes.
#'
#' In a traced layer a reduction over the batch axis (axis 1) covers the
#' rows of one replica, as Keras does under a MirroredStrategy.
#'
#' @param x A numeric array or a traced tensor.
#' @param axis `NULL` (all axes) or the axes to reduce: 1-based, negative
#'   counting from the end.
#' @param keepdims Whether reduced axes stay, with size 1.
#' @param initial Not supported: `NULL` only.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- matrix(1:6, 2)
#' op_sum(x)
#' op_mean(x, axis = 2)
#' op_max(x, axis = 1, keepdims = TRUE)
#' op_var(c(1, 2, 3, 4))
#' @export
op_mean <- function(x, axis = NULL, keepdims = FALSE) {
  op_reduce_("mean", x, axis, keepdims, sys.call(), dtype = float_dtype)
}

#' @rdname op_mean
#' @export
op_sum <- function(x, axis = NULL, keepdims = FALSE) op_reduce_("sum", x, axis, keepdims, sys.call())

#' @rdname op_mean
#' @export
op_max <- function(x, axis = NULL, keepdims = FALSE, initial = NULL) {
  if (!is.null(initial)) abort_not_yet("{.arg initial} is not supported yet; use NULL.", call = sys.call())
  op_reduce_("max", x, axis, keepdims, sys.call())
}

#' @rdname op_mean
#' @export
op_min <- function(x, axis = NULL, keepdims = FALSE, initial = NULL) {
  if (!is.null(initial)) abort_not_yet("{.arg initial} is not supported yet; use NULL.", call = sys.call())
  op_reduce_("min", x, axis, keepdims, sys.call())
}

#' @rdname op_mean
#' @export
op_var <- function(x, axis = NULL, keepdims = FALSE) {
  call <- sys.call()
  ax <- as_op_axis(axis, call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  op_run(list(x = x), function(a) op_var_(a$x, ax, keepdims), call)
}

# mean(square(x - mean(x, axis, keepdims = TRUE)), axis, keepdims), as
# TensorFlow's reduce_variance. `axis` 0-based / negative.
op_var_ <- function(x, axis, keepdims) {
  ctx <- x$ctx
  d <- float_dtype(x$dtype)
  m <- trace_record(ctx, "mean", list(x), list(axis = axis_json(axis), keepdims = TRUE), d)
  dev <- trace_record(ctx, "subtract", list(x, m), dtype = d)
  sq <- trace_record(ctx, "square", list(dev), dtype = d)
  trace_record(ctx, "mean", list(sq), list(axis = axis_json(axis), keepdims = keepdims), d)
}

#' @rdname op_mean
#' @export
op_std <- function(x, axis = NULL, keepdims = FALSE) {
  call <- sys.call()
  ax <- as_op_axis(axis, call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  op_run(list(x = x), function(a) {
    v <- op_var_(a$x, ax, keepdims)
    trace_record(v$ctx, "sqrt", list(v), dtype = v$dtype)
  }, call)
}

#' Clipping
#'
#' `op_clip()`: `x` limited to `[x_min, x_max]`, element by element
#' (`op_minimum(op_maximum(x, x_min), x_max)`, as TensorFlow's
#' `clip_by_value`).
#'
#' @param x A numeric array or a traced tensor.
#' @param x_min,x_max The bounds: numbers, or arrays that broadcast with `x`.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_clip(c(-2, 0.5, 3), 0, 1)
#' @export
op_clip <- function(x, x_min, x_max) {
  op_run(list(x = x, x_min = x_min, x_max = x_max), function(a) {
    d <- if (identical(a$x$dtype, "bool")) "int32" else a$x$dtype
    lo <- trace_record(a$x$ctx, "maximum", list(a$x, a$x_min), dtype = d)
    trace_record(lo$ctx, "minimum", list(lo, a$x_max), dtype = d)
  }, sys.call())
}

#' Matrix product
#'
#' `op_matmul()`: the matrix product of `x1` and `x2` (numpy's `matmul`: a
#' 1-D operand is a row or column vector, dropped from the result). In a
#' traced graph `x1` may have any rank with `x2` a matrix (a weight or a
#' constant), or both may be batched with the same leading axes.
#'
#' @param x1,x2 Numeric arrays or traced tensors.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_matmul(matrix(1:6, 2), matrix(1:3, 3))
#' op_matmul(matrix(1:6, 2), c(1, 0, -1))
#' @export
op_matmul <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    ctx <- a$x1$ctx
    d <- promote_dtype(a$x1, a$x2)
    x1 <- a$x1
    x2 <- a$x2
    v1 <- length(x1$shape) == 1L
    v2 <- length(x2$shape) == 1L
    if (v1) x1 <- trace_record(ctx, "expand_dims", list(x1), list(axis = 0L), x1$dtype)
    if (v2) x2 <- trace_record(ctx, "expand_dims", list(x2), list(axis = -1L), x2$dtype)
    y <- trace_record(ctx, "matmul", list(x1, x2), dtype = d)
    if (v2) y <- trace_record(ctx, "squeeze", list(y), list(axis = -1L), d)
    if (v1) y <- trace_record(ctx, "squeeze", list(y), list(axis = -1L - !v2), d)
    y
  }, sys.call())
}

#' Shapes: transpose, reshape, expand, squeeze, concatenate, stack
#'
#' - `op_transpose()`: the axes permuted as `axes` lists them (reversed when
#'   `NULL`). A batched tensor keeps its batch axis first.
#' - `op_reshape()`: the same values in `newshape` (row-major order, as
#'   numpy; `-1` or `NA` once for the size that fits). For a batched tensor
#'   `newshape`'s first entry is the batch axis, `NA` or `-1`.
#' - `op_expand_dims()`: a new axis of size 1 at `axis` (of the result).
#' - `op_squeeze()`: `axis` (of size 1) dropped, or every non-batch axis of
#'   size 1 when `NULL`.
#' - `op_concatenate()`: the tensors of `xs` joined along `axis`.
#' - `op_stack()`: the tensors of `x` (same shapes) stacked along a new
#'   `axis`.
#'
#' @param x A numeric array or a traced tensor; for `op_stack()` a list of
#'   them.
#' @param xs A list of arrays or traced tensors.
#' @param axes `NULL` or a permutation of the axes (1-based).
#' @param newshape The new dimensions.
#' @param axis An axis: 1-based, negative counting from the end.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- array(1:24, c(2, 3, 4))
#' dim(op_transpose(x, c(1, 3, 2)))
#' op_reshape(matrix(1:6, 2, byrow = TRUE), c(3, 2))
#' dim(op_expand_dims(x, 1))
#' op_squeeze(array(1:3, c(1, 3)))
#' op_concatenate(list(matrix(1:4, 2), matrix(5:8, 2)), axis = 2)
#' op_stack(list(c(1, 2), c(3, 4)))
#' @export
op_transpose <- function(x, axes = NULL) {
  call <- sys.call()
  axes <- as_op_axis(axes, "axes", call = call)
  op_run(list(x = x), function(a) {
    rank <- length(a$x$shape)
    ax <- if (is.null(axes)) rev(seq_len(rank) - 1L) else axes
    trace_record(a$x$ctx, "transpose", list(a$x), list(axes = I(as.integer(ax))), a$x$dtype)
  }, call)
}

#' @rdname op_transpose
#' @export
op_reshape <- function(x, newshape) {
  call <- sys.call()
  ok <- (is.numeric(newshape) || is.logical(newshape)) && !any(newshape[!is.na(newshape)] < -1) &&
    all(newshape == round(newshape), na.rm = TRUE)
  if (!ok) abort_value("{.arg newshape} must be whole numbers (-1 or NA for one inferred size), not {describe(newshape)}.", call = call)
  ns <- as.integer(newshape)
  ns[is.na(ns)] <- -1L
  op_run(list(x = x), function(a) {
    if (tt_batched(a$x)) {
      if (!length(ns) || ns[[1]] != -1L) {
        abort_not_yet("{.arg newshape} of a batched tensor must start with the batch axis ({.code NA} or -1): reshaping across the batch axis is not supported.",
                      call = call)
      }
      ns <- ns[-1L]
    }
    trace_record(a$x$ctx, "reshape", list(a$x), list(shape = I(ns)), a$x$dtype)
  }, call)
}

#' @rdname op_transpose
#' @export
op_expand_dims <- function(x, axis) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  op_run(list(x = x), function(a) {
    out_rank <- length(a$x$shape) + length(axis)
    y <- a$x
    for (ax in sort(norm_op_axis(axis, out_rank))) {
      y <- trace_record(y$ctx, "expand_dims", list(y), list(axis = ax), y$dtype)
    }
    y
  }, call)
}

#' @rdname op_transpose
#' @export
op_squeeze <- function(x, axis = NULL) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  op_run(list(x = x), function(a) {
    if (length(axis) <= 1L) {
      return(trace_record(a$x$ctx, "squeeze", list(a$x), list(axis = axis), a$x$dtype))
    }
    y <- a$x
    for (ax in sort(norm_op_axis(axis, length(a$x$shape)), decreasing = TRUE)) {
      y <- trace_record(y$ctx, "squeeze", list(y), list(axis = ax), y$dtype)
    }
    y
  }, call)
}

# The tensors of a list argument as named operands (xs1, xs2, ...).
list_operands <- function(xs, arg, call) {
  if (!is.list(xs) || is_traced_tensor(xs) || !length(xs)) {
    abort_value("{.arg {arg}} must be a non-empty list of arrays or tensors, not {describe(xs)}.", call = call)
  }
  xs <- unname(xs)
  names(xs) <- paste0(arg, seq_along(xs))
  xs
}

#' @rdname op_transpose
#' @export
op_concatenate <- function(xs, axis = 1L) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list_operands(xs, "xs", call), function(a) {
    a <- unname(a)
    trace_record(a[[1]]$ctx, "concatenate", a, list(axis = axis), do.call(promote_dtype, a))
  }, call)
}

#' @rdname op_transpose
#' @export
op_stack <- function(x, axis = 1L) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list_operands(x, "x", call), function(a) {
    a <- unname(a)
    trace_record(a[[1]]$ctx, "stack", a, list(axis = axis), do.call(promote_dtype, a))
  }, call)
}

#' Indices: argmax and take along an axis
#'
#' - `op_argmax()`: the index of the largest value along `axis` (of all
#'   values, in row-major order, when `NULL`); the first one on ties, and a
#'   NaN counts as the largest (numpy).
#' - `op_take_along_axis()`: the values of `x` at `indices` along `axis`
#'   (numpy's `take_along_axis`: `indices` has `x`'s rank, the other axes
#'   broadcast).
#'
#' As in keras3, indices are 1-based unless `zero_indexed = TRUE`
#' (`op_take_along_axis()` also takes negative indices, counting from the
#' end).
#'
#' @param x A numeric array or a traced tensor.
#' @param indices An integer array or traced tensor of `x`'s rank.
#' @param axis `NULL` (flattened) or one axis: 1-based, negative counting
#'   from the end.
#' @param keepdims Whether the reduced axis stays, with size 1.
#' @param zero_indexed Whether indices count from 0 (Python's convention)
#'   instead of 1.
#' @return An integer R array (`op_argmax()`), an R array, or a traced
#'   tensor.
#' @family ops
#' @examples
#' x <- matrix(c(1, 9, 3, 4, 2, 8), 2)
#' op_argmax(x, axis = 2)
#' op_take_along_axis(x, matrix(c(3L, 1L), 2), axis = 2)
#' @export
op_argmax <- function(x, axis = NULL, keepdims = FALSE, zero_indexed = FALSE) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  zero_indexed <- check_bool(zero_indexed, "zero_indexed", call = call)
  op_run(list(x = x), function(a) {
    ctx <- a$x$ctx
    src <- a$x
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

#' @rdname op_argmax
#' @export
op_take_along_axis <- function(x, indices, axis = NULL, zero_indexed = FALSE) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  zero_indexed <- check_bool(zero_indexed, "zero_indexed", call = call)
  if (!zero_indexed && !is_traced_tensor(indices) && is.numeric(indices)) {
    indices <- r_index_values(indices)
    zero_indexed <- TRUE
  }
  op_run(list(x = x, indices = indices), function(a) {
    ctx <- a$x$ctx
    src <- a$x
    idx <- a$indices
    if (!zero_indexed) idx <- op_from_r_index_(idx)
    if (is.null(axis)) {
      if (tt_batched(src) || tt_batched(idx)) abort_value("{.arg axis} = NULL would flatten the batch axis of a batched tensor; give an axis.", call = call)
      src <- trace_record(ctx, "reshape", list(src), list(shape = I(-1L)), src$dtype)
      idx <- trace_record(ctx, "reshape", list(idx), list(shape = I(-1L)), idx$dtype)
    }
    trace_record(ctx, "take_along_axis", list(src, idx), list(axis = axis %||% 0L), a$x$dtype)
  }, call)
}

#' @rdname op_argmax
#' @export
op_take <- function(x, indices, axis = NULL, zero_indexed = FALSE) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  zero_indexed <- check_bool(zero_indexed, "zero_indexed", call = call)
  if (!is.null(axis) && axis != 0L) {
    abort_not_yet("{.fn op_take} along another axis than the first is not supported yet: take rows (axis = 1) of a transposed {.arg x} ({.fn op_transpose}).",
                  call = call)
  }
  if (!zero_indexed && !is_traced_tensor(indices) && is.numeric(indices)) {
    indices <- r_index_values(indices)
    zero_indexed <- TRUE
  }
  op_run(list(x = x, indices = indices), function(a) {
    ctx <- a$x$ctx
    src <- a$x
    if (tt_batched(src)) {
      abort_not_yet("{.fn op_take} of a batched tensor {.arg x} is not supported yet: {.arg x} is a table (a weight or an R array) whose rows are taken.",
                    call = call)
    }
    idx <- a$indices
    if (!zero_indexed) idx <- op_from_r_index_(idx)
    if (is.null(axis)) src <- trace_record(ctx, "reshape", list(src), list(shape = I(-1L)), src$dtype)
    trace_record(ctx, "take", list(src, idx), list(axis = 0L), a$x$dtype)
  }, call)
}

# keras3's as_py_index() on R numbers: positive indices count from 1, others stay.
r_index_values <- function(i) {
  pos <- !is.na(i) & i > 0
  i[pos] <- i[pos] - 1L
  i
}

# keras3's as_py_index() on a tensor: where(i > 0, i - 1, i).
op_from_r_index_ <- function(i) {
  ctx <- i$ctx
  pos <- trace_record(ctx, "greater", list(i, op_const(i, 0L)), dtype = "bool")
  dec <- trace_record(ctx, "subtract", list(i, op_const(i, 1L)), dtype = i$dtype)
  trace_record(ctx, "where", list(pos, dec, i), dtype = i$dtype)
}

#' Log-sum-exp
#'
#' `op_logsumexp()`: `log(sum(exp(x)))` over `axis` (all axes when `NULL`),
#' computed stably (the maximum is taken out first).
#'
#' @inheritParams op_mean
#' @param axis `NULL` (all axes) or one axis: 1-based, negative counting from
#'   the end.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_logsumexp(c(1000, 1000))
#' op_logsumexp(matrix(1:6, 2), axis = 2)
#' @export
op_logsumexp <- function(x, axis = NULL, keepdims = FALSE) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  if (length(axis) > 1L) abort_not_yet("{.arg axis} with several axes is not supported yet; give one axis or NULL.", call = call)
  keepdims <- check_bool(keepdims, "keepdims", call = call)
  op_run(list(x = x), function(a) {
    trace_record(a$x$ctx, "logsumexp", list(a$x), list(axis = axis, keepdims = keepdims),
                 float_dtype(a$x$dtype))
  }, call)
}
