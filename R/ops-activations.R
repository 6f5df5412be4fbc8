# Element-wise activations and math composed from the core's element-wise
# ops (R/ops-core.R says how an op runs), in the forms of Keras 3's
# TensorFlow backend (keras/src/backend/tensorflow/nn.py and numpy.py), so
# that values and gradients are TensorFlow's. A branch that would overflow
# where it is not selected (exp of a large x) is fed a safe value through a
# second `where`, so no Inf * 0 = NaN reaches the gradient.

# TensorFlow's softplus threshold for float32: log(epsilon) + 2.
softplus_threshold <- log(2^-23) + 2

# The composed forms, on traced tensors of one context (the public op_*
# functions record on them).
tt_expm1 <- function(x) {
  # exp(x) - 1 loses the digits of small x: there 2 t / (1 - t) with
  # t = tanh(x / 2), which is exact to a few ulps.
  small <- op_less(op_abs(x), 0.5)
  t <- op_tanh(op_divide(op_where(small, x, 0), 2))
  near <- op_divide(op_multiply(2, t), op_subtract(1, t))
  far <- op_subtract(op_exp(op_where(small, 0, x)), 1)
  op_where(small, near, far)
}

tt_softplus <- function(x) {
  large <- op_greater(x, -softplus_threshold)
  tiny <- op_less(x, softplus_threshold)
  e <- op_exp(op_where(large, 0, x))
  op_where(large, x, op_where(tiny, e, op_log1p(e)))
}

# tf.nn.elu and tf.nn.selu compute exp(x) - 1 (not expm1) for x < 0;
# Keras' elu with alpha != 1 selects alpha * elu(x) where x <= 0, selu's
# kernel scale * x where x >= 0 (their gradients at 0).
tt_elu <- function(x, alpha = 1) {
  pos <- op_greater(x, 0)
  neg <- op_subtract(op_exp(op_where(pos, 0, x)), 1)
  if (alpha != 1) neg <- op_multiply(neg, alpha)
  op_where(pos, x, neg)
}

selu_alpha <- 1.6732632423543772848170429916717
selu_scale <- 1.0507009873554804934193349852946

tt_selu <- function(x) {
  neg <- op_less(x, 0)
  e <- op_subtract(op_exp(op_where(neg, x, 0)), 1)
  op_where(neg, op_multiply(e, selu_alpha * selu_scale), op_multiply(x, selu_scale))
}

tt_relu6 <- function(x) {
  op_where(op_greater_equal(x, 6), 6, op_relu(x))
}

tt_hard_sigmoid <- function(x) op_divide(tt_relu6(op_add(x, 3)), 6)

tt_isnan <- function(x) op_not_equal(x, x)

# Element-wise op of the composed form `f` (on a float tensor).
op_composed_ <- function(x, f, call) {
  op_run(list(x = x), function(a) {
    v <- a$x
    if (!is_float_dtype(v$dtype)) v <- tt_as_dtype(v, "float32")
    f(v)
  }, call)
}

#' Activations composed from element-wise ops
#'
#' keras3's activation ops, with the formulas (and so the values and
#' gradients) of Keras 3 on TensorFlow:
#' - `op_softplus()`: `log(1 + exp(x))`, `x` above 13.94 and `exp(x)` below
#'   -13.94 (TensorFlow's thresholds); `op_log_sigmoid()`: `-softplus(-x)`.
#' - `op_softsign()`: `x / (1 + |x|)`.
#' - `op_relu6()`: `min(max(x, 0), 6)`; `op_hard_sigmoid()`:
#'   `relu6(x + 3) / 6`; `op_hard_silu()` (`op_hard_swish()`): `x *
#'   hard_sigmoid(x)`.
#' - `op_elu()`: `x` for `x > 0`, `alpha * (exp(x) - 1)` otherwise;
#'   `op_selu()`: `scale * elu(x, alpha)` with `alpha = 1.6732632` and
#'   `scale = 1.0507010`; `op_celu()`: `max(x, 0) + alpha * (exp(min(x, 0) /
#'   alpha) - 1)`.
#' - `op_leaky_relu()`: `x` for `x > 0`, `negative_slope * x` otherwise.
#' - `op_hard_tanh()`: `x` clipped to `[-1, 1]`; `op_tanh_shrink()`: `x -
#'   tanh(x)`.
#' - `op_soft_shrink()`: `x - threshold` above `threshold`, `x + threshold`
#'   below `-threshold`, 0 between; `op_hard_shrink()`: `x` where `|x| >
#'   threshold`, 0 elsewhere; `op_threshold()`: `x` where `x > threshold`,
#'   `default_value` elsewhere.
#' - `op_squareplus()`: `(x + sqrt(x^2 + b)) / 2`; `op_sparse_plus()`: 0 for
#'   `x <= -1`, `(x + 1)^2 / 4` for `-1 < x < 1`, `x` for `x >= 1`.
#' - `op_glu()`: the first half `a` of `x` along `axis` times
#'   `sigmoid(b)` of the second half.
#'
#' Like every `op_*` function, on R arrays these compute at once in float32;
#' on the tensors of a traced function (a custom loss, metric or layer) they
#' record the element-wise ops of their formula, so the gradient flows.
#'
#' @param x A numeric array or a traced tensor.
#' @param alpha,negative_slope,threshold,default_value,b Numbers.
#' @param axis One axis of even size (1-based, negative from the end).
#' @return An R array (or a traced tensor).
#' @family ops
#' @examples
#' x <- c(-3, -0.5, 0, 0.5, 3)
#' op_softplus(x)
#' op_elu(x)
#' op_leaky_relu(x)
#' op_hard_sigmoid(x)
#' op_soft_shrink(x)
#' op_glu(c(1, 2, 0, 1))
#' @export
op_softplus <- function(x) op_composed_(x, tt_softplus, sys.call())

#' @rdname op_softplus
#' @export
op_log_sigmoid <- function(x) op_composed_(x, function(v) op_negative(tt_softplus(op_negative(v))), sys.call())

#' @rdname op_softplus
#' @export
op_softsign <- function(x) op_composed_(x, function(v) op_divide(v, op_add(op_abs(v), 1)), sys.call())

#' @rdname op_softplus
#' @export
op_relu6 <- function(x) op_composed_(x, tt_relu6, sys.call())

#' @rdname op_softplus
#' @export
op_hard_sigmoid <- function(x) op_composed_(x, tt_hard_sigmoid, sys.call())

#' @rdname op_softplus
#' @export
op_hard_silu <- function(x) op_composed_(x, function(v) op_multiply(v, tt_hard_sigmoid(v)), sys.call())

#' @rdname op_softplus
#' @export
op_hard_swish <- function(x) op_composed_(x, function(v) op_multiply(v, tt_hard_sigmoid(v)), sys.call())

#' @rdname op_softplus
#' @export
op_elu <- function(x, alpha = 1) {
  call <- sys.call()
  alpha <- check_num(alpha, "alpha", call = call)
  op_composed_(x, function(v) tt_elu(v, alpha), call)
}

#' @rdname op_softplus
#' @export
op_selu <- function(x) {
  op_composed_(x, tt_selu, sys.call())
}

#' @rdname op_softplus
#' @export
op_celu <- function(x, alpha = 1) {
  call <- sys.call()
  alpha <- check_num(alpha, "alpha", call = call)
  if (alpha == 0) abort_value("{.arg alpha} must not be 0.", call = call)
  op_composed_(x, function(v) {
    op_add(op_maximum(v, 0), op_multiply(alpha, tt_expm1(op_divide(op_minimum(v, 0), alpha))))
  }, call)
}

#' @rdname op_softplus
#' @export
op_leaky_relu <- function(x, negative_slope = 0.2) {
  call <- sys.call()
  negative_slope <- check_num(negative_slope, "negative_slope", call = call)
  op_composed_(x, function(v) op_where(op_greater(v, 0), v, op_multiply(v, negative_slope)), call)
}

#' @rdname op_softplus
#' @export
op_hard_tanh <- function(x) op_composed_(x, function(v) op_clip(v, -1, 1), sys.call())

#' @rdname op_softplus
#' @export
op_tanh_shrink <- function(x) op_composed_(x, function(v) op_subtract(v, op_tanh(v)), sys.call())

#' @rdname op_softplus
#' @export
op_soft_shrink <- function(x, threshold = 0.5) {
  call <- sys.call()
  threshold <- check_num(threshold, "threshold", call = call)
  op_composed_(x, function(v) {
    op_where(op_greater(v, threshold), op_subtract(v, threshold),
             op_where(op_less(v, -threshold), op_add(v, threshold), 0))
  }, call)
}

#' @rdname op_softplus
#' @export
op_hard_shrink <- function(x, threshold = 0.5) {
  call <- sys.call()
  threshold <- check_num(threshold, "threshold", call = call)
  op_composed_(x, function(v) op_where(op_greater(op_abs(v), threshold), v, 0), call)
}

#' @rdname op_softplus
#' @export
op_threshold <- function(x, threshold, default_value) {
  call <- sys.call()
  threshold <- check_num(threshold, "threshold", call = call)
  default_value <- check_num(default_value, "default_value", call = call)
  op_run(list(x = x), function(a) op_where(op_greater(a$x, threshold), a$x, default_value), call)
}

#' @rdname op_softplus
#' @export
op_squareplus <- function(x, b = 4L) {
  call <- sys.call()
  b <- check_num(b, "b", min = 0, call = call)
  op_composed_(x, function(v) op_divide(op_add(v, op_sqrt(op_add(op_square(v), b))), 2), call)
}

#' @rdname op_softplus
#' @export
op_sparse_plus <- function(x) {
  op_composed_(x, function(v) {
    mid <- op_multiply(0.25, op_square(op_add(v, 1)))
    op_where(op_less_equal(v, -1), 0, op_where(op_less(v, 1), mid, v))
  }, sys.call())
}

#' @rdname op_softplus
#' @export
op_glu <- function(x, axis = -1L) {
  call <- sys.call()
  axis <- as_op_axis(axis, call = call, multiple = FALSE)
  op_composed_(x, function(v) {
    ax <- tt_axis(axis, length(v$shape), call)
    tt_check_not_batch(v, ax, call, "{.fn op_glu} cannot split")
    n <- v$shape[[ax + 1L]]
    if (n %% 2L) abort_value("The size of {.arg axis} must be even, not {n}.", call = call)
    h <- tt_slices(v, ax, c(0L, n %/% 2L), c(n %/% 2L, n %/% 2L))
    op_multiply(h[[1]], op_sigmoid(h[[2]]))
  }, call)
}

#' Element-wise math composed from other ops
#'
#' - `op_reciprocal()`: `1 / x`; `op_rsqrt()`: `1 / sqrt(x)`.
#' - `op_log2()`, `op_log10()`: `log(x) / log(2)` and `log(x) / log(10)`, as
#'   Keras computes them; `op_exp2()`: `2^x`; `op_expm1()`: `exp(x) - 1`,
#'   accurate near 0.
#' - `op_logaddexp()`: `log(exp(x1) + exp(x2))`, computed stably.
#' - `op_deg2rad()`: `x * pi / 180`.
#' - `op_heaviside()`: 0 where `x1 < 0`, 1 where `x1 > 0`, `x2` where `x1 ==
#'   0`.
#' - `op_isnan()`, `op_isinf()`, `op_isfinite()`: logical tests.
#' - `op_nan_to_num()`: NaN replaced by `nan`, `Inf` by `posinf` and `-Inf` by
#'   `neginf` (the largest and smallest float32 when `NULL`).
#' - `op_divide_no_nan()`: `x1 / x2`, 0 where `x2 == 0`.
#'
#' @param x,x1,x2 Numeric arrays or traced tensors.
#' @param nan,posinf,neginf Replacement numbers (`NULL`: the float32 limits).
#' @return An R array (or a traced tensor); logical for the tests.
#' @family ops
#' @examples
#' op_reciprocal(c(2, 4))
#' op_log2(c(1, 8))
#' op_expm1(1e-10)
#' op_logaddexp(1000, 1000)
#' op_isfinite(c(1, Inf, NaN))
#' op_nan_to_num(c(NaN, Inf, -Inf, 1))
#' op_divide_no_nan(c(1, 2), c(0, 4))
#' @export
op_reciprocal <- function(x) op_composed_(x, function(v) op_divide(1, v), sys.call())

#' @rdname op_reciprocal
#' @export
op_rsqrt <- function(x) op_composed_(x, function(v) op_divide(1, op_sqrt(v)), sys.call())

#' @rdname op_reciprocal
#' @export
op_log2 <- function(x) op_composed_(x, function(v) op_divide(op_log(v), log(2)), sys.call())

#' @rdname op_reciprocal
#' @export
op_log10 <- function(x) op_composed_(x, function(v) op_divide(op_log(v), log(10)), sys.call())

#' @rdname op_reciprocal
#' @export
op_exp2 <- function(x) op_composed_(x, function(v) op_power(2, v), sys.call())

#' @rdname op_reciprocal
#' @export
op_expm1 <- function(x) op_composed_(x, tt_expm1, sys.call())

#' @rdname op_reciprocal
#' @export
op_deg2rad <- function(x) op_composed_(x, function(v) op_multiply(v, pi / 180), sys.call())

#' @rdname op_reciprocal
#' @export
op_logaddexp <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    u <- tt_as_dtype(a$x1, float_dtype(promote_dtype(a$x1, a$x2)))
    v <- tt_as_dtype(a$x2, u$dtype)
    delta <- op_subtract(u, v)
    stable <- op_add(op_maximum(u, v), op_log1p(op_exp(op_negative(op_abs(delta)))))
    op_where(tt_isnan(delta), op_add(u, v), stable)
  }, sys.call())
}

#' @rdname op_reciprocal
#' @export
op_heaviside <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    d <- float_dtype(promote_dtype(a$x1, a$x2))
    u <- tt_as_dtype(a$x1, d)
    v <- tt_as_dtype(a$x2, d)
    y <- op_where(op_less(u, 0), 0, op_where(op_greater(u, 0), 1, v))
    tt_as_dtype(y, d)
  }, sys.call())
}

#' @rdname op_reciprocal
#' @export
op_isnan <- function(x) {
  op_run(list(x = x), function(a) {
    tt_isnan(a$x)
  }, sys.call())
}

#' @rdname op_reciprocal
#' @export
op_isinf <- function(x) {
  op_run(list(x = x), function(a) {
    # x - x is NaN for +-Inf and NaN only; x == x is FALSE for NaN only.
    op_logical_and(op_equal(a$x, a$x), op_not_equal(op_subtract(a$x, a$x), 0))
  }, sys.call())
}

#' @rdname op_reciprocal
#' @export
op_isfinite <- function(x) {
  op_run(list(x = x), function(a) {
    op_equal(op_subtract(a$x, a$x), 0)
  }, sys.call())
}

# The largest float32.
float32_max <- (2 - 2^-23) * 2^127

#' @rdname op_reciprocal
#' @export
op_nan_to_num <- function(x, nan = 0, posinf = NULL, neginf = NULL) {
  call <- sys.call()
  nan <- check_num(nan, "nan", call = call)
  posinf <- check_num(posinf, "posinf", null_ok = TRUE, call = call) %||% float32_max
  neginf <- check_num(neginf, "neginf", null_ok = TRUE, call = call) %||% -float32_max
  op_run(list(x = x), function(a) {
    v <- a$x
    if (!is_float_dtype(v$dtype)) return(v)
    v <- op_where(tt_isnan(v), nan, v)
    inf <- op_not_equal(op_subtract(v, v), 0)
    v <- op_where(op_logical_and(inf, op_greater(v, 0)), posinf, v)
    op_where(op_logical_and(inf, op_less(v, 0)), neginf, v)
  }, call)
}

#' @rdname op_reciprocal
#' @export
op_divide_no_nan <- function(x1, x2) {
  op_run(list(x1 = x1, x2 = x2), function(a) {
    d <- float_dtype(promote_dtype(a$x1, a$x2))
    u <- tt_as_dtype(a$x1, d)
    v <- tt_as_dtype(a$x2, d)
    zero <- op_equal(v, 0)
    op_where(zero, 0, op_divide(u, op_where(zero, 1, v)))
  }, sys.call())
}
