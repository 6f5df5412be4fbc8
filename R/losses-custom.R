# Losses and metrics written in R (issue 15, docs/traced-graphs.md §5):
# compile(loss = function(y_true, y_pred) ...), Loss() / new_loss_class(),
# custom_metric() and plain functions in `metrics =`. Each is traced into a
# graph of inputs (y_true, y_pred) when the model is compiled for the
# core, on the targets' per-sample shape (guessed until fit() or evaluate()
# sees the data, guess_target_shape(); a different shape traces again). The
# core runs the graph in the step on every replica: per-sample values are
# the mean over the non-batch axes of what the function returns (Keras'
# sum_over_batch_size reduction; a scalar is taken as the batch mean) and
# the loss's gradient is the graph's VJP with respect to y_pred.

# A loss object (R/losses.R) for the function `fn(y_true, y_pred)`.
function_loss <- function(fn, name = "loss", class_name = "LossFunctionWrapper", call = sys.call(-1)) {
  check_target_fn(fn, "loss", call)
  loss <- new_loss("traced", class_name, name, "sum_over_batch_size", list(), NULL, NULL, call)
  loss$fn <- fn
  loss
}

# A loss or metric function takes (y_true, y_pred).
check_target_fn <- function(fn, arg, call) {
  f <- names(formals(fn))
  if (is.primitive(fn) || !("..." %in% f || length(f) >= 2)) {
    abort_value("{.arg {arg}} must be a function of (y_true, y_pred); it takes {length(f)} argument{?s}.",
                call = call)
  }
}

# Per-sample values of a traced loss or metric computed in R, on arrays: the
# function runs eagerly (op_* on arrays), then the mean over the non-batch
# axes of each row (a scalar result is every row's value).
traced_per_sample <- function(fn, y_true, y_pred, what, call) {
  ys <- same_rank(y_true, y_pred)
  v <- fn(ys[[1]], ys[[2]])
  n <- if (is.null(dim(y_pred))) length(y_pred) else dim(y_pred)[1]
  if (!is.numeric(v) && !is.logical(v)) abort_value("{what} returned {describe(v)}, not numbers.", call = call)
  if (length(v) == 1) return(rep(as.numeric(v), n))
  if (length(v) %% n != 0) {
    abort_kind("shape", "{what} returned {length(v)} values for {n} samples.", call = call)
  }
  rowMeans(matrix(as.numeric(v), nrow = n))
}

# The graph (JSON) of `fn` on targets of per-sample shape `y_shape` and
# predictions of per-sample shape `p_shape`: one output, batched or scalar.
trace_target_fn <- function(fn, y_shape, p_shape, what, call) {
  tr <- trace_function(function(y_true, y_pred) {
    ys <- same_rank(y_true, y_pred)
    fn(ys[[1]], ys[[2]])
  },
                    list(list(shape = c(NA_integer_, y_shape)), list(shape = c(NA_integer_, p_shape))),
                    what = what, call = call)
  if (length(tr$outputs) != 1) {
    abort_value("{what} must return one tensor, not {length(tr$outputs)}.", call = call)
  }
  out <- tr$outputs[[1]]$shape
  if (length(out) && !is.na(out[1])) {
    abort_kind("shape", c("{what} returned shape {format(shape(out))}: it must keep the batch axis first (per-sample values) or return a scalar.",
                          i = "Reduce over the batch axis completely (op_mean(x)) or not at all (op_mean(x, axis = -1))."),
               call = call)
  }
  tr$json
}

is_traced_target_fn <- function(x) isTRUE(x$kind %in% c("traced", "state"))

# Whether output k's loss or metrics are traced: their graphs depend on the
# targets' shape.
output_has_traced <- function(o) {
  is_traced_target_fn(o$loss) || any(vapply(o$metrics, is_traced_target_fn, logical(1)))
}

# The targets' per-sample shape the graphs of output k are traced for: the
# data's once fit()/evaluate() saw it; before that a guess
# (guess_target_shape()), kept.
output_target_shape <- function(model, k, call = NULL) {
  o <- model$compiled_outputs[[k]]
  if (is.null(o$target_shape)) {
    model$compiled_outputs[[k]]$target_shape <- guess_target_shape(model, k, o, call)
  }
  model$compiled_outputs[[k]]$target_shape
}

# Before the data is seen, targets shaped like the output (a regression, or
# one-hot classes), else one value per sample (class indices, keras3's
# vector of labels): the first that every traced function of output k
# takes; when neither does, the first one's error.
guess_target_shape <- function(model, k, o, call) {
  g <- model$graph()
  out <- g$nodes[[g$outputs[k] + 1L]]$shape
  first <- NULL
  candidates <- list(as.integer(out), integer())
  # A built-in loss fixes the targets: class indices (one per position)
  # for the sparse cross-entropy, else the output's shape.
  if (!is.null(o$loss) && !is_traced_target_fn(o$loss)) {
    sparse <- identical(o$loss$kind, "sparse_categorical_crossentropy")
    candidates <- if (sparse) list(as.integer(utils::head(out, -1)), c(as.integer(utils::head(out, -1)), 1L)) else
      list(as.integer(out))
  }
  for (s in candidates) {
    ok <- tryCatch({
      for (x in c(list(o$loss), o$metrics)) traced_fn_json(model, k, x, s, call)
      TRUE
    }, mirrored_error = function(e) {
      if (is.null(first)) first <<- e
      FALSE
    })
    if (ok) return(s)
  }
  stop(first)
}

# Called with the targets' per-sample shapes before the core sees data:
# outputs whose traced loss or metrics were traced for other shapes are
# traced again and the model compiled again for the core, keeping the
# optimizer's state. `retrace = FALSE` (validation data, checked after the
# training data): another shape is an error instead, since one graph
# serves both.
ensure_target_shapes <- function(model, shapes, retrace = TRUE, call = sys.call(-1)) {
  before <- model$compiled_outputs
  changed <- FALSE
  for (k in seq_along(shapes)) {
    o <- model$compiled_outputs[[k]]
    if (is.null(o) || !output_has_traced(o) || is.null(shapes[[k]])) next
    s <- as.integer(shapes[[k]])
    traced <- as.integer(output_target_shape(model, k, call))
    if (identical(s, traced)) next
    if (!retrace) {
      abort_kind("shape", c("The validation targets have samples of shape {format(shape(s))}; the training targets {format(shape(traced))}.",
                            i = "A loss or metric written in R is traced for one target shape: give both the same shape."),
                 call = call)
    }
    model$compiled_outputs[[k]]$target_shape <- s
    changed <- TRUE
  }
  if (changed) {
    tryCatch(compile_core(model, call = call, keep_state = TRUE), error = function(e) {
      model$compiled_outputs <- before
      stop(e)
    })
  }
  invisible(changed)
}

# Keras' squeeze_or_expand_to_same_rank(), applied by LossFunctionWrapper
# and MeanMetricWrapper before the user's function: ranks that differ by
# one with a last axis of 1 are made equal (a vector of targets against a
# one-unit output becomes a column). Works on traced tensors and arrays.
same_rank <- function(y_true, y_pred) {
  rank <- function(x) if (is_traced_tensor(x)) length(x$shape) else if (is.null(dim(x))) 1L else length(dim(x))
  last <- function(x) { d <- if (is_traced_tensor(x)) x$shape else dim(x) %||% length(x); d[length(d)] }
  r1 <- rank(y_true)
  r2 <- rank(y_pred)
  if (r1 == r2 + 1 && identical(as.integer(last(y_true)), 1L)) {
    if (r2 == 1) y_pred <- op_expand_dims(y_pred, -1) else y_true <- op_squeeze(y_true, -1)
  } else if (r2 == r1 + 1 && identical(as.integer(last(y_pred)), 1L)) {
    if (r1 == 1) y_true <- op_expand_dims(y_true, -1) else y_pred <- op_squeeze(y_pred, -1)
  }
  list(y_true, y_pred)
}

# The graph JSON of a loss or metric `x` of output k (traced kind), or ""
# (built-in). `target_shape`: the targets' per-sample shape traced for.
traced_fn_json <- function(model, k, x, target_shape, call) {
  if (!is_traced_target_fn(x)) return("")
  g <- model$graph()
  if (identical(x$kind, "state")) return(trace_state_update(x, target_shape, g$nodes[[g$outputs[k] + 1L]]$shape, call))
  what <- if (inherits(x, "mirrored_metric")) paste0("the metric function ", x$name) else "the loss function"
  trace_target_fn(x$fn, target_shape, g$nodes[[g$outputs[k] + 1L]]$shape, what, call)
}

# The same for the compiled model: on the targets' shape of output k.
traced_output_json <- function(model, k, x, call) {
  if (!is_traced_target_fn(x)) return("")
  traced_fn_json(model, k, x, output_target_shape(model, k, call), call)
}

# compile()'s check: every traced loss and metric of `outputs` traces (on
# the guessed target shape, which the outputs keep).
pretrace_outputs <- function(model, outputs, call = sys.call(-1)) {
  g <- model$graph()
  for (k in seq_along(outputs)) {
    shape <- g$nodes[[g$outputs[k] + 1L]]$shape
    if (output_has_traced(outputs[[k]]) && anyNA(shape)) {
      # Traced graphs have one shape; each batch of this output has its own.
      abort_value(c("A loss or metric written in R cannot take output {k} of shape {shape_str(c(NA, shape))}, whose length varies by batch (a variable-length input).",
                    i = "Use a built-in loss and metrics, which take each batch's length, or give the input a fixed length."),
                  call = call)
    }
    if (output_has_traced(outputs[[k]])) outputs[[k]]$target_shape <- guess_target_shape(model, k, outputs[[k]], call)
  }
  outputs
}

# ---- Loss() -------------------------------------------------------------------

LossBase <- R6::R6Class("mirrored_custom_loss_base",
  cloneable = FALSE, lock_objects = FALSE,
  public = list(
    name = NULL,
    reduction = "sum_over_batch_size",
    dtype = NULL,
    initialize = function(..., name = NULL, reduction = "sum_over_batch_size", dtype = NULL) {
      check_dots_empty(list(...), class(self)[1], c("name", "reduction", "dtype"), call = NULL)
      self$name <- if (is.null(name)) to_snake_case(class(self)[1]) else check_string(name, "name", call = NULL)
      self$reduction <- check_choice(reduction, "reduction", loss_reductions, call = NULL)
      self$dtype <- dtype
    },
    call = function(y_true, y_pred) {
      abort_value("Loss class {.cls {class(self)[1]}} has no {.fn call} method.", call = NULL)
    },
    get_config = function() list(name = self$name, reduction = self$reduction)
  )
)

#' Define a custom loss class
#'
#' keras3's `Loss()`: a loss class whose `call(y_true, y_pred)` is written
#' with `op_*` functions. [compile.mirrored_model()] traces it into a graph
#' the core runs and differentiates on every replica (no R runs while the
#' model trains). `call()` returns per-sample values (the batch axis first;
#' other axes are averaged) or a scalar taken as the batch mean. A plain
#' function `function(y_true, y_pred)` given as `loss =` works the same way.
#'
#' @param classname The class name.
#' @param call The loss: `function(y_true, y_pred)`.
#' @param ...,public Other methods and fields.
#' @param private,active Private fields and active bindings (R6).
#' @param parent_env The environment the methods are defined in.
#' @return A constructor of loss objects: `function(..., name = NULL,
#'   reduction = "sum_over_batch_size", dtype = NULL)`. A loss object
#'   called on arrays, `loss(y_true, y_pred)`, computes the loss in R.
#' @family losses
#' @examples
#' loss_scaled_mse <- Loss("ScaledMSE",
#'   initialize = function(scale = 2, ...) {
#'     super$initialize(...)
#'     self$scale <- scale
#'   },
#'   call = function(y_true, y_pred) self$scale * op_mean(op_square(y_true - y_pred), axis = -1)
#' )
#' loss <- loss_scaled_mse(scale = 3)
#' loss(matrix(0, 2, 2), matrix(1, 2, 2))
#' @export
Loss <- function(classname, call = NULL, ..., public = list(), private = list(), active = list(),
                 parent_env = parent.frame()) {
  fn_call <- sys.call()
  classname <- check_string(classname, "classname", call = fn_call)
  parts <- class_members("loss", classname, list(call = call), list(...), public, active, call = fn_call)
  members <- parts$public
  active <- parts$active
  gen <- do.call(R6::R6Class, list(classname, inherit = LossBase, public = members,
                                   private = if (length(private)) private, active = if (length(active)) active,
                                   parent_env = parent_env, lock_objects = FALSE, cloneable = FALSE))
  structure(function(...) {
    user <- gen$new(...)
    loss <- function_loss(function(y_true, y_pred) user$call(y_true, y_pred), name = user$name,
                          class_name = classname, call = sys.call())
    loss$reduction <- user$reduction
    loss$user <- user
    loss
  }, class = c("mirrored_custom_loss_class", "function"), classname = classname, generator = gen)
}

#' @rdname Loss
#' @export
new_loss_class <- Loss

#' @export
print.mirrored_custom_loss_class <- function(x, ...) {
  cat("<custom loss class ", attr(x, "classname"), ">\n", sep = "")
  invisible(x)
}

#' Custom metric function
#'
#' keras3's `custom_metric()`: names a function `function(y_true, y_pred)`
#' written with `op_*` functions for `compile(metrics = )`. Its per-sample
#' values (the mean over the non-batch axes of what it returns) are
#' averaged over the epoch as Keras' `MeanMetricWrapper` does, weighted by
#' the sample weights in `weighted_metrics`, and computed by the core on
#' every replica (the function is traced once). A plain function in
#' `metrics =` is named after its list name, or `"custom_metric"`.
#'
#' @param name The name shown in the logs and the history.
#' @param metric_fn The function: `function(y_true, y_pred)`.
#' @return A metric object for [compile.mirrored_model()].
#' @family metrics
#' @examples
#' mean_pred <- custom_metric("mean_pred", function(y_true, y_pred) op_mean(y_pred, axis = -1))
#' mean_pred
#' @export
custom_metric <- function(name, metric_fn) {
  call <- sys.call()
  name <- check_string(name, "name", call = call)
  if (!is.function(metric_fn) || inherits(metric_fn, "mirrored_metric")) {
    abort_value("{.arg metric_fn} must be a function of (y_true, y_pred), not {describe(metric_fn)}.", call = call)
  }
  check_target_fn(metric_fn, "metric_fn", call)
  m <- new_metric("traced", "MeanMetricWrapper", name, 0.5, NULL, NULL, call)
  m$fn <- metric_fn
  m
}

# ---- .keras files ---------------------------------------------------------------
# As Keras 3 writes them in compile_config: a function (loss or metric) as
# a builtins "function" entry naming it; a Loss() class by its class name
# and get_config(), as an unregistered custom class.
traced_keras_config <- function(x) {
  user <- if (inherits(x, "mirrored_loss")) x$user
  if (!is.null(user)) {
    return(list(module = NULL, class_name = x$class_name, config = user$get_config(),
                registered_name = x$class_name))
  }
  list(module = "builtins", class_name = "function", config = x$name, registered_name = "function")
}

# A loss or metric entry of a file's compile_config that names a function
# or a custom class: re-made from custom_objects; NULL for other entries.
traced_from_keras <- function(x, what, custom_objects, kind) {
  if (!is.list(x)) return(NULL)
  cls <- cfg_get(x, "class_name", "")
  cfg <- cfg_get(x, "config", list())
  if (identical(cls, "function")) {
    name <- if (is.character(cfg)) cfg else ""
    obj <- custom_objects[[name]]
    if (is.null(obj)) {
      abort_config(what, paste("the {kind} function {.val {name}} is R code, which the file cannot hold:",
                               "give it to {.fn load_model} in {.arg custom_objects} (a list naming it {.val {name}}),",
                               "or load with {.code compile = FALSE}."))
    }
    if (kind == "loss") {
      loss <- as_loss(obj)
      if (is_traced_target_fn(loss)) loss$name <- name
      return(loss)
    }
    return(if (inherits(obj, "mirrored_metric")) obj else custom_metric(name, obj))
  }
  gen <- custom_objects[[cls]]
  if (kind == "metric" && inherits(gen, "mirrored_custom_metric_class")) {  # a Metric() class
    args <- if (is.list(cfg)) cfg else list()
    return(state_metric(do.call(gen, args)))
  }
  if (kind == "loss" && inherits(gen, "mirrored_custom_loss_class")) {
    args <- if (is.list(cfg)) cfg else list()
    args$dtype <- NULL
    return(do.call(gen, args))
  }
  NULL
}
