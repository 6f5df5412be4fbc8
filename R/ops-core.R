# How every op_* function runs (docs/traced-graphs.md §2). An op is written
# once, as a function recording nodes on traced tensors. When one of its
# tensor arguments is a traced tensor, that runs in the tensor's tracing
# context and the op returns a traced tensor. Otherwise the op runs eagerly:
# its R arrays become the unbatched inputs of a small graph of its own, which
# the core's CPU backend evaluates (cpp_traced_eval()), so that eager and
# traced results are the same float32 arithmetic. Keras' 1-based axes of
# keras3 are translated here (as_op_axis()); the JSON's axes are 0-based axes
# of the whole tensor, batch axis included.

# Runs `body(operands)` on traced tensors, or eagerly. `operands`: the op's
# tensor arguments by name (NULL entries stay NULL); `call`: the user's call.
op_run <- function(operands, body, call) {
  # A Metric() class's variables stand for their values (R/metrics-custom-class.R).
  operands[] <- lapply(operands, unwrap_metric_variable)
  ctx <- NULL
  for (x in operands) {
    if (is_traced_tensor(x)) {
      ctx <- x$ctx
      break
    }
  }
  nms <- names(operands)
  if (!is.null(ctx)) {
    ts <- lapply(seq_along(operands), function(k) op_operand(ctx, operands[[k]], nms[[k]], call))
    names(ts) <- nms
    return(body(ts))
  }
  ctx <- new_trace_context(eager = TRUE, call = call)
  ts <- lapply(seq_along(operands), function(k) {
    x <- operands[[k]]
    if (is.null(x)) return(NULL)
    check_op_array(x, nms[[k]], call)
    ctx$input_values[[length(ctx$input_values) + 1L]] <- if (is.logical(x)) x + 0L else x
    trace_add_input(ctx, r_value_shape(x), r_value_dtype(x))
  })
  names(ts) <- nms
  op_eager_value(ctx, body(ts))
}

check_op_array <- function(x, arg, call) {
  if (is_keras_tensor(x)) {
    abort_not_yet(c("{.arg {arg}} is a symbolic tensor of the functional API: op_* functions on them are not supported yet.",
                    i = "Wrap them in {.fn layer_lambda} when it lands."), call = call)
  }
  if (!(is.numeric(x) || is.logical(x)) || is.object(x) && !is.factor(x)) {
    abort_value("{.arg {arg}} must be a numeric or logical array (or a traced tensor), not {describe(x)}.",
                call = call)
  }
  if (!is.double(x) && anyNA(x)) {
    abort_value("{.arg {arg}} must not contain NA (an integer or logical NA has no float32 value).", call = call)
  }
}

# A tensor operand in a tracing context: a traced tensor of that context,
# or an R value as a constant.
op_operand <- function(ctx, x, arg, call) {
  if (is.null(x)) return(NULL)
  if (is_traced_tensor(x)) {
    if (!identical(x$ctx, ctx)) {
      abort_value("{.arg {arg}} is a tensor of another traced function.", call = call)
    }
    return(x)
  }
  check_op_array(x, arg, call)
  trace_add_constant(ctx, x, arg, call)
}

# An R value as a constant of the context of traced tensor `like`.
op_const <- function(like, x) trace_add_constant(like$ctx, x)

# Evaluates an eager context's result `out` and returns it as R data:
# double arrays (logical for bool, integer for integer dtypes); rank 0 and 1
# as plain vectors.
op_eager_value <- function(ctx, out) {
  if (out$ref$kind == "constant") {
    out <- trace_record(ctx, "reshape", list(out), list(shape = I(out$shape)), out$dtype)
  }
  json <- trace_json(ctx, list(ref_json(out)))
  y <- with_core(cpp_traced_eval(json, ctx$input_values, list()), call = ctx$call)[[1]]
  if (length(out$shape) <= 1L) y <- as.vector(y)
  if (identical(out$dtype, "bool")) {
    y[] <- y != 0
    storage.mode(y) <- "logical"
  } else if (grepl("int", out$dtype, fixed = TRUE)) {
    storage.mode(y) <- "integer"
  }
  y
}

# keras3's axis argument (as_axis()): 1-based, negative from the end, 0 an
# error; NULL stays NULL. Returns 0-based / negative integers.
as_op_axis <- function(axis, arg = "axis", call = sys.call(-1), multiple = TRUE) {
  if (is.null(axis)) return(NULL)
  ok <- is.numeric(axis) && length(axis) >= 1L && !anyNA(axis) && all(axis == round(axis)) &&
    all(axis != 0) && (multiple || length(axis) == 1L)
  if (!ok) {
    abort_value("{.arg {arg}} must be {if (multiple) 'whole numbers' else 'a whole number'} (1-based; negative counts from the end), not {describe(axis)}.",
                call = call)
  }
  axis <- as.integer(axis)
  ifelse(axis > 0L, axis - 1L, axis)
}

# An axis for the JSON: one integer, or an array (I()) of several.
axis_json <- function(axis) if (is.null(axis) || length(axis) == 1L) axis else I(axis)

# A 0-based / negative axis as a 0-based one of rank `rank` (no range check:
# the core checks ranges).
norm_op_axis <- function(axis, rank) ifelse(axis < 0L, axis + rank, axis)

is_float_dtype <- function(d) d %in% c("float32", "float64", "float16", "bfloat16")

# Keras' result dtype of an arithmetic op: a float operand's dtype wins
# (float32 when floats differ), then int32; two bools stay bool.
promote_dtype <- function(...) {
  ds <- unlist(lapply(list(...), function(t) if (is.null(t)) NULL else t$dtype))
  fl <- unique(ds[is_float_dtype(ds)])
  if (length(fl) == 1L) return(fl)
  if (length(fl) > 1L) return("float32")
  if (all(ds == "bool")) return("bool")
  if (length(unique(ds)) == 1L) return(ds[[1]])
  "int32"
}

float_dtype <- function(d) if (is_float_dtype(d)) d else "float32"

#' Casting, gradients and conditional selection
#'
#' - `op_cast()`: `x` as `dtype` (`"float32"`, `"float64"`, `"float16"`,
#'   `"bfloat16"`, `"int8"`, `"int16"`, `"int32"`, `"int64"`, `"uint8"` or
#'   `"bool"`). Floats to integers truncate toward zero and saturate; to
#'   `"bool"` every non-zero value is `TRUE`. Every value is computed in
#'   float32: float16 and bfloat16 are rounded to that format.
#' - `op_stop_gradient()`: `variable` unchanged, with no gradient flowing back
#'   through it in a traced graph.
#' - `op_where()`: `x1` where `condition` is non-zero (`TRUE`), `x2`
#'   elsewhere, under broadcasting. The one-argument form (the indices of
#'   the non-zero elements) is not supported.
#'
#' Like every `op_*` function, on R arrays these compute at once (through
#' the core's CPU backend, in float32) and return R arrays; on the tensors of
#' a traced function (a custom loss, metric or layer) they record the op.
#'
#' @param x,variable A numeric array or a traced tensor.
#' @param dtype The dtype to cast to, a string.
#' @param condition,x1,x2 Arrays or traced tensors that broadcast together.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_cast(c(-1.7, 0.2, 2.9), "int32")
#' op_where(c(TRUE, FALSE, TRUE), c(1, 2, 3), 0)
#' op_stop_gradient(matrix(1:4, 2))
#' @export
op_cast <- function(x, dtype) {
  call <- sys.call()
  dtype <- check_choice(dtype, "dtype", c("float32", "float64", "float16", "bfloat16", "int8", "int16",
                                          "int32", "int64", "uint8", "bool"), call = call)
  op_run(list(x = x), function(a) {
    trace_record(a$x$ctx, "cast", list(a$x), list(dtype = dtype), dtype)
  }, call)
}

#' @rdname op_cast
#' @export
op_stop_gradient <- function(variable) {
  op_run(list(variable = variable), function(a) {
    trace_record(a$variable$ctx, "stop_gradient", list(a$variable), dtype = a$variable$dtype)
  }, sys.call())
}

#' @rdname op_cast
#' @export
op_where <- function(condition, x1 = NULL, x2 = NULL) {
  call <- sys.call()
  if (is.null(x1) || is.null(x2)) {
    abort_not_yet("{.fn op_where} needs both {.arg x1} and {.arg x2}: the one-argument form (the indices of the non-zero elements) is not supported.",
                  call = call)
  }
  op_run(list(condition = condition, x1 = x1, x2 = x2), function(a) {
    trace_record(a$x1$ctx, "where", list(a$condition, a$x1, a$x2), dtype = promote_dtype(a$x1, a$x2))
  }, call)
}

# Logical helpers of R's `!`, `&` and `|` on traced tensors (bool results).
op_logical_not_ <- function(x) {
  op_run(list(x = x), function(a) {
    z <- op_const(a$x, 0)
    trace_record(a$x$ctx, "equal", list(a$x, z), dtype = "bool")
  }, sys.call())
}

op_logical_and_ <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    b1 <- op_not_equal(a$x1, 0)
    b2 <- op_not_equal(a$x2, 0)
    trace_record(b1$ctx, "multiply", list(b1, b2), dtype = "bool")
  }, sys.call())
}

op_logical_or_ <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    b1 <- op_not_equal(a$x1, 0)
    b2 <- op_not_equal(a$x2, 0)
    trace_record(b1$ctx, "maximum", list(b1, b2), dtype = "bool")
  }, sys.call())
}

# keras.ops.slice(x, start_indices, shape) (0-based starts), for `[`.
op_slice_ <- function(x, start_indices, shape) {
  op_run(list(x = x), function(a) {
    batched <- tt_batched(a$x)
    sh <- as.list(as.integer(shape))
    if (batched) sh[1] <- list(NULL)
    trace_record(a$x$ctx, "slice", list(a$x),
                 list(start_indices = I(as.integer(start_indices)), shape = sh), a$x$dtype)
  }, sys.call())
}
