# Element-wise op_* functions: the core's unary ops, the broadcasting binary
# ops and the comparisons (R/ops-core.R says how an op runs).

op_unary_ <- function(op, x, call, attrs = list(), dtype = NULL) {
  op_run(list(x = x), function(a) {
    d <- if (is.null(dtype)) a$x$dtype else dtype(a$x$dtype)
    trace_record(a$x$ctx, op, list(a$x), attrs, d)
  }, call)
}

op_binary_ <- function(op, x1, x2, call, dtype = NULL) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    d <- if (is.null(dtype)) promote_dtype(a$x1, a$x2) else dtype(promote_dtype(a$x1, a$x2))
    trace_record(a$x1$ctx, op, list(a$x1, a$x2), dtype = d)
  }, call)
}

#' Element-wise arithmetic
#'
#' keras3's element-wise arithmetic: `op_add()` (`x1 + x2`),
#' `op_subtract()`, `op_multiply()`, `op_divide()`, `op_power()` (`x1 ^ x2`),
#' `op_maximum()` and `op_minimum()`, under numpy's broadcasting (shapes
#' right-aligned, a dimension of 1 stretches). R's operators `+ - * / ^` on
#' traced tensors are these ops.
#'
#' Like every `op_*` function, on R arrays these compute at once (through
#' the core's CPU backend, in float32) and return R arrays; on the tensors of
#' a traced function (a custom loss, metric or layer) they record the op.
#' Broadcasting follows numpy's row-major shapes: an R matrix of dim
#' `c(2, 3)` broadcasts with a vector of length 3.
#'
#' @param x1,x2 Numeric arrays (or numbers), or traced tensors.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_add(matrix(1:6, 2), c(10, 20, 30))
#' op_divide(1, c(2, 4))
#' op_power(c(2, 3), 2)
#' op_maximum(c(-1, 0, 2), 0)
#' @export
op_add <- function(x1, x2) op_binary_("add", x1, x2, sys.call())

#' @rdname op_add
#' @export
op_subtract <- function(x1, x2) op_binary_("subtract", x1, x2, sys.call())

#' @rdname op_add
#' @export
op_multiply <- function(x1, x2) op_binary_("multiply", x1, x2, sys.call())

#' @rdname op_add
#' @export
op_divide <- function(x1, x2) op_binary_("divide", x1, x2, sys.call(), dtype = float_dtype)

#' @rdname op_add
#' @export
op_power <- function(x1, x2) op_binary_("power", x1, x2, sys.call())

#' @rdname op_add
#' @export
op_maximum <- function(x1, x2) op_binary_("maximum", x1, x2, sys.call())

#' @rdname op_add
#' @export
op_minimum <- function(x1, x2) op_binary_("minimum", x1, x2, sys.call())

#' Element-wise comparisons
#'
#' `op_equal()` (`x1 == x2`), `op_not_equal()`, `op_greater()`,
#' `op_greater_equal()`, `op_less()`, `op_less_equal()`, under broadcasting;
#' the result is logical (dtype `"bool"`; 1 and 0 inside a graph, which has no
#' gradient through them). R's comparison operators on traced tensors are
#' these ops.
#'
#' @inheritParams op_add
#' @return A logical R array (or a traced tensor of dtype `"bool"`).
#' @family ops
#' @examples
#' op_greater(c(1, 5, 3), 2)
#' op_equal(matrix(1:4, 2), 2)
#' @export
op_equal <- function(x1, x2) op_binary_("equal", x1, x2, sys.call(), dtype = function(d) "bool")

#' @rdname op_equal
#' @export
op_not_equal <- function(x1, x2) op_binary_("not_equal", x1, x2, sys.call(), dtype = function(d) "bool")

#' @rdname op_equal
#' @export
op_greater <- function(x1, x2) op_binary_("greater", x1, x2, sys.call(), dtype = function(d) "bool")

#' @rdname op_equal
#' @export
op_greater_equal <- function(x1, x2) {
  op_binary_("greater_equal", x1, x2, sys.call(), dtype = function(d) "bool")
}

#' @rdname op_equal
#' @export
op_less <- function(x1, x2) op_binary_("less", x1, x2, sys.call(), dtype = function(d) "bool")

#' @rdname op_equal
#' @export
op_less_equal <- function(x1, x2) op_binary_("less_equal", x1, x2, sys.call(), dtype = function(d) "bool")

#' Element-wise math
#'
#' `op_negative()` (`-x`), `op_abs()`, `op_sign()`, `op_square()`,
#' `op_sqrt()`, `op_exp()`, `op_log()`, `op_log1p()` (`log(1 + x)`, accurate
#' near 0) and `op_tanh()`, element by element. R's `-x`, `abs()`, `sign()`,
#' `sqrt()`, `exp()`, `log()`, `log1p()` and `tanh()` on traced tensors are
#' these ops.
#'
#' @param x A numeric array or a traced tensor.
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' op_square(c(-2, 3))
#' op_log1p(c(0, 1e-8, 1))
#' op_sign(c(-3, 0, 2))
#' @export
op_negative <- function(x) op_unary_("negative", x, sys.call())

#' @rdname op_negative
#' @export
op_abs <- function(x) op_unary_("abs", x, sys.call())

#' @rdname op_negative
#' @export
op_sign <- function(x) op_unary_("sign", x, sys.call())

#' @rdname op_negative
#' @export
op_square <- function(x) op_unary_("square", x, sys.call())

#' @rdname op_negative
#' @export
op_sqrt <- function(x) op_unary_("sqrt", x, sys.call(), dtype = float_dtype)

#' @rdname op_negative
#' @export
op_exp <- function(x) op_unary_("exp", x, sys.call(), dtype = float_dtype)

#' @rdname op_negative
#' @export
op_log <- function(x) op_unary_("log", x, sys.call(), dtype = float_dtype)

#' @rdname op_negative
#' @export
op_log1p <- function(x) op_unary_("log1p", x, sys.call(), dtype = float_dtype)

#' @rdname op_negative
#' @export
op_tanh <- function(x) op_unary_("tanh", x, sys.call(), dtype = float_dtype)
