# Weight initializers (Keras 3 formulas; computed by the C++ core from a seed).

new_initializer <- function(name, a = 0, b = 0, seed = NULL, class_name) {
  structure(list(name = name, a = as.numeric(a), b = as.numeric(b),
                 seed = if (is.null(seed)) NULL else as.numeric(seed), class_name = class_name),
            class = "mirrored_initializer")
}

#' Weight initializers
#'
#' Objects that say how a layer's variables start. They can be passed to
#' `kernel_initializer` / `bias_initializer` of [layer_dense()], as can their
#' names (`"glorot_uniform"`, `"he_normal"`, `"zeros"`, `"ones"`,
#' `"random_normal"`). The values are Keras 3's: `glorot_uniform` draws from
#' U(-l, l) with l = sqrt(6 / (fan_in + fan_out)); `he_normal` from a normal
#' of standard deviation sqrt(2 / fan_in) truncated at two standard deviations;
#' `random_normal` from N(mean, stddev).
#'
#' @param seed Integer seed. `NULL` draws one from R's random number
#'   generator, so [set_random_seed()] makes models reproducible.
#' @param mean,stddev Mean and standard deviation of `initializer_random_normal()`.
#' @return An initializer object.
#' @family initializers
#' @seealso [layer_dense()]
#' @examples
#' layer_dense(units = 4, kernel_initializer = initializer_he_normal(seed = 1))
#' @export
initializer_glorot_uniform <- function(seed = NULL) {
  new_initializer("glorot_uniform", seed = check_int(seed, "seed", min = 0, null_ok = TRUE),
                  class_name = "GlorotUniform")
}

#' @rdname initializer_glorot_uniform
#' @export
initializer_he_normal <- function(seed = NULL) {
  new_initializer("he_normal", seed = check_int(seed, "seed", min = 0, null_ok = TRUE),
                  class_name = "HeNormal")
}

#' @rdname initializer_glorot_uniform
#' @export
initializer_zeros <- function() new_initializer("zeros", class_name = "Zeros")

#' @rdname initializer_glorot_uniform
#' @export
initializer_ones <- function() new_initializer("ones", class_name = "Ones")

#' @rdname initializer_glorot_uniform
#' @export
initializer_random_normal <- function(mean = 0, stddev = 0.05, seed = NULL) {
  new_initializer("random_normal", a = check_num(mean, "mean"),
                  b = check_num(stddev, "stddev", min = 0),
                  seed = check_int(seed, "seed", min = 0, null_ok = TRUE), class_name = "RandomNormal")
}

as_initializer <- function(x, arg, call = sys.call(-1)) {
  if (inherits(x, "mirrored_initializer")) return(x)
  known <- c(glorot_uniform = "initializer_glorot_uniform", he_normal = "initializer_he_normal",
             zeros = "initializer_zeros", ones = "initializer_ones",
             random_normal = "initializer_random_normal")
  if (is.character(x) && length(x) == 1 && x %in% names(known)) return(do.call(known[[x]], list()))
  abort_value("{.arg {arg}} must be one of {.val {names(known)}} or an initializer object, not {describe(x)}.",
              call = call)
}

# Keras' serialized form, which the core's layer registry reads (an unseeded
# initializer draws from the layer's seed there).
initializer_keras_config <- function(init) {
  seed <- if (is.null(init$seed)) NULL else as.integer(init$seed)
  cfg <- switch(init$name,
    random_normal = list(seed = seed, mean = as.numeric(init$a), stddev = as.numeric(init$b)),
    zeros = , ones = stats::setNames(list(), character()),
    list(seed = seed)
  )
  list(module = "keras.initializers", class_name = init$class_name, config = cfg, registered_name = NULL)
}
