# Tensor creation and tensor facts (keras.ops' numpy family; R/ops-core.R
# says how an op runs). Creation ops from a shape make their values in R and
# pass them through the core (so they are float32, or the integer or bool
# dtype asked for); on traced tensors the `*_like` ops take the tensor's shape,
# its unknown batch axis included, from a `where` of a constant condition
# (a zero gradient to `x`, and no NaN of `x` leaks into the result).

op_dtypes_ <- c("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                "uint8", "bool")

# `dtype` checked: NULL or one of the dtypes op_cast() takes.
check_op_dtype <- function(dtype, call) {
  if (is.null(dtype)) return(NULL)
  check_choice(dtype, "dtype", op_dtypes_, call = call)
}

# Traced tensor `t` as `dtype` (a cast node when it differs).
tt_as_dtype <- function(t, dtype) {
  if (is.null(dtype) || identical(t$dtype, dtype)) return(t)
  trace_record(t$ctx, "cast", list(t), list(dtype = dtype), dtype)
}

# A constant condition of `shape` (all TRUE) for `where`s that broadcast.
tt_true <- function(ctx, shape = integer()) {
  v <- if (length(shape) <= 1L) rep(TRUE, max(1L, prod(shape))) else array(TRUE, shape)
  trace_add_constant(ctx, if (length(shape)) v else TRUE)
}

# `t` broadcast to `target` (integer dims, NA first for the batch axis) with
# `where(TRUE, t, t)` nodes: exact values, the gradient summed back to `t`.
tt_broadcast <- function(t, target, call, arg = "x") {
  ctx <- t$ctx
  rr <- length(target)
  r <- length(t$shape)
  bad <- function() {
    abort_value("{.arg {arg}} of shape ({toString(t$shape)}) cannot be broadcast to ({toString(target)}).",
                call = call)
  }
  if (r > rr) bad()
  cur <- c(rep(1L, rr - r), t$shape)
  if (tt_batched(t) && (rr > r || !is.na(target[[1]]))) bad()
  if (!tt_batched(t) && rr && is.na(target[[1]])) {
    abort_value("{.arg {arg}} has no batch axis: it cannot be broadcast to a shape with an unknown batch axis (use {.fn op_zeros_like} or {.fn op_full_like} of a batched tensor).",
                call = call)
  }
  ok <- (is.na(cur) & is.na(target)) | (!is.na(cur) & !is.na(target) & (cur == target | cur == 1L))
  if (!all(ok)) bad()
  y <- t
  if (rr > r) y <- trace_record(ctx, "reshape", list(y), list(shape = I(as.integer(cur))), y$dtype)
  for (k in seq_len(rr)) {
    if (is.na(cur[[k]]) || cur[[k]] == target[[k]]) next
    cond <- tt_true(ctx, c(target[[k]], rep(1L, rr - k)))
    y <- trace_record(ctx, "where", list(cond, y, y), dtype = y$dtype)
  }
  y
}

# A shape argument (a vector, a shape(), a list) as known integer dims.
as_op_shape <- function(shape, arg = "shape", call) {
  dims <- tryCatch(as.integer(do.call(shape_fn_, list(shape))), error = function(e) NULL)
  if (is.null(dims) || anyNA(dims) || any(dims < 0L)) {
    abort_value("{.arg {arg}} must be known, non-negative whole numbers (no NA or NULL: an unknown batch size has no value here), not {describe(shape)}.",
                call = call)
  }
  dims
}

shape_fn_ <- function(...) shape(...)

# R values of `dims` (a scalar, a vector or an array) from `v`.
dims_array <- function(v, dims) {
  if (!length(dims)) return(v[[1]])
  if (length(dims) == 1L) return(rep_len(v, dims))
  array(v, dims)
}

# R values `x` evaluated by the core as `dtype` (NULL: x's own).
op_values_ <- function(x, dtype, call) {
  op_run(list(x = x), function(a) tt_as_dtype(a$x, dtype), call)
}

#' Arrays of zeros, ones or a value
#'
#' - `op_zeros()`, `op_ones()`, `op_empty()` (zeros: mirrored never leaves
#'   memory uninitialised): an array of `shape`.
#' - `op_full()`: `fill_value` (a number, or an array that broadcasts to
#'   `shape`) broadcast to `shape`.
#' - `op_zeros_like()`, `op_ones_like()`, `op_full_like()`: the same with
#'   the shape of `x`, and its dtype unless `dtype` is given. On the traced
#'   tensor of a custom loss, metric or layer they keep its unknown batch
#'   axis; no gradient flows back to `x`.
#'
#' `dtype` is `"float32"` when `NULL` (the `*_like` ops: `x`'s dtype).
#'
#' @param shape The dimensions: whole numbers or a [shape()] without unknown
#'   dimensions.
#' @param fill_value The value: a number, an array or a traced tensor.
#' @param x An array or a traced tensor.
#' @param dtype `NULL` or a dtype, such as `"float32"`, `"int32"` or `"bool"`.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_zeros(c(2, 3))
#' op_ones(3, dtype = "int32")
#' op_full(c(2, 2), 7)
#' op_full_like(matrix(1:4, 2), 0.5, dtype = "float32")
#' @export
op_zeros <- function(shape, dtype = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  op_values_(dims_array(0, dims), check_op_dtype(dtype, call) %||% "float32", call)
}

#' @rdname op_zeros
#' @export
op_ones <- function(shape, dtype = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  op_values_(dims_array(1, dims), check_op_dtype(dtype, call) %||% "float32", call)
}

#' @rdname op_zeros
#' @export
op_empty <- function(shape, dtype = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  op_values_(dims_array(0, dims), check_op_dtype(dtype, call) %||% "float32", call)
}

#' @rdname op_zeros
#' @export
op_full <- function(shape, fill_value, dtype = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  op_run(list(fill_value = fill_value), function(a) {
    tt_as_dtype(tt_broadcast(a$fill_value, dims, call, "fill_value"), dtype)
  }, call)
}

# x's shape filled with `fill` (a traced tensor) as `dtype`.
tt_fill_like <- function(x, fill, dtype, call) {
  y <- trace_record(x$ctx, "where", list(tt_true(x$ctx), fill, x), dtype = fill$dtype)
  if (!identical(y$shape, x$shape)) {
    abort_value("{.arg fill_value} of shape ({toString(fill$shape)}) does not broadcast to {.arg x}'s shape ({toString(x$shape)}).",
                call = call)
  }
  tt_as_dtype(y, dtype %||% x$dtype)
}

#' @rdname op_zeros
#' @export
op_zeros_like <- function(x, dtype = NULL) {
  call <- sys.call()
  dtype <- check_op_dtype(dtype, call)
  op_run(list(x = x), function(a) tt_fill_like(a$x, op_const(a$x, 0), dtype, call), call)
}

#' @rdname op_zeros
#' @export
op_ones_like <- function(x, dtype = NULL) {
  call <- sys.call()
  dtype <- check_op_dtype(dtype, call)
  op_run(list(x = x), function(a) tt_fill_like(a$x, op_const(a$x, 1), dtype, call), call)
}

#' @rdname op_zeros
#' @export
op_full_like <- function(x, fill_value, dtype = NULL) {
  call <- sys.call()
  dtype <- check_op_dtype(dtype, call)
  op_run(list(x = x, fill_value = fill_value), function(a) tt_fill_like(a$x, a$fill_value, dtype, call), call)
}

#' Ranges and grids
#'
#' - `op_arange()`: keras3's range, `start`, `start + step`, ... up to `end`,
#'   which is included when `include_end = TRUE` (keras3's default: `end`
#'   becomes `end + step`); `op_arange(n)` is `1, ..., n`. The dtype is
#'   `"int32"` when `start`, `end` and `step` are all integers (`5L`),
#'   `"float32"` otherwise.
#' - `op_linspace()`: `num` evenly spaced values from `start` to `stop`
#'   (`stop` excluded when `endpoint = FALSE`); with `retstep = TRUE` a list
#'   of the values and the spacing. Arrays `start` and `stop` give a grid per
#'   element, the values along `axis`.
#' - `op_logspace()`: `base ^ op_linspace(start, stop, ...)`.
#' - `op_eye()`: an `N` x `M` matrix with ones on diagonal `k` (0 the main
#'   diagonal, positive above it); `op_identity()` the `n` x `n` identity.
#' - `op_tri()`: an `N` x `M` matrix of ones at and below diagonal `k`.
#'
#' Values are computed in R and rounded to the dtype (float32 by default).
#'
#' @param start,end,step,stop Numbers (`start`, `stop` of `op_linspace()`
#'   and `op_logspace()` may be arrays of the same shape).
#' @param include_end Whether `end` is part of the range.
#' @param num The number of values.
#' @param endpoint Whether `stop` is the last value.
#' @param retstep Whether to return the spacing too.
#' @param base The base of `op_logspace()`.
#' @param axis Where the values go when `start` and `stop` are arrays
#'   (1-based).
#' @param N,M,n The numbers of rows and columns (`M = NULL`: `N`).
#' @param k The diagonal: 0 the main one, positive above, negative below.
#' @param dtype `NULL` or a dtype.
#' @return An R array (a list for `retstep = TRUE`).
#' @family ops
#' @examples
#' op_arange(5)
#' op_arange(0, 1, 0.25, include_end = FALSE)
#' op_linspace(0, 1, num = 5)
#' op_logspace(0, 2, num = 3)
#' op_eye(3, k = 1)
#' op_identity(2)
#' op_tri(3)
#' @export
op_arange <- function(start, end, step = 1L, dtype = NULL, include_end = TRUE) {
  call <- sys.call()
  if (missing(end)) {
    end <- start
    start <- if (is.double(end)) 1 else 1L
  }
  for (nm in c("start", "end", "step")) {
    v <- get(nm)
    if (!is.numeric(v) || length(v) != 1L || !is.finite(v)) {
      abort_value("{.arg {nm}} must be a finite number, not {describe(v)}.", call = call, .envir = environment())
    }
  }
  if (step == 0) abort_value("{.arg step} must not be 0.", call = call)
  include_end <- check_bool(include_end, "include_end", call = call)
  dtype <- check_op_dtype(dtype, call) %||%
    (if (is.integer(start) && is.integer(end) && is.integer(step)) "int32" else "float32")
  if (include_end) end <- end + step
  n <- max(0, ceiling((end - start) / step))
  if (n == 0) abort_value("The range from {.arg start} to {.arg end} by {.arg step} is empty.", call = call)
  op_values_(start + (seq_len(n) - 1) * step, dtype, call)
}

# numpy's linspace in double: start + i * step, the last value `stop` when
# `endpoint`. Returns list(values (num, <start's dims>), step).
linspace_values <- function(start, stop, num, endpoint) {
  div <- if (endpoint) num - 1 else num
  step <- if (div > 0) (stop - start) / div else NaN
  i <- seq_len(num) - 1
  d <- r_value_shape(start)
  v <- outer(i, as.vector(step)) + rep(as.vector(start), each = num)
  if (endpoint && num > 1) v[num, ] <- as.vector(stop)
  list(values = array(v, c(num, d)), step = step)
}

check_linspace_args <- function(start, stop, num, axis, call) {
  for (nm in c("start", "stop")) {
    v <- get(nm)
    if (is_traced_tensor(v)) {
      abort_not_yet("{.arg {nm}} is a traced tensor: {.fn {call_name(call)}} takes R numbers or arrays.",
                    call = call, .envir = environment())
    }
    if (!is.numeric(v) || !length(v) || anyNA(v) || any(!is.finite(v))) {
      abort_value("{.arg {nm}} must be finite numbers, not {describe(v)}.", call = call, .envir = environment())
    }
  }
  if (!identical(r_value_shape(start), r_value_shape(stop))) {
    abort_value("{.arg start} and {.arg stop} must have the same shape.", call = call)
  }
  num <- check_int(num, "num", min = 0, call = call)
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  list(num = num, axis = axis)
}

# The values of a linspace (num, <dims>) with the num axis moved to `axis`
# (0-based / negative), as an R array in R's layout.
linspace_place <- function(v, axis) {
  d <- dim(v)
  r <- length(d)
  if (r == 1L) return(as.vector(v))
  ax <- norm_op_axis(axis, r)
  perm <- append(seq_len(r)[-1L], 1L, after = ax)
  aperm(v, perm)
}

#' @rdname op_arange
#' @export
op_linspace <- function(start, stop, num = 50L, endpoint = TRUE, retstep = FALSE, dtype = NULL, axis = 1L) {
  call <- sys.call()
  a <- check_linspace_args(start, stop, num, axis, call)
  endpoint <- check_bool(endpoint, "endpoint", call = call)
  retstep <- check_bool(retstep, "retstep", call = call)
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  ls <- linspace_values(start, stop, a$num, endpoint)
  y <- op_values_(linspace_place(ls$values, a$axis), dtype, call)
  if (retstep) list(y, op_values_(ls$step, dtype, call)) else y
}

#' @rdname op_arange
#' @export
op_logspace <- function(start, stop, num = 50L, endpoint = TRUE, base = 10L, dtype = NULL, axis = 1L) {
  call <- sys.call()
  a <- check_linspace_args(start, stop, num, axis, call)
  endpoint <- check_bool(endpoint, "endpoint", call = call)
  if (!is.numeric(base) || length(base) != 1L || !is.finite(base)) {
    abort_value("{.arg base} must be a finite number, not {describe(base)}.", call = call)
  }
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  ls <- linspace_values(start, stop, a$num, endpoint)
  op_values_(linspace_place(base^ls$values, a$axis), dtype, call)
}

# An N x M matrix of `f(i, j)` (0-based row and column indices).
index_matrix <- function(N, M, f) {
  m <- outer(seq_len(N) - 1L, seq_len(M) - 1L, f) + 0
  dim(m) <- c(N, M)
  m
}

#' @rdname op_arange
#' @export
op_eye <- function(N, M = NULL, k = 0L, dtype = NULL) {
  call <- sys.call()
  N <- check_int(N, "N", min = 0, call = call)
  M <- check_int(M, "M", min = 0, null_ok = TRUE, call = call) %||% N
  k <- check_int(k, "k", call = call)
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  op_values_(index_matrix(N, M, function(i, j) j - i == k), dtype, call)
}

#' @rdname op_arange
#' @export
op_identity <- function(n, dtype = NULL) {
  call <- sys.call()
  n <- check_int(n, "n", min = 0, call = call)
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  op_values_(index_matrix(n, n, function(i, j) j == i), dtype, call)
}

#' @rdname op_arange
#' @export
op_tri <- function(N, M = NULL, k = 0L, dtype = NULL) {
  call <- sys.call()
  N <- check_int(N, "N", min = 0, call = call)
  M <- check_int(M, "M", min = 0, null_ok = TRUE, call = call) %||% N
  k <- check_int(k, "k", call = call)
  dtype <- check_op_dtype(dtype, call) %||% "float32"
  op_values_(index_matrix(N, M, function(i, j) j - i <= k), dtype, call)
}

#' Lower and upper triangles
#'
#' `op_tril()` keeps the values of `x` at and below diagonal `k` of its last
#' two axes (0 the main diagonal, positive above it) and zeroes the others;
#' `op_triu()` keeps those at and above it. The gradient flows to the kept
#' values only.
#'
#' @param x An array or traced tensor of rank 2 or more (a batched tensor:
#'   rank 3 or more).
#' @param k The diagonal.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- matrix(1:9, 3)
#' op_tril(x)
#' op_triu(x, k = 1)
#' @export
op_tril <- function(x, k = 0L) op_triangle_(x, k, lower = TRUE, sys.call())

#' @rdname op_tril
#' @export
op_triu <- function(x, k = 0L) op_triangle_(x, k, lower = FALSE, sys.call())

op_triangle_ <- function(x, k, lower, call) {
  k <- check_int(k, "k", call = call)
  op_run(list(x = x), function(a) {
    s <- a$x$shape
    r <- length(s)
    if (r < 2L || anyNA(s[c(r - 1L, r)])) {
      abort_value("{.arg x} must have two trailing axes of known size (rank 2 or more; a batched tensor rank 3 or more), not shape ({toString(s)}).",
                  call = call)
    }
    keep <- index_matrix(s[[r - 1L]], s[[r]], if (lower) function(i, j) j - i <= k else function(i, j) j - i >= k)
    mask <- trace_add_constant(a$x$ctx, keep != 0)
    zero <- trace_add_constant(a$x$ctx, if (identical(a$x$dtype, "bool")) FALSE else if (is_float_dtype(a$x$dtype)) 0 else 0L)
    trace_record(a$x$ctx, "where", list(mask, a$x, zero), dtype = a$x$dtype)
  }, call)
}

#' Shapes, ranks, sizes and dtypes of tensors
#'
#' - `op_shape()`: the shape of `x` as a [shape()], `NULL` standing for the
#'   unknown batch axis of a traced tensor or a symbolic tensor.
#' - `op_ndim()`: its rank; `op_size()`: its number of values (an error for
#'   a tensor whose batch axis is unknown).
#' - `op_dtype()`: its dtype: R doubles are `"float32"`, integers `"int32"`
#'   and logicals `"bool"`, as when they enter an op.
#' - `op_is_tensor()`: whether `x` is a tensor of a traced function (R arrays
#'   are not tensors).
#'
#' @param x An R array or vector, a traced tensor or a symbolic tensor.
#' @return A [shape()], an integer, a string or a logical.
#' @family ops
#' @examples
#' x <- array(0, c(2, 3, 4))
#' op_shape(x)
#' op_ndim(x)
#' op_size(x)
#' op_dtype(1:3)
#' op_shape(keras_input(c(3, 4)))
#' op_is_tensor(x)
#' @export
op_shape <- function(x) {
  dims <- op_dims_(x, sys.call())
  structure(lapply(dims, function(d) if (is.na(d)) NULL else d), class = "keras_shape")
}

# The dims of a tensor-like `x`, NA for an unknown (batch) axis.
op_dims_ <- function(x, call) {
  if (is_traced_tensor(x)) return(.subset2(x, "shape"))
  if (is_keras_tensor(x)) return(c(NA_integer_, x$shape))
  if (!(is.numeric(x) || is.logical(x))) {
    abort_value("{.arg x} must be an array, a traced tensor or a symbolic tensor, not {describe(x)}.", call = call)
  }
  r_value_shape(x)
}

#' @rdname op_shape
#' @export
op_ndim <- function(x) length(op_dims_(x, sys.call()))

#' @rdname op_shape
#' @export
op_size <- function(x) {
  call <- sys.call()
  d <- op_dims_(x, call)
  if (anyNA(d)) {
    if (is_traced_tensor(x)) {
      trace_abort(.subset2(x, "ctx"), "op_size() of a tensor with a batch axis reads the batch size, which is only known when the graph runs.")
    }
    abort_value("{.arg x} has an unknown batch axis: its size is not known.", call = call)
  }
  as.integer(prod(d))
}

#' @rdname op_shape
#' @export
op_dtype <- function(x) {
  call <- sys.call()
  if (is_traced_tensor(x)) return(.subset2(x, "dtype"))
  if (is_keras_tensor(x)) return(x$dtype)
  op_dims_(x, call)
  r_value_dtype(x)
}

#' @rdname op_shape
#' @export
op_is_tensor <- function(x) is_traced_tensor(x)

#' Converting to tensors and back
#'
#' - `op_convert_to_tensor()`: `x` as an op's operand sees it, in `dtype`
#'   (R doubles are float32 values, integers int32, logicals bool). On a
#'   traced tensor, a cast (or `x` itself).
#' - `op_convert_to_array()`, `op_convert_to_numpy()`: the value of `x` as an
#'   R array. Eager results are R arrays already; a traced tensor has no value
#'   until its graph runs, so that is an error naming the line.
#' - `op_copy()`: a copy of `x`.
#'
#' @param x An R array, vector or [shape()] (or a traced tensor).
#' @param dtype `NULL` or a dtype.
#' @param sparse,ragged Not supported: `NULL` or `FALSE` only.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_convert_to_tensor(c(1.5, 2.7), dtype = "int32")
#' op_convert_to_tensor(shape(2, 3))
#' op_convert_to_array(op_ones(c(2, 2)))
#' op_copy(1:3)
#' @export
op_convert_to_tensor <- function(x, dtype = NULL, sparse = NULL, ragged = NULL) {
  call <- sys.call()
  if (isTRUE(sparse) || isTRUE(ragged)) {
    abort_not_yet("Sparse and ragged tensors are not supported: use {.code sparse = NULL}, {.code ragged = NULL}.", call = call)
  }
  dtype <- check_op_dtype(dtype, call)
  if (inherits(x, "keras_shape")) {
    x <- as.integer.keras_shape(x)
    if (anyNA(x)) abort_value("{.arg x} is a shape with an unknown dimension: it has no value.", call = call)
  }
  if (!is.null(dtype) && is.double(x) && grepl("int", dtype, fixed = TRUE)) storage.mode(x) <- "integer"
  op_values_(x, dtype, call)
}

#' @rdname op_convert_to_tensor
#' @export
op_convert_to_array <- function(x) op_to_r_(x, sys.call())

#' @rdname op_convert_to_tensor
#' @export
op_convert_to_numpy <- function(x) op_to_r_(x, sys.call())

op_to_r_ <- function(x, call) {
  if (is_traced_tensor(x)) trace_read_error(x, paste0(call_name(call), "()"))
  if (is_keras_tensor(x)) {
    abort_value("{.arg x} is a symbolic tensor of the functional API: it has no value (call the model on data).", call = call)
  }
  check_op_array(x, "x", call)
  x
}

#' @rdname op_convert_to_tensor
#' @export
op_copy <- function(x) op_run(list(x = x), function(a) a$x, sys.call())
