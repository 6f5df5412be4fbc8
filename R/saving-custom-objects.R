# The custom objects that loading finds without being told: keras3's global
# registry (set_custom_objects(), register_keras_serializable()) and its
# scopes (with_custom_object_scope()). load_model(), from_config(),
# load_model_config() and deserialize_keras_object() look a name up in their
# `custom_objects` argument first, then here (check_custom_objects()).

.custom_objects <- new.env(parent = emptyenv())

custom_objects_registry <- function() {
  nms <- sort(ls(.custom_objects, all.names = TRUE))
  stats::setNames(lapply(nms, function(n) .custom_objects[[n]]), nms)
}

# A named list of custom objects (functions, Layer() classes, metrics);
# `allow_empty`: whether list() is one (the registry's setters take it, a
# loader's `custom_objects` does not).
check_custom_object_list <- function(objects, arg, call, allow_empty = TRUE) {
  ok <- is.list(objects) &&
    (if (length(objects) == 0) allow_empty else !is.null(names(objects)) && all(nzchar(names(objects)))) &&
    all(vapply(objects, function(o) is.function(o) || inherits(o, "mirrored_metric"), logical(1)))
  if (!ok) abort_value("{.arg {arg}} must be a named list of functions, classes or metrics, not {describe(objects)}.",
                       call = call)
  objects
}

#' Custom objects loading finds by name
#'
#' keras3's registry of custom objects: functions, `Layer()` classes, losses
#' and metrics that [load_model()], [from_config()], [load_model_config()]
#' and [deserialize_keras_object()] find by the name a file or config gives,
#' without a `custom_objects` argument (which, when given, is looked in
#' first).
#' - `set_custom_objects(objects, clear = TRUE)` sets the registry (after
#'   emptying it when `clear`) and returns the previous one, invisibly.
#' - `get_custom_objects()` returns it.
#' - `register_keras_serializable(object, name, package)` adds one object
#'   under `"package>name"` (Keras' registered name, `package` "Custom" by
#'   default) and under `name` alone; `name` defaults to a class's name or
#'   the expression given.
#' - `get_registered_name(obj)` is the name an object is registered under
#'   (`"package>name"`), `get_registered_object(name)` the object registered
#'   under a name (`NULL` when none).
#' - `with_custom_object_scope(objects, expr)` evaluates `expr` with
#'   `objects` added, then puts the registry back as it was.
#'
#' @param objects A named list of custom objects.
#' @param clear Whether to empty the registry first.
#' @param object A function, `Layer()` class, loss or metric.
#' @param name The name to register it under.
#' @param package The registered name's prefix.
#' @param expr Code evaluated with `objects` registered.
#' @returns `set_custom_objects()`: the previous registry, invisibly.
#'   `get_custom_objects()`: the registry, a named list.
#'   `register_keras_serializable()`: `object`, invisibly.
#'   `get_registered_name()`: a string. `get_registered_object()`: the object or `NULL`.
#'   `with_custom_object_scope()`: the value of `expr`.
#' @family saving functions
#' @examples
#' scaled_mse <- function(y_true, y_pred) 2 * op_mean(op_square(y_true - y_pred))
#' register_keras_serializable(scaled_mse)
#' names(get_custom_objects())
#' old <- set_custom_objects(list(), clear = TRUE)
#' with_custom_object_scope(list(f = identity), names(get_custom_objects()))
#' set_custom_objects(old)
#' @export
set_custom_objects <- function(objects = list(), clear = TRUE) {
  check_custom_object_list(objects, "objects", sys.call())
  check_bool(clear, "clear")
  old <- custom_objects_registry()
  if (clear) rm(list = ls(.custom_objects, all.names = TRUE), envir = .custom_objects)
  for (n in names(objects)) .custom_objects[[n]] <- objects[[n]]
  invisible(old)
}

#' @rdname set_custom_objects
#' @export
get_custom_objects <- function() custom_objects_registry()

#' @rdname set_custom_objects
#' @export
register_keras_serializable <- function(object, name = NULL, package = NULL) {
  check_custom_object_list(list(x = object), "object", sys.call())
  name <- check_string(name, "name", null_ok = TRUE) %||%
    attr(object, "classname", exact = TRUE) %||% paste(deparse(substitute(object)), collapse = "")
  package <- check_string(package, "package", null_ok = TRUE) %||% "Custom"
  if (grepl(">", name, fixed = TRUE) || grepl(">", package, fixed = TRUE)) {
    abort_value("{.arg name} and {.arg package} cannot contain {.val >} (it separates them in Keras' registered name).")
  }
  .custom_objects[[paste0(package, ">", name)]] <- object
  .custom_objects[[name]] <- object
  invisible(object)
}

#' @rdname set_custom_objects
#' @param obj A registered object.
#' @export
get_registered_name <- function(obj) {
  found <- registered_names(function(o) identical(o, obj))
  found$full %||% found$any %||% attr(obj, "classname", exact = TRUE) %||%
    paste(deparse(substitute(obj)), collapse = "")
}

# The registry's names of the objects `match(o)` accepts: the first
# "package>name" one (`full`, Keras' registered name) and the first of
# all (`any`); NULL where there is none.
registered_names <- function(match) {
  reg <- custom_objects_registry()
  hit <- names(reg)[vapply(reg, match, logical(1))]
  full <- hit[grepl(">", hit, fixed = TRUE)]
  list(full = if (length(full)) full[[1]], any = if (length(hit)) hit[[1]])
}

#' @rdname set_custom_objects
#' @param custom_objects,module_objects Named lists looked in before
#'   (`custom_objects`) and after (`module_objects`) the registry.
#' @export
get_registered_object <- function(name, custom_objects = NULL, module_objects = NULL) {
  name <- check_string(name, "name")
  for (src in list(custom_objects, custom_objects_registry(), module_objects)) {
    if (!is.null(src) && !is.null(src[[name]])) return(src[[name]])
  }
  NULL
}

#' @rdname set_custom_objects
#' @export
with_custom_object_scope <- function(objects, expr) {
  check_custom_object_list(objects, "objects", sys.call())
  old <- set_custom_objects(objects, clear = FALSE)
  on.exit(set_custom_objects(old, clear = TRUE), add = TRUE)
  expr
}

#' Serialize and deserialize Keras objects
#'
#' keras3's `serialize_keras_object()` returns the dictionary Keras writes
#' for a model, layer, optimizer, metric, regularizer, constraint or
#' initializer (`module`, `class_name`, `config`, `registered_name`), as an R
#' list; `deserialize_keras_object()` makes a new model, layer, optimizer,
#' regularizer, constraint or initializer from such a list (fresh weights).
#'
#' @param obj A model, layer, optimizer, metric, regularizer, constraint or
#'   initializer.
#' @param config A list from `serialize_keras_object()` (or a Keras file's
#'   entry of that form).
#' @param custom_objects Named list of custom objects, looked in before the
#'   registry ([set_custom_objects()]).
#' @param safe_mode Accepted for keras3 code: mirrored never runs code from a
#'   config (a `Lambda` layer's function must be given in `custom_objects`).
#' @param ... Must be empty.
#' @returns `serialize_keras_object()`: a named list. `deserialize_keras_object()`:
#'   a model, layer, optimizer, regularizer, constraint or initializer.
#' @family saving functions
#' @examples
#' layer <- layer_dense(units = 3, activation = "relu")
#' cfg <- serialize_keras_object(layer)
#' cfg$class_name
#' layer2 <- deserialize_keras_object(cfg)
#' @export
serialize_keras_object <- function(obj) {
  if (inherits(obj, "mirrored_model") || inherits(model_object(obj), "mirrored_model")) {
    return(model_keras_config(model_object(obj)))
  }
  l <- tryCatch(layer_object(obj), error = function(e) NULL)
  if (inherits(l, "mirrored_layer")) {
    e <- layer_keras_identity(l)
    e$config <- l$config
    return(e[c("module", "class_name", "config", "registered_name")])
  }
  if (inherits(obj, "mirrored_optimizer")) {
    k <- optimizer_keras_config(obj)
    return(list(module = "keras.optimizers", class_name = k$class_name, config = k$config, registered_name = NULL))
  }
  if (inherits(obj, "mirrored_metric")) return(metric_keras_config(obj))
  if (inherits(obj, "mirrored_regularizer")) return(regularizer_keras_config(obj, "obj"))
  if (inherits(obj, "mirrored_constraint")) return(constraint_keras_config(obj, "obj"))
  if (inherits(obj, "mirrored_initializer")) return(initializer_keras_config(obj))
  abort_not_yet("{.fn serialize_keras_object} takes models, layers, optimizers, metrics, regularizers, constraints and initializers so far, not {describe(obj)}.")
}

#' @rdname serialize_keras_object
#' @export
deserialize_keras_object <- function(config, custom_objects = NULL, safe_mode = TRUE, ...) {
  check_dots_empty(list(...), "deserialize_keras_object", c("config", "custom_objects", "safe_mode"))
  check_bool(safe_mode, "safe_mode")
  if (!is.list(config) || !is.character(config$class_name) || !is.list(config$config)) {
    abort_value("{.arg config} must be a list with {.field class_name} and {.field config}, as {.fn serialize_keras_object} returns, not {describe(config)}.")
  }
  if (identical(config$module, "keras.optimizers")) {
    return(optimizer_from_keras(config, "config"))
  }
  if (identical(config$module, "keras.regularizers")) return(regularizer_from_keras(config))
  if (identical(config$module, "keras.constraints")) return(constraint_from_keras(config))
  if (identical(config$module, "keras.initializers")) return(initializer_from_keras(config))
  # A custom class registered under another name than its class
  # (register_keras_serializable(name =)): found by its registered name.
  reg <- config$registered_name
  if (is.character(reg) && length(reg) == 1 && is.null(custom_objects[[config$class_name]])) {
    obj <- get_registered_object(reg, custom_objects)
    if (!is.null(obj)) custom_objects <- c(custom_objects, stats::setNames(list(obj), config$class_name))
  }
  from_config(config[c("class_name", "config")], custom_objects)
}

# The objects of Keras' serialized regularizers, constraints and
# initializers (deserialize_keras_object()), checked as their constructors
# check them.
regularizer_from_keras <- function(config, call = sys.call(-1)) {
  ctor <- switch(config$class_name, L1 = regularizer_l1, L2 = regularizer_l2, L1L2 = regularizer_l1_l2,
                 OrthogonalRegularizer = regularizer_orthogonal, NULL)
  if (is.null(ctor)) {
    abort_value("Regularizer class {.val {config$class_name}} is not one mirrored has (L1, L2, L1L2, OrthogonalRegularizer).",
                call = call)
  }
  do.call(ctor, config$config)
}

constraint_from_keras <- function(config, call = sys.call(-1)) {
  known <- c("MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm")
  if (!config$class_name %in% known) {
    abort_value("Constraint class {.val {config$class_name}} is not one mirrored has ({.val {known}}).", call = call)
  }
  # The config is Keras' (0-based axes), as constraint_keras_config() writes it.
  cfg <- config$config
  if (!length(cfg)) cfg <- structure(list(), names = character(0))
  new_constraint(config$class_name, cfg)
}

initializer_from_keras <- function(config, call = sys.call(-1)) {
  cfg <- config$config
  switch(config$class_name,
    GlorotUniform = initializer_glorot_uniform(seed = cfg$seed),
    HeNormal = initializer_he_normal(seed = cfg$seed),
    Zeros = initializer_zeros(),
    Ones = initializer_ones(),
    RandomNormal = initializer_random_normal(mean = cfg$mean %||% 0, stddev = cfg$stddev %||% 0.05, seed = cfg$seed),
    abort_value("Initializer class {.val {config$class_name}} is not one mirrored has (GlorotUniform, HeNormal, Zeros, Ones, RandomNormal).",
                call = call))
}
