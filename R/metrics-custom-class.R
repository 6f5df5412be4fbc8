# Metric classes written in R: keras3's Metric() / new_metric_class().
# An instance keeps variables (self$add_variable()) that update_state()
# accumulates into and result() reads. Called on R arrays they run eagerly
# (op_* on arrays), as keras3's standalone metrics. In compile(metrics =)
# the core runs them: update_state(y_true, y_pred) is traced on the
# targets' and predictions' shapes into a graph whose output is the
# batch's increments of the variables (each `assign_add()` / `assign_sub()`
# of a value reduced over the batch), summed over the replicas' slices and
# the batches into the metric's state in the step (as Keras' metric
# variables under a MirroredStrategy, synchronized on read by a sum); and
# result() is traced into a graph of the variables that the core runs on
# the state plus the reset values whenever it reads the metrics
# (train/traced_objectives.h). So no R runs while the model trains, and
# the logs, the history and the callbacks see result() as for a built-in
# metric. reset_state() runs eagerly once, at compile(), to give the reset
# values (Keras' default: zeros).

# ---- a metric's variable ------------------------------------------------------------

# Three modes: "eager" (the value is an R array), "update" (update_state()
# being traced: assign_add() records an increment; reading the value is an
# error, since the core keeps the sums, not the values, in the step) and
# "result" (result() being traced: the value is a traced tensor).
MetricVariable <- R6::R6Class("mirrored_metric_variable",
  cloneable = FALSE, lock_objects = FALSE,
  public = list(
    name = NULL,
    shape = NULL,
    mode = "eager",
    val = NULL,  # eager: the value (a double array); result: a traced tensor
    inc = NULL,  # update: the traced increment so far (NULL: none)
    ctx = NULL,  # update: the trace context
    initialize = function(name, shape, value) {
      self$name <- name
      self$shape <- shape
      self$val <- value
    },
    assign = function(value) {
      if (self$mode != "eager") {
        variable_trace_abort(self, paste0("`", self$name, "$assign()` inside a traced update_state() or result() is ",
                                          "not supported yet: the core sums the variables' increments over replicas ",
                                          "and batches. Use `assign_add()` or `assign_sub()`."))
      }
      self$val <- variable_value_of(self, value)
      invisible(self)
    },
    assign_add = function(value) {
      if (self$mode == "update") return(invisible(variable_record_increment(self, value)))
      if (self$mode == "result") {
        variable_trace_abort(self, paste0("`", self$name, "$assign_add()` inside result(): result() only reads the variables."))
      }
      self$val <- self$val + variable_value_of(self, value)
      invisible(self)
    },
    assign_sub = function(value) {
      if (self$mode == "update") {
        neg <- if (is_traced_tensor(value)) op_negative(value) else -value
        return(invisible(variable_record_increment(self, neg)))
      }
      self$assign_add(-variable_value_of(self, value))
    },
    numpy = function() variable_read(self),
    print = function(...) {
      cat("<Variable path=", self$name, ", shape=", format(shape(self$shape)), ", dtype=float32",
          if (self$mode == "eager") paste0(", value=", paste(format(self$val), collapse = " ")), ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(value = function() variable_read(self))
)

variable_trace_abort <- function(v, why) {
  if (!is.null(v$ctx)) trace_abort(v$ctx, why, kind = "not_yet")
  abort_not_yet(why, call = NULL)
}

# The value a variable stands for where it is read (op_* arguments, R's
# operators).
variable_read <- function(v) {
  if (v$mode == "update") {
    trace_abort(v$ctx, paste0("update_state() reads variable '", v$name, "'; in mirrored it can only ",
                              "`assign_add()` or `assign_sub()` values computed from y_true and y_pred ",
                              "(the core keeps the sums of the increments)."), kind = "not_yet")
  }
  v$val
}

unwrap_metric_variable <- function(x) if (inherits(x, "mirrored_metric_variable")) variable_read(x) else x

# An R value given to assign()/assign_add() in eager mode, as the
# variable's shape.
variable_value_of <- function(v, value) {
  value <- unwrap_metric_variable(value)
  if (!(is.numeric(value) || is.logical(value))) {
    abort_value("A value assigned to variable {.val {v$name}} must be numeric, not {describe(value)}.", call = NULL)
  }
  n <- prod(v$shape)
  if (length(value) != n && length(value) != 1) {
    abort_kind("shape", "Variable {.val {v$name}} has shape {format(shape(v$shape))}; the value has {length(value)} element{?s}.",
               call = NULL)
  }
  out <- rep_len(as.double(value), n)
  if (length(v$shape) > 1) array(out, v$shape) else out
}

# update mode: `value` (a traced tensor reduced over the batch, or an R
# number) is added to the variable's increment.
variable_record_increment <- function(v, value) {
  value <- unwrap_metric_variable(value)
  if (is_traced_tensor(value)) {
    if (tt_batched(value)) {
      trace_abort(v$ctx, paste0("`", v$name, "$assign_add()` takes a value of the variable's shape ",
                                format(shape(v$shape)), ", not a tensor with the batch axis ",
                                format(value), ": reduce over the batch first (op_sum())."), kind = "shape")
    }
    if (!identical(as.integer(value$shape), as.integer(v$shape))) {
      if (prod(value$shape) == prod(v$shape) && prod(v$shape) == 1) {
        value <- op_reshape(value, v$shape)
      } else {
        trace_abort(v$ctx, paste0("`", v$name, "$assign_add()` takes a value of shape ", format(shape(v$shape)),
                                  ", not ", format(value), "."), kind = "shape")
      }
    }
  } else {
    value <- trace_add_constant(v$ctx, variable_value_of(v, value))
  }
  v$inc <- if (is.null(v$inc)) value else op_add(v$inc, value)
  v
}

#' @export
Ops.mirrored_metric_variable <- function(e1, e2) {
  e1 <- unwrap_metric_variable(e1)
  if (missing(e2)) return(get(.Generic)(e1))
  get(.Generic)(e1, unwrap_metric_variable(e2))
}

#' @export
Math.mirrored_metric_variable <- function(x, ...) get(.Generic)(unwrap_metric_variable(x), ...)

#' @export
as.double.mirrored_metric_variable <- function(x, ...) as.double(unwrap_metric_variable(x))

#' @export
as.array.mirrored_metric_variable <- function(x, ...) as.array(unwrap_metric_variable(x))

# ---- the base class of every user class ---------------------------------------------

CustomMetricBase <- R6::R6Class("mirrored_custom_metric",
  cloneable = FALSE, lock_objects = FALSE,
  public = list(
    name = NULL,
    dtype = NULL,
    initialize = function(..., name = NULL, dtype = NULL) {
      cls <- class(self)[1]
      check_dots_empty(list(...), cls, c("name", "dtype"), call = NULL)
      self$name <- if (is.null(name)) to_snake_case(cls) else check_string(name, "name", call = NULL)
      if (!is.null(dtype) && !identical(dtype, "float32")) {
        abort_not_yet("Metric {.cls {cls}}: {.arg dtype} = {.val {dtype}} is not supported yet; metrics compute in float32.",
                      call = NULL)
      }
      self$dtype <- dtype
      private$.variables <- list()
      invisible(self)
    },
    # keras3's Metric$add_variable() (and add_weight()): a float32 variable
    # of `shape` set by `initializer` (zeros, ones or a constant).
    add_variable = function(shape = NULL, initializer = "zeros", dtype = NULL, aggregation = "sum", name = NULL) {
      fn <- "add_variable"
      dims <- as.integer(shape(shape %||% integer()))
      if (anyNA(dims)) abort_value("{.arg shape} of {.fn {fn}} must be fully known, not {format(shape(shape))}.", call = NULL)
      if (!is.null(dtype) && !identical(dtype, "float32")) {
        abort_not_yet("{.fn {fn}}: metric variables are float32; {.arg dtype} = {.val {dtype}} is not supported yet.", call = NULL)
      }
      if (!identical(aggregation, "sum")) {
        abort_not_yet("{.fn {fn}}: {.arg aggregation} = {.val {aggregation}} is not supported yet; the core sums the variables' increments over replicas.",
                      call = NULL)
      }
      index <- length(private$.variables) + 1L
      vname <- if (is.null(name)) paste0("variable", if (index > 1) paste0("_", index - 1L)) else
        check_string(name, "name", call = NULL)
      v <- MetricVariable$new(vname, dims, metric_initial_value(initializer, dims, fn))
      private$.variables[[index]] <- v
      v
    },
    add_weight = function(shape = NULL, initializer = "zeros", dtype = NULL, aggregation = "sum", name = NULL) {
      self$add_variable(shape = shape, initializer = initializer, dtype = dtype, aggregation = aggregation, name = name)
    },
    update_state = function(y_true, y_pred, sample_weight = NULL) {
      abort_value("Metric class {.cls {class(self)[1]}} has no {.fn update_state} method.", call = NULL)
    },
    result = function() {
      abort_value("Metric class {.cls {class(self)[1]}} has no {.fn result} method.", call = NULL)
    },
    # Keras' default: every variable back to zeros.
    reset_state = function() {
      for (v in private$.variables) v$assign(0)
      invisible(self)
    },
    get_config = function() list(name = self$name, dtype = self$dtype %||% "float32"),
    print = function(...) {
      cat("<", class(self)[1], " name=", self$name, ">\n", sep = "")
      invisible(self)
    }
  ),
  active = list(variables = function() private$.variables),
  private = list(.variables = NULL)
)

# The initial value of a variable: keras3's initializers zeros, ones and
# constant (by name, object or number).
metric_initial_value <- function(initializer, dims, fn) {
  n <- prod(dims)
  value <- if (is.numeric(initializer) && length(initializer) == 1) {
    initializer
  } else {
    cfg <- initializer_keras_config(as_initializer(initializer %||% "zeros", "initializer", call = NULL))
    switch(cfg$class_name %||% "",
      Zeros = 0,
      Ones = 1,
      Constant = as.numeric(cfg$config$value),
      abort_not_yet("{.fn {fn}}: initializer {.val {cfg$class_name}} is not supported for metric variables yet; use zeros, ones or a constant.",
                    call = NULL))
  }
  out <- rep_len(as.double(value), n)
  if (length(dims) > 1) array(out, dims) else out
}

# ---- Metric() -------------------------------------------------------------------------

#' Define a custom metric class
#'
#' keras3's `Metric()`: a metric class that keeps variables
#' (`self$add_variable()`), accumulates into them in `update_state(y_true,
#' y_pred, sample_weight = NULL)` and computes its value from them in
#' `result()`, written with `op_*` functions. An instance works on R
#' arrays (`m$update_state(y_true, y_pred)`, `m$result()`,
#' `m$reset_state()`), and in [compile.mirrored_model()]'s `metrics =`,
#' where mirrored's core runs it on every replica with no R in the step:
#' `update_state()` is traced into the batch's increments of the variables
#' and `result()` into a function of the variables, evaluated whenever the
#' logs are read.
#'
#' Inside a traced `update_state()`, variables are updated with
#' `assign_add()` / `assign_sub()` of values reduced over the batch axis
#' (`op_sum(values)`): each replica adds what its own rows give and the
#' sums add up, as Keras' metric variables under a `MirroredStrategy`.
#' Reading a variable there, or `assign()`, is a `mirrored_not_yet_error`.
#' `result()` returns one number. `reset_state()` runs once, on R values,
#' when the model is compiled; the variables it leaves are where each
#' epoch starts (Keras' default: zeros). `sample_weight` is `NULL` in
#' `metrics =`; `weighted_metrics =` does not take Metric classes yet.
#'
#' @param classname The class name.
#' @param initialize,update_state,result Methods (see above);
#'   `initialize()` forwards `...` to `super$initialize(...)` (`name`,
#'   `dtype`).
#' @param ...,public Other methods (`reset_state()`, `get_config()`), fields
#'   and active bindings ([mark_active()]).
#' @param private Private fields (R6).
#' @param inherit Not supported yet: must be `NULL`.
#' @param parent_env The environment the methods are defined in.
#' @return A constructor of metric instances: `function(...)`.
#' @family metrics
#' @examples
#' metric_positive_rate <- Metric("PositiveRate",
#'   initialize = function(name = "positive_rate", ...) {
#'     super$initialize(name = name, ...)
#'     self$positives <- self$add_variable(shape = shape(), initializer = "zeros", name = "positives")
#'     self$count <- self$add_variable(shape = shape(), initializer = "zeros", name = "count")
#'   },
#'   update_state = function(y_true, y_pred, sample_weight = NULL) {
#'     self$positives$assign_add(op_sum(op_cast(y_pred > 0.5, "float32")))
#'     self$count$assign_add(op_sum(op_ones_like(y_pred)))
#'   },
#'   result = function() self$positives / self$count
#' )
#' m <- metric_positive_rate()
#' m$update_state(c(1, 0, 1), c(0.9, 0.2, 0.4))
#' m$result()
#' @export
Metric <- function(classname, initialize = NULL, update_state = NULL, result = NULL, ...,
                   public = list(), private = list(), inherit = NULL, parent_env = parent.frame()) {
  fn_call <- sys.call()
  classname <- check_string(classname, "classname", call = fn_call)
  if (!is.null(inherit)) {
    abort_not_yet("{.arg inherit} of {.fn Metric} is not supported yet: a metric class derives from the base Metric.",
                  call = fn_call)
  }
  parts <- class_members("metric", classname,
                         list(initialize = initialize, update_state = update_state, result = result),
                         list(...), public, call = fn_call)
  gen <- do.call(R6::R6Class, list(classname, inherit = CustomMetricBase, public = parts$public,
                                   private = if (length(private)) private,
                                   active = if (length(parts$active)) parts$active,
                                   parent_env = parent_env, lock_objects = FALSE, cloneable = FALSE))
  structure(function(...) gen$new(...), class = c("mirrored_custom_metric_class", "function"),
            classname = classname, generator = gen)
}

#' @rdname Metric
#' @export
new_metric_class <- Metric

#' @export
print.mirrored_custom_metric_class <- function(x, ...) {
  cat("<custom metric class ", attr(x, "classname"), ">\n", sep = "")
  invisible(x)
}

# ---- in compile(metrics =) ----------------------------------------------------------

# The metric object compile() keeps for instance `user` (kind "state").
state_metric <- function(user, call = sys.call(-1)) {
  m <- new_metric("state", class(user)[1], user$name, 0.5, NULL, NULL, call)
  m$user <- user
  m
}

# Runs `body()` with the user's variables in `mode` (values `vals` in
# result mode, the trace context `ctx` in update mode), restoring them
# after.
with_variables_in <- function(user, mode, ctx, vals, body) {
  vars <- user$variables
  saved <- lapply(vars, function(v) list(mode = v$mode, val = v$val, inc = v$inc, ctx = v$ctx))
  on.exit(for (i in seq_along(vars)) {
    vars[[i]]$mode <- saved[[i]]$mode
    vars[[i]]$val <- saved[[i]]$val
    vars[[i]]$inc <- saved[[i]]$inc
    vars[[i]]$ctx <- saved[[i]]$ctx
  })
  for (i in seq_along(vars)) {
    vars[[i]]$mode <- mode
    vars[[i]]$ctx <- ctx
    vars[[i]]$inc <- NULL
    if (!is.null(vals)) vars[[i]]$val <- vals[[i]]
  }
  body(vars)
}

metric_variables_of <- function(m, call) {
  vars <- m$user$variables
  if (!length(vars)) {
    abort_value("Metric {.val {m$name}} ({.cls {m$class_name}}) has no variables: add them with {.code self$add_variable()} in {.fn initialize}.",
                call = call)
  }
  vars
}

# The graph JSON of update_state() on targets of per-sample shape
# `y_shape` and predictions of `p_shape`: one unbatched output, the
# variables' increments flattened in order.
trace_state_update <- function(m, y_shape, p_shape, call) {
  vars <- metric_variables_of(m, call)
  what <- paste0("update_state() of metric ", m$name, " (", m$class_name, ")")
  tr <- trace_function(function(y_true, y_pred) {
    ctx <- y_true$ctx
    ctx$fn <- m$user$update_state  # errors name the line in it
    with_variables_in(m$user, "update", ctx, NULL, function(vars) {
      ys <- same_rank(y_true, y_pred)
      m$user$update_state(ys[[1]], ys[[2]])
      parts <- lapply(vars, function(v) {
        inc <- v$inc %||% trace_add_constant(ctx, array(0, max(1L, prod(v$shape))))
        op_reshape(inc, prod(v$shape))
      })
      if (length(parts) == 1) parts[[1]] else op_concatenate(parts, axis = 1L)
    })
  }, list(list(shape = c(NA_integer_, y_shape)), list(shape = c(NA_integer_, p_shape))), what = what, call = call)
  tr$json
}

# What the core takes besides the update graph: result()'s graph on the
# flattened variables, their count and the values reset_state() leaves.
state_metric_core_spec <- function(m, call) {
  vars <- metric_variables_of(m, call)
  sizes <- vapply(vars, function(v) as.integer(prod(v$shape)), 1L)
  offsets <- cumsum(c(0L, sizes))[seq_along(sizes)]
  what <- paste0("result() of metric ", m$name, " (", m$class_name, ")")
  tr <- trace_function(function(state) {
    state$ctx$fn <- m$user$result  # errors name the line in it
    vals <- lapply(seq_along(vars), function(i) {
      s <- op_slice_(state, offsets[i], sizes[i])
      op_reshape(s, vars[[i]]$shape)
    })
    with_variables_in(m$user, "result", NULL, vals, function(vars) {
      out <- unwrap_metric_variable(m$user$result())
      if (!is_traced_tensor(out)) out <- trace_add_constant(state$ctx, out)
      if (prod(out$shape) != 1) {
        trace_abort(state$ctx, paste0("result() must return one number, not a value of shape ",
                                      format(shape(out$shape)), "."), kind = "not_yet")
      }
      op_reshape(out, integer())
    })
  }, list(list(shape = sum(sizes))), what = what, call = call)
  # reset_state() on R values, from the variables' values now.
  reset <- with_variables_in(m$user, "eager", NULL, lapply(vars, function(v) v$val), function(vars) {
    m$user$reset_state()
    unlist(lapply(vars, function(v) as.double(v$val)))
  })
  list(result_graph = tr$json, state_floats = sum(sizes), reset_values = as.double(reset))
}
