# Shape manipulation composed from the core's index and copy ops (keras.ops'
# numpy family; R/ops-core.R says how an op runs): gathers along one axis
# with a constant index vector (take_along_axis) for flips, rolls, repeats and
# tiles, transposes for axis moves, slices for splits, where-of-TRUE for
# broadcasts. Every one is exact and has the gradient of its copy. None moves,
# gathers or splits the batch axis of a batched tensor.

# `axis` (0-based / negative) of a rank-`rank` tensor, checked, 0-based.
tt_axis <- function(axis, rank, call, arg = "axis") {
  if (any(axis < -rank | axis >= rank)) {
    abort_value("{.arg {arg}} is out of range for a tensor of rank {rank}.", call = call)
  }
  norm_op_axis(axis, rank)
}

# The batch axis (0-based 0) of a batched tensor must not be in `axes`.
tt_check_not_batch <- function(t, axes, call, what) {
  if (tt_batched(t) && any(axes == 0L)) {
    abort_value("{what} the batch axis (axis 1) of a batched tensor: its rows are only known when the graph runs.",
                call = call)
  }
}

# Values of `t` at 0-based positions `idx` along 0-based `axis`.
tt_gather <- function(t, idx, axis) {
  r <- length(t$shape)
  sh <- rep(1L, r)
  sh[[axis + 1L]] <- length(idx)
  ind <- trace_add_constant(t$ctx, array(as.integer(idx), sh))
  trace_record(t$ctx, "take_along_axis", list(t, ind), list(axis = axis), t$dtype)
}

# A flattened unbatched tensor (row-major).
tt_flatten <- function(t, call, why = "{.arg axis} = NULL would flatten") {
  if (tt_batched(t)) {
    abort_value(paste(why, "the batch axis of a batched tensor; give an axis."), call = call)
  }
  trace_record(t$ctx, "reshape", list(t), list(shape = I(-1L)), t$dtype)
}

#' Reordering values: flip, roll, repeat, tile
#'
#' - `op_flip()`: the values of `x` in reverse order along `axis` (every
#'   axis when `NULL`).
#' - `op_roll()`: the values shifted by `shift` positions along `axis`,
#'   those past the end coming back at the start (of the flattened values
#'   when `axis = NULL`, the shape kept).
#' - `op_repeat()`: each value repeated `repeats` times along `axis`
#'   (flattened first when `NULL`); `repeats` may give one count per value.
#' - `op_tile()`: `x` repeated `repeats` times along each axis (`repeats`
#'   shorter than the rank applies to the last axes; longer adds leading
#'   axes).
#'
#' Axes are 1-based, negative counting from the end. The batch axis of a
#' batched tensor cannot be flipped, rolled, repeated or tiled.
#'
#' @param x An array or a traced tensor.
#' @param axis `NULL` or axes (one for `op_repeat()`).
#' @param shift Whole numbers: one per axis of `axis` (or one for all).
#' @param repeats Whole numbers >= 0.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- matrix(1:6, 2)
#' op_flip(x, axis = 2)
#' op_roll(1:5, 2)
#' op_repeat(c(1, 2), 3)
#' op_repeat(x, c(1, 2), axis = 1)
#' op_tile(c(1, 2), c(2, 2))
#' @export
op_flip <- function(x, axis = NULL) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call)
  op_run(list(x = x), function(a) {
    r <- length(a$x$shape)
    ax <- if (is.null(axis)) seq_len(r) - 1L else tt_axis(axis, r, call)
    tt_check_not_batch(a$x, ax, call, "{.fn op_flip} cannot flip")
    y <- a$x
    for (k in unique(ax)) y <- tt_gather(y, rev(seq_len(y$shape[[k + 1L]]) - 1L), k)
    y
  }, call)
}

#' @rdname op_flip
#' @export
op_roll <- function(x, shift, axis = NULL) {
  call <- sys.call()
  if (!is.numeric(shift) || !length(shift) || anyNA(shift) || any(shift != round(shift))) {
    abort_value("{.arg shift} must be whole numbers, not {describe(shift)}.", call = call)
  }
  axis <- as_op_axis(axis, call = call)
  if (!is.null(axis) && length(shift) != length(axis) && length(shift) != 1L && length(axis) != 1L) {
    abort_value("{.arg shift} and {.arg axis} must have the same length.", call = call)
  }
  if (is.null(axis) && length(shift) != 1L) abort_value("{.arg shift} must be one number when {.arg axis} is NULL.", call = call)
  op_run(list(x = x), function(a) {
    roll1 <- function(y, s, k) {
      n <- y$shape[[k + 1L]]
      tt_gather(y, (seq_len(n) - 1L - s) %% n, k)
    }
    if (is.null(axis)) {
      flat <- tt_flatten(a$x, call)
      y <- roll1(flat, shift, 0L)
      return(trace_record(y$ctx, "reshape", list(y), list(shape = I(as.integer(a$x$shape))), y$dtype))
    }
    r <- length(a$x$shape)
    ax <- tt_axis(axis, r, call)
    tt_check_not_batch(a$x, ax, call, "{.fn op_roll} cannot roll")
    n <- max(length(ax), length(shift))
    ax <- rep_len(ax, n)
    shift <- rep_len(shift, n)
    y <- a$x
    for (k in unique(ax)) y <- roll1(y, sum(shift[ax == k]), k)
    y
  }, call)
}

#' @rdname op_flip
#' @export
op_repeat <- function(x, repeats, axis = NULL) {
  call <- sys.call()
  if (!is.numeric(repeats) || !length(repeats) || anyNA(repeats) || any(repeats != round(repeats)) || any(repeats < 0)) {
    abort_value("{.arg repeats} must be whole numbers >= 0, not {describe(repeats)}.", call = call)
  }
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run(list(x = x), function(a) {
    y <- a$x
    if (is.null(axis)) {
      y <- tt_flatten(y, call)
      ax <- 0L
    } else {
      ax <- tt_axis(axis, length(y$shape), call)
      tt_check_not_batch(y, ax, call, "{.fn op_repeat} cannot repeat along")
    }
    n <- y$shape[[ax + 1L]]
    if (length(repeats) != 1L && length(repeats) != n) {
      abort_value("{.arg repeats} must be one number or one per value along {.arg axis} ({n}), not {length(repeats)}.",
                  call = call)
    }
    tt_gather(y, rep(seq_len(n) - 1L, rep_len(as.integer(repeats), n)), ax)
  }, call)
}

#' @rdname op_flip
#' @export
op_tile <- function(x, repeats) {
  call <- sys.call()
  if (!is.numeric(repeats) || !length(repeats) || anyNA(repeats) || any(repeats != round(repeats)) || any(repeats < 0)) {
    abort_value("{.arg repeats} must be whole numbers >= 0, not {describe(repeats)}.", call = call)
  }
  repeats <- as.integer(repeats)
  op_run(list(x = x), function(a) {
    y <- a$x
    r <- length(y$shape)
    if (length(repeats) > r) {
      if (tt_batched(y)) abort_value("{.arg repeats} would add axes before the batch axis of a batched tensor.", call = call)
      y <- trace_record(y$ctx, "reshape", list(y), list(shape = I(c(rep(1L, length(repeats) - r), y$shape))), y$dtype)
      r <- length(repeats)
    }
    reps <- c(rep(1L, r - length(repeats)), repeats)
    tt_check_not_batch(y, which(reps != 1L) - 1L, call, "{.fn op_tile} cannot tile")
    for (k in which(reps != 1L)) {
      n <- y$shape[[k]]
      y <- tt_gather(y, rep(seq_len(n) - 1L, times = reps[[k]]), k - 1L)
    }
    y
  }, call)
}

#' Moving axes, broadcasting, flattening
#'
#' - `op_broadcast_to()`: `x` broadcast to `shape` (numpy's rules); for a
#'   batched tensor `shape` starts with `NA` (the batch axis).
#' - `op_moveaxis()`: the axes `source` moved to the positions `destination`,
#'   the others keeping their order.
#' - `op_swapaxes()`: axes `axis1` and `axis2` exchanged.
#' - `op_ravel()`: the values flattened to one axis, in row-major order.
#'
#' @param x An array or a traced tensor.
#' @param shape The target dimensions (a vector or a [shape()]).
#' @param source,destination Axes (1-based), as many of each.
#' @param axis1,axis2 Two axes (1-based).
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_broadcast_to(c(1, 2, 3), c(2, 3))
#' dim(op_moveaxis(array(0, c(2, 3, 4)), 1, 3))
#' dim(op_swapaxes(array(0, c(2, 3, 4)), 1, 2))
#' op_ravel(matrix(1:6, 2))
#' @export
op_broadcast_to <- function(x, shape) {
  call <- sys.call()
  target <- tryCatch(as.integer(shape_fn_(shape)), error = function(e) NULL)
  if (is.null(target) || any(target[-1] < 0L | is.na(target[-1])) || isTRUE(target[1] < 0L)) {
    abort_value("{.arg shape} must be whole numbers >= 0 (NA first for a batch axis), not {describe(shape)}.", call = call)
  }
  op_run(list(x = x), function(a) tt_broadcast(a$x, target, call), call)
}

# numpy's moveaxis permutation (0-based).
moveaxis_perm <- function(source, destination, rank) {
  order <- setdiff(seq_len(rank) - 1L, source)
  o <- order(destination)
  for (k in o) order <- append(order, source[[k]], after = destination[[k]])
  order
}

#' @rdname op_broadcast_to
#' @export
op_moveaxis <- function(x, source, destination) {
  call <- sys.call()
  source <- as_op_axis(source, "source", call = call)
  destination <- as_op_axis(destination, "destination", call = call)
  if (is.null(source) || is.null(destination) || length(source) != length(destination)) {
    abort_value("{.arg source} and {.arg destination} must be axes, as many of each.", call = call)
  }
  op_run(list(x = x), function(a) {
    r <- length(a$x$shape)
    s <- tt_axis(source, r, call, "source")
    d <- tt_axis(destination, r, call, "destination")
    if (anyDuplicated(s) || anyDuplicated(d)) abort_value("{.arg source} and {.arg destination} must not repeat an axis.", call = call)
    perm <- moveaxis_perm(s, d, r)
    if (tt_batched(a$x) && perm[[1]] != 0L) tt_check_not_batch(a$x, 0L, call, "{.fn op_moveaxis} cannot move")
    trace_record(a$x$ctx, "transpose", list(a$x), list(axes = I(as.integer(perm))), a$x$dtype)
  }, call)
}

#' @rdname op_broadcast_to
#' @export
op_swapaxes <- function(x, axis1, axis2) {
  call <- sys.call()
  axis1 <- as_op_axis(axis1, "axis1", call = call, multiple = FALSE)
  axis2 <- as_op_axis(axis2, "axis2", call = call, multiple = FALSE)
  if (is.null(axis1) || is.null(axis2)) abort_value("{.arg axis1} and {.arg axis2} are required.", call = call)
  op_run(list(x = x), function(a) {
    r <- length(a$x$shape)
    i <- tt_axis(axis1, r, call, "axis1")
    j <- tt_axis(axis2, r, call, "axis2")
    perm <- seq_len(r) - 1L
    perm[c(i + 1L, j + 1L)] <- perm[c(j + 1L, i + 1L)]
    if (i != j) tt_check_not_batch(a$x, c(i, j), call, "{.fn op_swapaxes} cannot move")
    trace_record(a$x$ctx, "transpose", list(a$x), list(axes = I(as.integer(perm))), a$x$dtype)
  }, call)
}

#' @rdname op_broadcast_to
#' @export
op_ravel <- function(x) {
  call <- sys.call()
  op_run(list(x = x), function(a) {
    if (tt_batched(a$x)) abort_value("{.fn op_ravel} would flatten the batch axis of a batched tensor (use {.code op_reshape(x, c(NA, -1))}).", call = call)
    trace_record(a$x$ctx, "reshape", list(a$x), list(shape = I(-1L)), a$x$dtype)
  }, call)
}

#' Stacking and splitting
#'
#' - `op_hstack()`: the tensors joined along their second axis (1-D ones end
#'   to end); `op_vstack()` along their first axis (Keras' TensorFlow
#'   backend: 1-D ones end to end too).
#' - `op_split()`: `x` cut along `axis` into `indices_or_sections` equal
#'   parts, or, for a vector, before each of the (1-based) positions it
#'   lists; a list.
#' - `op_unstack()`: the slices of `x` along `axis`, that axis dropped; a
#'   list.
#'
#' @param xs A list of arrays or traced tensors (more may follow in `...`).
#' @param ... More tensors.
#' @param x An array or a traced tensor.
#' @param indices_or_sections A number of equal parts, or a vector of
#'   1-based positions where new parts start.
#' @param num `NULL` or the size of `axis` (checked).
#' @param axis One axis (1-based).
#' @return An R array (or a traced tensor); a list of them for
#'   `op_split()` and `op_unstack()`.
#' @family ops
#' @examples
#' op_hstack(list(c(1, 2), c(3, 4)))
#' op_vstack(list(matrix(1:4, 2), matrix(5:8, 2)))
#' op_split(1:6, 3)
#' op_split(1:6, c(3, 5))
#' op_unstack(matrix(1:6, 2))
#' @export
op_hstack <- function(xs, ...) op_stack_join_(xs, list(...), horizontal = TRUE, sys.call())

#' @rdname op_hstack
#' @export
op_vstack <- function(xs, ...) op_stack_join_(xs, list(...), horizontal = FALSE, sys.call())

op_stack_join_ <- function(xs, more, horizontal, call) {
  if (!is.list(xs) || is_traced_tensor(xs)) xs <- list(xs)
  xs <- c(xs, more)
  op_run(list_operands(xs, "xs", call), function(a) {
    a <- unname(a)
    ax <- if (horizontal && length(a[[1]]$shape) != 1L) 1L else 0L
    trace_record(a[[1]]$ctx, "concatenate", a, list(axis = ax), do.call(promote_dtype, a))
  }, call)
}

# Slices of `t` along 0-based `axis` from 0-based `starts` with `sizes`.
tt_slices <- function(t, axis, starts, sizes) {
  lapply(seq_along(starts), function(k) {
    st <- integer(length(t$shape))
    st[[axis + 1L]] <- starts[[k]]
    sh <- as.list(t$shape)
    sh[[axis + 1L]] <- as.integer(sizes[[k]])
    if (tt_batched(t)) sh[1] <- list(NULL)
    trace_record(t$ctx, "slice", list(t), list(start_indices = I(as.integer(st)), shape = sh), t$dtype)
  })
}

# An op whose result is a list of tensors: eagerly, one evaluation per
# element; traced, the list.
op_run_list_ <- function(operands, body, call) {
  if (any(vapply(operands, is_traced_tensor, logical(1)))) return(op_run(operands, body, call))
  n <- NULL
  parts <- op_run(operands, function(a) {
    out <- body(a)
    n <<- length(out)
    out[[1]]
  }, call)
  c(list(parts), lapply(seq_len(n - 1L) + 1L, function(k) op_run(operands, function(a) body(a)[[k]], call)))
}

#' @rdname op_hstack
#' @export
op_split <- function(x, indices_or_sections, axis = 1L) {
  call <- sys.call()
  ios <- indices_or_sections
  if (!is.numeric(ios) || !length(ios) || anyNA(ios) || any(ios != round(ios))) {
    abort_value("{.arg indices_or_sections} must be a whole number or a vector of positions, not {describe(ios)}.", call = call)
  }
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run_list_(list(x = x), function(a) {
    r <- length(a$x$shape)
    ax <- tt_axis(axis, r, call)
    tt_check_not_batch(a$x, ax, call, "{.fn op_split} cannot split")
    n <- a$x$shape[[ax + 1L]]
    if (length(ios) == 1L && !is.array(ios)) {
      if (ios < 1 || n %% ios != 0) {
        abort_value("{.arg indices_or_sections} = {ios} does not divide the axis of size {n} into equal parts.", call = call)
      }
      size <- n %/% ios
      return(tt_slices(a$x, ax, (seq_len(ios) - 1L) * size, rep(size, ios)))
    }
    cuts <- as.integer(ios)
    cuts[cuts > 0L] <- cuts[cuts > 0L] - 1L  # keras3's 1-based positions
    cuts[cuts < 0L] <- cuts[cuts < 0L] + n
    cuts <- pmin(pmax(cuts, 0L), n)
    starts <- c(0L, cuts)
    ends <- pmax(c(cuts, n), starts)
    tt_slices(a$x, ax, starts, ends - starts)
  }, call)
}

#' @rdname op_hstack
#' @export
op_unstack <- function(x, num = NULL, axis = 1L) {
  call <- sys.call()
  num <- check_int(num, "num", min = 0, null_ok = TRUE, call = call)
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_run_list_(list(x = x), function(a) {
    r <- length(a$x$shape)
    ax <- tt_axis(axis, r, call)
    tt_check_not_batch(a$x, ax, call, "{.fn op_unstack} cannot unstack")
    n <- a$x$shape[[ax + 1L]]
    if (!is.null(num) && num != n) abort_value("{.arg num} = {num} is not the size of {.arg axis} ({n}).", call = call)
    lapply(tt_slices(a$x, ax, seq_len(n) - 1L, rep(1L, n)), function(s) {
      trace_record(s$ctx, "squeeze", list(s), list(axis = ax), s$dtype)
    })
  }, call)
}

#' Diagonals and traces
#'
#' - `op_diagonal()`: the values on diagonal `offset` of the 2-D slices
#'   spanned by axes `axis1` and `axis2` (0 the main diagonal, positive
#'   above it), as a new last axis.
#' - `op_trace()`: their sum.
#'
#' @param x An array or a traced tensor of rank 2 or more.
#' @param offset The diagonal.
#' @param axis1,axis2 The two axes (1-based), never the batch axis.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- matrix(1:9, 3)
#' op_diagonal(x)
#' op_diagonal(x, offset = 1)
#' op_trace(x)
#' @export
op_diagonal <- function(x, offset = 0L, axis1 = 1L, axis2 = 2L) {
  call <- sys.call()
  offset <- check_int(offset, "offset", call = call)
  axis1 <- as_op_axis(axis1, "axis1", call = call, multiple = FALSE)
  axis2 <- as_op_axis(axis2, "axis2", call = call, multiple = FALSE)
  op_run(list(x = x), function(a) tt_diagonal(a$x, offset, axis1, axis2, call), call)
}

# The diagonal as a new last axis: the two axes moved last, flattened, and
# the diagonal's positions gathered.
tt_diagonal <- function(x, offset, axis1, axis2, call) {
  r <- length(x$shape)
  if (r < 2L) abort_value("{.arg x} must have rank 2 or more.", call = call)
  i <- tt_axis(axis1, r, call, "axis1")
  j <- tt_axis(axis2, r, call, "axis2")
  if (i == j) abort_value("{.arg axis1} and {.arg axis2} must be different axes.", call = call)
  tt_check_not_batch(x, c(i, j), call, "{.fn op_diagonal} cannot take")
  ctx <- x$ctx
  n <- x$shape[[i + 1L]]
  m <- x$shape[[j + 1L]]
  rows <- if (offset >= 0L) seq_len(max(0L, min(n, m - offset))) - 1L else seq_len(max(0L, min(n + offset, m))) - 1L - offset
  if (!length(rows)) abort_value("{.arg offset} = {offset} leaves no diagonal in a {n} x {m} slice.", call = call)
  perm <- moveaxis_perm(c(i, j), c(r - 2L, r - 1L), r)
  y <- x
  if (!identical(perm, seq_len(r) - 1L)) {
    y <- trace_record(ctx, "transpose", list(y), list(axes = I(as.integer(perm))), y$dtype)
  }
  lead <- y$shape[seq_len(r - 2L)]
  newshape <- c(lead, n * m)
  if (tt_batched(y)) newshape <- newshape[-1L]
  y <- trace_record(ctx, "reshape", list(y), list(shape = I(as.integer(newshape))), y$dtype)
  tt_gather(y, rows * m + rows + offset, r - 2L)
}

#' @rdname op_diagonal
#' @export
op_trace <- function(x, offset = 0L, axis1 = 1L, axis2 = 2L) {
  call <- sys.call()
  offset <- check_int(offset, "offset", call = call)
  axis1 <- as_op_axis(axis1, "axis1", call = call, multiple = FALSE)
  axis2 <- as_op_axis(axis2, "axis2", call = call, multiple = FALSE)
  op_run(list(x = x), function(a) {
    d <- tt_diagonal(a$x, offset, axis1, axis2, call)
    dt <- if (a$x$dtype %in% c("bool", "int8", "int16")) "int32" else a$x$dtype
    trace_record(d$ctx, "sum", list(d), list(axis = -1L, keepdims = FALSE), dt)
  }, call)
}
