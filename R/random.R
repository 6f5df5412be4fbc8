# keras3's random_* functions on R arrays: draws from the core's
# counter-based stream (src/mr/nn/random_draws.h, the stream dropout and the
# initializers use), so the same seed gives the same numbers on every
# machine. Seeds as in Keras 3: an integer seed gives the same draws at every
# call; a random_seed_generator() gives new draws at each call, a
# reproducible sequence; `seed = NULL` draws a seed from R's generator, so
# set.seed() makes a script reproducible.

#' A generator of seeds for the random functions
#'
#' keras3's `random_seed_generator()` (Keras 3's `keras.random.SeedGenerator`):
#' pass it as the `seed` of [random_normal()] and the other random functions
#' to get new draws at every call, in a sequence that the generator's seed
#' makes reproducible.
#'
#' @param seed A whole number >= 0, or `NULL` to draw one from R's random
#'   number generator (see [set.seed()]).
#' @param name The generator's name (a string), or `NULL`.
#' @param ... Must be empty.
#' @return A `mirrored_seed_generator`: an environment whose `seed` is fixed
#'   and whose `state` (the number of draws so far) advances by one at each
#'   call that uses it.
#' @family random
#' @examples
#' gen <- random_seed_generator(42)
#' a <- random_uniform(3, seed = gen)
#' b <- random_uniform(3, seed = gen)
#' identical(a, b)  # FALSE: the generator advanced
#' gen2 <- random_seed_generator(42)
#' identical(random_uniform(3, seed = gen2), a)  # TRUE: the same sequence
#' @export
random_seed_generator <- function(seed = NULL, name = NULL, ...) {
  call <- sys.call()
  check_dots_empty(list(...), "random_seed_generator", c("seed", "name"), call = call)
  if (!is.null(name) && !(is.character(name) && length(name) == 1 && !is.na(name))) {
    abort_value("{.arg name} must be a string or NULL, not {describe(name)}.", call = call)
  }
  gen <- new.env(parent = emptyenv())
  gen$seed <- draw_seed(seed, call = call)
  gen$state <- 0
  gen$name <- name %||% "seed_generator"
  class(gen) <- "mirrored_seed_generator"
  gen
}

#' @export
print.mirrored_seed_generator <- function(x, ...) {
  cat(sprintf("<SeedGenerator name='%s' seed=%s state=%s>\n", x$name, format(x$seed), format(x$state)))
  invisible(x)
}

# (seed, counter) of one call's draws for keras3's `seed` argument.
random_key <- function(seed, call) {
  if (inherits(seed, "mirrored_seed_generator")) {
    counter <- seed$state
    seed$state <- seed$state + 1
    return(c(seed$seed, counter))
  }
  if (!is.null(seed) && !(is.numeric(seed) && length(seed) == 1)) {
    abort_value("{.arg seed} must be a whole number, a {.fn random_seed_generator} or NULL, not {describe(seed)}.",
                call = call)
  }
  c(draw_seed(seed, call = call), 0)
}

# dtype of a floating draw: NULL or a float dtype.
random_float_dtype <- function(dtype, call) {
  if (is.null(dtype)) return("float32")
  check_choice(dtype, "dtype", c("float32", "float64", "float16", "bfloat16"), call = call)
}

# A distribution's parameter: a finite number, or an array that broadcasts
# to `dims` (its values per element, in R's order).
random_param <- function(x, arg, dims, call) {
  if (!(is.numeric(x) || is.logical(x)) || !length(x) || anyNA(x) || is.object(x)) {
    abort_value("{.arg {arg}} must be a number (or a numeric array), not {describe(x)}.", call = call)
  }
  if (length(x) == 1) return(as.double(x))
  full <- tryCatch(op_broadcast_to(x, dims), error = function(e) NULL)
  if (is.null(full)) {
    abort_kind("shape", "{.arg {arg}} of dimensions {paste(dim(x) %||% length(x), collapse = ' x ')} does not broadcast to the shape {paste(dims, collapse = ' x ')}.",
               call = call)
  }
  as.double(full)
}

# Draws of `kind` as an R value of `dims`, then cast to `dtype`.
random_values <- function(kind, dims, a, b, dtype, seed, call) {
  key <- random_key(seed, call)
  n <- prod(dims)
  v <- with_core(cpp_random_draws(kind, n, a, b, key[1], key[2], TRUE), call = call)
  x <- dims_array(v, dims)
  if (identical(dtype, "float32") || identical(dtype, "float64")) return(x)
  op_values_(x, dtype, call)
}

#' Random arrays
#'
#' keras3's random functions, on R arrays: draws from the normal, uniform,
#' truncated normal (redrawn beyond two standard deviations, as TensorFlow),
#' gamma, beta and binomial distributions, random integers in
#' `[minval, maxval)`. The numbers come from the Philox stream mirrored's
#' dropout and initializers use: the same seed gives the same array on every
#' machine (they are not TensorFlow's numbers).
#'
#' `seed`: an integer gives the same array at every call; a
#' [random_seed_generator()] a new array at each call, in a reproducible
#' sequence; `NULL` draws a seed from R's generator (reproducible after
#' [set.seed()]).
#'
#' @param shape The dimensions: whole numbers or a [shape()].
#' @param mean,stddev The normal's mean and standard deviation.
#' @param minval,maxval The interval `[minval, maxval)`.
#' @param alpha,beta The gamma's shape (its scale is 1) and the beta's
#'   parameters: numbers or arrays that broadcast to `shape`.
#' @param counts,probabilities The binomial's number of trials (whole numbers
#'   up to 1e6) and success probability: numbers or arrays that broadcast to
#'   `shape`.
#' @param dtype The result's dtype: a float dtype (default `"float32"`), or
#'   for `random_integer()` an integer dtype (default `"int32"`).
#' @param seed A whole number, a [random_seed_generator()] or `NULL`.
#' @return An R array of `shape` (a vector for one dimension).
#' @family random
#' @examples
#' random_normal(c(2, 3), seed = 1)
#' random_uniform(5, minval = -1, maxval = 1, seed = 1)
#' random_integer(c(2, 2), 0, 10, seed = 1)
#' set.seed(3)
#' x <- random_truncated_normal(c(100, 4), stddev = 0.5)
#' range(x)
#' random_beta(4, alpha = 2, beta = 5, seed = 7)
#' random_binomial(4, counts = 10, probabilities = 0.3, seed = 7)
#' @export
random_normal <- function(shape, mean = 0, stddev = 1, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("normal", dims, random_param(mean, "mean", dims, call), random_param(stddev, "stddev", dims, call),
                random_float_dtype(dtype, call), seed, call)
}

#' @rdname random_normal
#' @export
random_uniform <- function(shape, minval = 0, maxval = 1, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("uniform", dims, random_param(minval, "minval", dims, call), random_param(maxval, "maxval", dims, call),
                random_float_dtype(dtype, call), seed, call)
}

#' @rdname random_normal
#' @export
random_truncated_normal <- function(shape, mean = 0, stddev = 1, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("truncated_normal", dims, random_param(mean, "mean", dims, call),
                random_param(stddev, "stddev", dims, call), random_float_dtype(dtype, call), seed, call)
}

#' @rdname random_normal
#' @export
random_integer <- function(shape, minval, maxval, dtype = "int32", seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  dtype <- check_choice(dtype, "dtype", c("int32", "int64", "int16", "int8", "uint8"), call = call)
  for (v in list(list(minval, "minval"), list(maxval, "maxval"))) {
    if (!(is.numeric(v[[1]]) && length(v[[1]]) == 1 && is.finite(v[[1]]) && v[[1]] == round(v[[1]]))) {
      abort_value("{.arg {v[[2]]}} must be a whole number, not {describe(v[[1]])}.", call = call)
    }
  }
  if (minval >= maxval) abort_value("{.arg minval} ({minval}) must be less than {.arg maxval} ({maxval}).", call = call)
  x <- random_values("integer", dims, as.double(minval), as.double(maxval), "float64", seed, call)
  storage.mode(x) <- "integer"
  x
}

#' @rdname random_normal
#' @export
random_gamma <- function(shape, alpha, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("gamma", dims, random_param(alpha, "alpha", dims, call), 1, random_float_dtype(dtype, call), seed, call)
}

#' @rdname random_normal
#' @export
random_beta <- function(shape, alpha, beta, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("beta", dims, random_param(alpha, "alpha", dims, call), random_param(beta, "beta", dims, call),
                random_float_dtype(dtype, call), seed, call)
}

#' @rdname random_normal
#' @export
random_binomial <- function(shape, counts, probabilities, dtype = NULL, seed = NULL) {
  call <- sys.call()
  dims <- as_op_shape(shape, call = call)
  random_values("binomial", dims, random_param(counts, "counts", dims, call),
                random_param(probabilities, "probabilities", dims, call), random_float_dtype(dtype, call), seed, call)
}

#' Random permutations, samples and dropout
#'
#' - `random_shuffle()`: `x` with its slices along `axis` in a random order.
#' - `random_categorical()`: for each row of `logits` (batch x classes),
#'   `num_samples` classes drawn from `softmax(row)`: a batch x num_samples
#'   integer matrix of 1-based classes (keras3's default; 0-based with
#'   `zero_indexed = TRUE`).
#' - `random_dropout()`: `inputs` with each element set to 0 with
#'   probability `rate` and the others scaled by `1 / (1 - rate)`; with
#'   `noise_shape`, one draw per element of that shape, broadcast to
#'   `inputs`' shape (e.g. `c(batch, 1)` to drop whole rows).
#'
#' Seeds as in [random_normal()].
#'
#' @param x,inputs A numeric array.
#' @param axis The axis to shuffle along (1-based; negative counts from the
#'   end).
#' @param logits A matrix of unnormalized log-probabilities, one row per
#'   batch element (a vector is one row).
#' @param num_samples Samples per row.
#' @param dtype An integer dtype for the classes.
#' @param zero_indexed Whether classes are 0-based (Keras') or 1-based (R's).
#' @param rate The probability of dropping an element, in `[0, 1)`.
#' @param noise_shape `NULL` or the dimensions of the mask (1 where it
#'   broadcasts).
#' @param seed A whole number, a [random_seed_generator()] or `NULL`.
#' @return An R array.
#' @family random
#' @examples
#' random_shuffle(1:10, seed = 1)
#' random_categorical(matrix(c(0, 0, 5, 0, 5, 0), 2, byrow = TRUE), 4, seed = 1)
#' random_dropout(matrix(1, 2, 4), rate = 0.5, seed = 1)
#' @export
random_shuffle <- function(x, axis = 1L, seed = NULL) {
  call <- sys.call()
  if (!(is.numeric(x) || is.logical(x)) || !length(x) || is.object(x) && !is.factor(x)) {
    abort_value("{.arg x} must be a numeric or logical array, not {describe(x)}.", call = call)
  }
  d <- dim(x) %||% length(x)
  ax <- check_int(axis, "axis", call = call)
  if (ax < 0) ax <- length(d) + ax + 1L
  if (ax < 1 || ax > length(d)) {
    abort_value("{.arg axis} must be an axis of {.arg x} (1..{length(d)} or negative), not {axis}.", call = call)
  }
  key <- random_key(seed, call)
  p <- with_core(cpp_random_permutation(d[ax], key[1], key[2]), call = call)
  if (is.null(dim(x))) return(x[p])
  idx <- rep(list(TRUE), length(d))
  idx[[ax]] <- p
  do.call(`[`, c(list(x), idx, list(drop = FALSE)))
}

#' @rdname random_shuffle
#' @export
random_categorical <- function(logits, num_samples, dtype = "int32", seed = NULL, zero_indexed = FALSE) {
  call <- sys.call()
  if (!is.numeric(logits) || !length(logits) || is.object(logits) || length(dim(logits)) > 2) {
    abort_value("{.arg logits} must be a numeric matrix (batch x classes), not {describe(logits)}.", call = call)
  }
  if (is.null(dim(logits))) logits <- matrix(logits, 1)
  n <- check_int(num_samples, "num_samples", min = 0, call = call)
  check_choice(dtype, "dtype", c("int32", "int64", "int16", "int8", "uint8"), call = call)
  check_bool(zero_indexed, "zero_indexed", call = call)
  key <- random_key(seed, call)
  s <- with_core(cpp_random_categorical(as.double(t(logits)), nrow(logits), ncol(logits), n, key[1], key[2]),
                 call = call)
  matrix(s + if (zero_indexed) 0L else 1L, nrow(logits), n, byrow = TRUE)
}

#' @rdname random_shuffle
#' @export
random_dropout <- function(inputs, rate, noise_shape = NULL, seed = NULL) {
  call <- sys.call()
  if (!(is.numeric(inputs) || is.logical(inputs)) || is.object(inputs)) {
    abort_value("{.arg inputs} must be a numeric array, not {describe(inputs)}.", call = call)
  }
  if (!(is.numeric(rate) && length(rate) == 1 && is.finite(rate) && rate >= 0 && rate < 1)) {
    abort_value("{.arg rate} must be a number in [0, 1), not {describe(rate)}.", call = call)
  }
  d <- dim(inputs) %||% length(inputs)
  noise <- if (is.null(noise_shape)) d else as_op_shape(noise_shape, "noise_shape", call = call)
  if (length(noise) != length(d) || any(noise != d & noise != 1L)) {
    abort_kind("shape", "{.arg noise_shape} ({paste(noise, collapse = ' x ')}) must have the rank of {.arg inputs} ({paste(d, collapse = ' x ')}), each dimension equal or 1.",
               call = call)
  }
  u <- random_values("uniform", noise, 0, 1, "float32", seed, call)
  keep <- as.vector(op_broadcast_to(dims_array(as.numeric(u), noise), d)) >= rate
  out <- ifelse(keep, as.double(inputs) / (1 - rate), 0)
  out <- as.double(as.vector(op_values_(out, "float32", call)))
  if (is.null(dim(inputs))) out else array(out, d)
}
