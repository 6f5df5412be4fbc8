# Freezing layers (Keras' `trainable`).
#
# A layer's trainable flag lives in its config (`config$trainable`, written
# to .keras files as Keras does); a model has a flag of its own, and setting
# either sets it on every layer below, as Keras 3's setter does. Nothing
# changes in training until the next compile(): compile_core() sends one
# frozen flag per graph node to the core (CompileConfig::frozen), which then
# leaves the frozen layers' variables out of the all-reduce and the optimizer
# and runs a frozen BatchNormalization in inference mode. (Keras 3.15 has a
# warning for flags changed after compile() but never reaches it: neither do
# we warn.)

#' Freeze and unfreeze weights
#'
#' Freezes the weights of a model or layer so that training no longer changes
#' them (Keras' `trainable = FALSE`), or makes them trainable again. As in
#' Keras, a frozen `BatchNormalization` layer also runs in inference mode
#' during training (it normalizes with its moving statistics and does not
#' update them). Changes take effect at the next [compile()]: compile the model
#' again after freezing or unfreezing.
#'
#' When applied to a model with `from`, `to` or `which`, the operation is
#' global over the model's layers: the layers selected get the new state and
#' all the others the opposite one (e.g. unfrozen for a call to
#' `freeze_weights()`).
#'
#' @param object A model or a layer.
#' @param from,to First and last layer (both inclusive) to freeze or
#'   unfreeze: a layer, a layer name or a 1-based index into `object$layers`
#'   (negative: counted from the end). `NULL`: the first and last layer.
#' @param which Instead of `from`/`to`: the layers to freeze or unfreeze, as
#'   names, 1-based positions, layers, a logical vector of
#'   `length(object$layers)`, or a function (or formula) taking a layer and
#'   returning `TRUE` or `FALSE`.
#' @return `object`, invisibly (its flags are changed in place).
#' @family model functions
#' @seealso [compile()], [get_layer()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |>
#'   layer_dense(units = 8, activation = "relu", name = "hidden") |>
#'   layer_dense(units = 2, name = "head")
#' freeze_weights(model, to = "hidden")
#' model$layers[[1]]$trainable
#' model |> compile(optimizer = "adam", loss = "mse")
#' model
#' unfreeze_weights(model)
#' freeze_weights(model, which = function(layer) layer$name == "head")
#' @export
freeze_weights <- function(object, from = NULL, to = NULL, which = NULL) {
  set_weights_trainable(object, from, to, which, FALSE, sys.call())
}

#' @rdname freeze_weights
#' @export
unfreeze_weights <- function(object, from = NULL, to = NULL, which = NULL) {
  set_weights_trainable(object, from, to, which, TRUE, sys.call())
}

set_weights_trainable <- function(object, from, to, which, trainable, call) {
  if (!(inherits(object, "mirrored_model") || inherits(object, "mirrored_layer"))) {
    abort_value("{.arg object} must be a model or a layer, not {describe(object)}.", call = call)
  }
  if (!is.null(which) && (!is.null(from) || !is.null(to))) {
    abort_value("Give {.arg which} or {.arg from}/{.arg to}, not both.", call = call)
  }
  if (is.null(which) && is.null(from) && is.null(to)) {
    object$trainable <- trainable
    return(invisible(object))
  }
  if (!inherits(object, "mirrored_model")) {
    abort_value("{.arg from}, {.arg to} and {.arg which} select layers of a model; {.arg object} is a layer.",
                call = call)
  }
  layers <- object$layers
  names <- vapply(layers, function(l) l$name, character(1))
  selected <- if (!is.null(which)) {
    which_layers(which, layers, names, call)
  } else {
    first <- if (is.null(from)) 1L else layer_position(from, layers, names, "from", call)
    last <- if (is.null(to)) length(layers) else layer_position(to, layers, names, "to", call)
    seq_along(layers) >= first & seq_along(layers) <= last
  }
  # The model itself stays trainable: some of its layers are.
  object$trainable <- TRUE
  for (k in seq_along(layers)) layers[[k]]$trainable <- if (selected[k]) trainable else !trainable
  invisible(object)
}

# 1-based position of one layer given as a layer, a name or an index.
layer_position <- function(x, layers, names, arg, call) {
  if (inherits(x, "mirrored_layer") || inherits(x, "mirrored_model")) {
    k <- which(vapply(layers, function(l) same_layer(l, x), logical(1)))
    if (!length(k)) abort_value("{.arg {arg}}: layer {.val {x$name}} is not a layer of the model.", call = call)
    return(k[1])
  }
  if (is.character(x) && length(x) == 1 && !is.na(x)) {
    k <- match(x, names)
    if (is.na(k)) {
      abort_value(c("{.arg {arg}}: the model has no layer named {.val {x}}.",
                    i = "Its layers are {.val {names}}."), call = call)
    }
    return(k)
  }
  n <- length(layers)
  if (is.numeric(x) && length(x) == 1 && !is.na(x) && x == round(x) && x != 0 && abs(x) <= n) {
    return(as.integer(if (x < 0) n + x + 1 else x))
  }
  abort_value("{.arg {arg}} must be a layer, a layer name or an index in 1..{n} (negative from the end), not {describe(x)}.",
              call = call)
}

# Logical vector over `layers` from keras3's `which` forms.
which_layers <- function(which, layers, names, call) {
  n <- length(layers)
  if (inherits(which, "formula")) which <- formula_function(which, call)
  if (is.function(which) && !inherits(which, "mirrored_layer") && !inherits(which, "mirrored_model")) {
    which <- vapply(layers, function(l) {
      v <- which(l)
      if (!(is.logical(v) && length(v) == 1 && !is.na(v))) {
        abort_value("{.arg which} must return TRUE or FALSE for each layer, not {describe(v)}.", call = call)
      }
      v
    }, logical(1))
  }
  if (is.logical(which)) {
    if (length(which) != n || anyNA(which)) {
      abort_value("{.arg which} as a logical vector must have one TRUE/FALSE per layer ({n}), not {describe(which)}.",
                  call = call)
    }
    return(which)
  }
  if (inherits(which, "mirrored_layer") || inherits(which, "mirrored_model")) which <- list(which)
  if (!(is.character(which) || is.numeric(which) || is.list(which))) {
    abort_value("{.arg which} must be layer names, positions, layers, a logical vector or a function, not {describe(which)}.",
                call = call)
  }
  out <- logical(n)
  for (x in as.list(which)) out[layer_position(x, layers, names, "which", call)] <- TRUE
  out
}

same_layer <- function(a, b) {
  a <- if (inherits(a, "mirrored_model")) model_object(a) else layer_object(a)
  b <- if (inherits(b, "mirrored_model")) model_object(b) else layer_object(b)
  identical(a, b)
}

# Sets `trainable` on every layer of `model`, nested models included (Keras'
# recursive setter).
set_model_layers_trainable <- function(model, value) {
  for (l in model$layers) l$trainable <- value
}

check_trainable_value <- function(value, call = sys.call(-1)) {
  if (!(is.logical(value) && length(value) == 1 && !is.na(value))) {
    abort_value("{.arg trainable} must be TRUE or FALSE, not {describe(value)}.", call = call)
  }
  value
}

# One flag per node of the model's graph: TRUE where the node's layer is
# frozen (the model itself frozen freezes all). What compile() sends.
model_frozen_nodes <- function(model) {
  g <- model$graph()
  if (is.null(g)) return(logical())
  if (!isTRUE(model$trainable)) return(rep(TRUE, length(g$nodes)))
  vapply(g$nodes, function(n) identical(n$layer$config$trainable, FALSE), logical(1))
}

# A model read from a config: its own flag as written, without touching its
# layers' (each layer's config carries its own, as Keras writes them).
set_loaded_trainable <- function(model, cfg) {
  if (identical(cfg$trainable, FALSE)) {
    obj <- model_object(model)  # an R6 object: assigning into it changes `model`
    obj$.__enclos_env__$private$.trainable <- FALSE
  }
  model
}

# A one-sided formula as purrr-style lambda, `~ .x$name == "a"` (keras3's
# `which` accepts them through rlang): the right-hand side evaluated in the
# formula's environment with the argument bound to `.x` and `.`.
formula_function <- function(f, call) {
  if (length(f) != 2L) abort_value("A formula given as {.arg which} must be one-sided, like {.code ~ .x$name == \"dense\"}.", call = call)
  body <- f[[2L]]
  env <- environment(f) %||% globalenv()
  function(x) eval(body, list(.x = x, . = x), env)
}
