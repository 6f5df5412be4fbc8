# The traced tensor (docs/traced-graphs.md §2): what an R function written
# with op_* receives while it is traced. It stands for a value of the graph
# (an input, a weight, a constant or a node's result) and holds its shape
# (per sample: the batch axis first, NA, when the value is batched), its
# dtype and the tracing context. It has no value: R code that reads one
# (as.numeric(), `if`, length() of the batch axis) is a mirrored_trace_error.

traced_tensor <- function(ctx, kind, index, shape, dtype, logits = NULL) {
  structure(list(ref = list(kind = kind, index = as.integer(index)), shape = as.integer(shape),
                 dtype = dtype, ctx = ctx, logits = logits),
            class = "mirrored_traced_tensor")
}

is_traced_tensor <- function(x) inherits(x, "mirrored_traced_tensor")

tt_batched <- function(t) length(t$shape) > 0L && is.na(t$shape[[1]])

#' @export
format.mirrored_traced_tensor <- function(x, ...) {
  d <- vapply(x$shape, function(v) if (is.na(v)) "None" else as.character(v), "")
  paste0("<KerasTensor shape=(", if (length(d) == 1L) paste0(d, ",") else paste(d, collapse = ", "),
         "), dtype=", x$dtype, ">")
}

#' @export
print.mirrored_traced_tensor <- function(x, ...) {
  cat(format(x), "\n", sep = "")
  invisible(x)
}

#' @export
dim.mirrored_traced_tensor <- function(x) .subset2(x, "shape")

#' @export
length.mirrored_traced_tensor <- function(x) {
  if (tt_batched(x)) trace_abort(.subset2(x, "ctx"), "length() of a tensor with a batch axis reads the batch size, which is only known when the graph runs.")
  as.integer(prod(.subset2(x, "shape")))
}

# Reading a traced tensor's value: errors naming the user's line.
trace_read_error <- function(x, what) {
  trace_abort(.subset2(x, "ctx"), paste0(what, " reads the value of a traced tensor, which is only known when the graph runs."))
}

#' @export
as.double.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.numeric()")
#' @export
as.integer.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.integer()")
#' @export
as.logical.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.logical()")
#' @export
as.character.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.character()")
#' @export
as.vector.mirrored_traced_tensor <- function(x, mode = "any") trace_read_error(x, "as.vector()")
#' @export
as.array.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.array()")
#' @export
as.matrix.mirrored_traced_tensor <- function(x, ...) trace_read_error(x, "as.matrix()")

# R's operators on traced tensors: the graph's binary and unary ops (R
# numbers mixed in become constants). `%%`, `%/%` and `xor` have no op.
#' @export
Ops.mirrored_traced_tensor <- function(e1, e2) {
  if (missing(e2)) {
    switch(.Generic,
           "-" = return(op_negative(e1)),
           "+" = return(e1),
           "!" = return(op_logical_not_(e1)))
  } else {
    f <- switch(.Generic,
                "+" = op_add, "-" = op_subtract, "*" = op_multiply, "/" = op_divide,
                "^" = op_power, "==" = op_equal, "!=" = op_not_equal, "<" = op_less,
                "<=" = op_less_equal, ">" = op_greater, ">=" = op_greater_equal,
                "&" = op_logical_and_, "|" = op_logical_or_, NULL)
    if (!is.null(f)) return(f(e1, e2))
  }
  t <- if (is_traced_tensor(e1)) e1 else e2
  trace_abort(.subset2(t, "ctx"), paste0("`", .Generic, "` is not an op on traced tensors."), generic = .Generic)
}

# The Math group: those with an op; the rest are trace errors.
#' @export
Math.mirrored_traced_tensor <- function(x, ...) {
  f <- switch(.Generic, abs = op_abs, sign = op_sign, sqrt = op_sqrt, exp = op_exp,
              log1p = op_log1p, tanh = op_tanh, NULL)
  if (!is.null(f)) return(f(x))
  if (identical(.Generic, "log")) {
    base <- list(...)$base
    return(if (is.null(base)) op_log(x) else op_divide(op_log(x), log(base)))
  }
  trace_abort(.subset2(x, "ctx"),
              paste0("`", .Generic, "()` is not an op: only op_* functions, R's arithmetic and comparison operators and `[` work on traced tensors."),
              generic = .Generic)
}

# sum(), max(), min() over all axes (the batch axis too: a value of the
# replica's rows); the others read values.
#' @export
Summary.mirrored_traced_tensor <- function(..., na.rm = FALSE) {
  args <- list(...)
  t <- Filter(is_traced_tensor, args)[[1]]
  if (length(args) != 1L) {
    trace_abort(.subset2(t, "ctx"), paste0("`", .Generic, "()` of several values is not an op (use op_", .Generic, "() on one tensor)."))
  }
  switch(.Generic,
         sum = op_sum(args[[1]]), max = op_max(args[[1]]), min = op_min(args[[1]]),
         trace_abort(.subset2(t, "ctx"), paste0("`", .Generic, "()` is not an op on traced tensors.")))
}

#' @export
mean.mirrored_traced_tensor <- function(x, ...) {
  if (length(list(...))) trace_abort(.subset2(x, "ctx"), "mean() of a traced tensor takes no further arguments (use op_mean()).")
  op_mean(x)
}

# `[`: keras3's 1-based R semantics for a scalar index (drops the axis) or a
# contiguous increasing range on each non-batch axis; the batch axis must be
# left empty. A slice of the box, then a squeeze of the scalar-indexed axes.
#' @export
`[.mirrored_traced_tensor` <- function(x, ...) {
  ctx <- .subset2(x, "ctx")
  shape <- .subset2(x, "shape")
  rank <- length(shape)
  # The indices as written: an empty one (x[, 2]) is the whole axis.
  exprs <- as.list(sys.call())[-c(1L, 2L)]
  exprs <- exprs[names(exprs) %||% rep("", length(exprs)) != "drop"]
  if (length(exprs) != rank) {
    trace_abort(ctx, paste0("`[` on a tensor of rank ", rank, " takes ", rank, " indices (one per axis), got ", length(exprs), "."))
  }
  env <- parent.frame()
  idx <- vector("list", rank)
  for (k in seq_len(rank)) {
    if (!identical(exprs[[k]], quote(expr = ))) idx[k] <- list(eval(exprs[[k]], env))
  }
  start <- integer(rank)
  size <- shape
  drop <- integer()
  for (k in seq_len(rank)) {
    i <- idx[[k]]
    if (is.null(i)) next
    if (k == 1L && is.na(shape[[1]])) {
      trace_abort(ctx, "`[` must leave the batch axis (axis 1) empty: the rows are only known when the graph runs.")
    }
    if (!is.numeric(i) || length(i) == 0L || anyNA(i) || any(i != round(i))) {
      trace_abort(ctx, paste0("`[` index ", k, " must be whole numbers, not ", describe(i), "."))
    }
    i <- as.integer(i)
    i[i < 0L] <- shape[[k]] + i[i < 0L] + 1L
    if (any(i < 1L | i > shape[[k]])) {
      trace_abort(ctx, paste0("`[` index ", k, " is out of range for an axis of size ", shape[[k]], "."), kind = "value")
    }
    if (length(i) > 1L && !identical(i, seq.int(i[[1]], length.out = length(i)))) {
      trace_abort(ctx, paste0("`[` index ", k, " must be one number or a contiguous increasing range (a:b)."))
    }
    start[[k]] <- i[[1]] - 1L
    size[[k]] <- length(i)
    if (length(i) == 1L) drop <- c(drop, k)
  }
  if (all(start == 0L) && identical(size, shape) && !length(drop)) return(x)
  y <- op_slice_(x, start, size)
  for (k in rev(drop)) y <- op_squeeze(y, axis = k)
  y
}
