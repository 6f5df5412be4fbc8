# Tracing (issue 15, docs/traced-graphs.md §2): an R function written with
# op_* is called once on traced tensors, and every op it applies is recorded
# as a node of a graph (the JSON of §3) that the core runs in the step. The
# tracing context is an environment collecting the graph's inputs, weights,
# constants and nodes; every node asks the core for its shape when it is
# recorded (cpp_traced_shapes()), so a shape error stops at the op that
# caused it, naming the user's line. The same machinery runs op_* eagerly on
# R arrays: a context with unbatched inputs, evaluated by cpp_traced_eval().

# A new tracing context. `what`: the user's function as errors name it
# ("the loss function", "`call()` of layer Scale"); `fn`: that function (its
# frame locates the user's lines); `eager`: an op_* evaluation on R arrays.
new_trace_context <- function(what = NULL, fn = NULL, eager = FALSE, call = NULL) {
  ctx <- new.env(parent = emptyenv())
  ctx$inputs <- list()
  ctx$input_values <- list()
  ctx$weights <- list()
  ctx$constants <- list()
  ctx$nodes <- list()
  ctx$what <- what
  ctx$fn <- fn
  ctx$eager <- eager
  ctx$call <- call
  ctx
}

# The graph of a context as an R list (the JSON's structure; r_glue.h's
# rules: unnamed lists are arrays, I() keeps length-1 vectors as arrays).
trace_graph_list <- function(ctx, outputs) {
  g <- list(inputs = ctx$inputs)
  if (length(ctx$weights)) g$weights <- ctx$weights
  if (length(ctx$constants)) g$constants <- ctx$constants
  g$nodes <- ctx$nodes
  g$outputs <- outputs
  g
}

trace_json <- function(ctx, outputs) cpp_traced_json(trace_graph_list(ctx, outputs))

ref_json <- function(t) list(t$ref$kind, t$ref$index)

# Appends a graph input of `shape` (NA first: batched) and returns its tensor.
trace_add_input <- function(ctx, shape, dtype = "float32") {
  ctx$inputs[[length(ctx$inputs) + 1L]] <- list(shape = I(as.integer(shape)))
  traced_tensor(ctx, "input", length(ctx$inputs) - 1L, shape, dtype)
}

# Appends graph weight `w` (list(name, shape, initializer, trainable, dtype))
# and returns its traced tensor.
trace_add_weight <- function(ctx, w) {
  entry <- list(name = w$name, shape = I(as.integer(w$shape)))
  if (!is.null(w$initializer)) entry$initializer <- w$initializer
  entry$trainable <- isTRUE(w$trainable %||% TRUE)
  if (!is.null(w$regularizer)) entry$regularizer <- w$regularizer
  if (!is.null(w$constraint)) entry$constraint <- w$constraint
  ctx$weights[[length(ctx$weights) + 1L]] <- entry
  traced_tensor(ctx, "weight", length(ctx$weights) - 1L, as.integer(w$shape), w$dtype %||% "float32")
}

# An R number or array as a constant of the graph (row-major values).
trace_add_constant <- function(ctx, x, arg = "x", call = NULL) {
  dtype <- r_value_dtype(x)
  shape <- r_value_shape(x)
  v <- as.double(row_major(x))
  if (any(!is.finite(v))) {
    abort_not_yet(c("{.arg {arg}}: NA, NaN and infinite numbers cannot be constants of a traced graph yet (JSON has no such numbers).",
                    i = "Use a large finite number (e.g. -1e9 for a mask)."), call = call)
  }
  ctx$constants[[length(ctx$constants) + 1L]] <- list(shape = I(shape), values = I(v))
  traced_tensor(ctx, "constant", length(ctx$constants) - 1L, shape, dtype)
}

# The dtype Keras gives an R value: doubles float32, integers int32, logicals bool.
r_value_dtype <- function(x) {
  if (is.logical(x)) "bool" else if (is.integer(x)) "int32" else "float32"
}

# An R value's shape: its dim, a vector's length, or () for a length-1 vector.
r_value_shape <- function(x) {
  d <- dim(x)
  if (!is.null(d)) return(as.integer(d))
  if (length(x) == 1L) integer() else length(x)
}

# R's column-major values in row-major (C) order.
row_major <- function(x) {
  d <- dim(x)
  if (length(d) >= 2L) as.vector(aperm(x, rev(seq_along(d)))) else as.vector(x)
}

# Records node `op` on operand tensors `ins` with Keras' attributes `attrs`
# (a named list; NULL entries dropped) and returns its traced tensor of
# `dtype`. The core checks the node and gives its shape, or an error naming
# the node's op and the user's line.
trace_record <- function(ctx, op, ins, attrs = list(), dtype = "float32") {
  attrs <- attrs[!vapply(attrs, is.null, logical(1))]
  node <- list(op = op, `in` = lapply(ins, ref_json))
  if (length(attrs)) node$attrs <- attrs
  line <- if (ctx$eager) "" else trace_user_line(ctx)
  if (nzchar(line)) node$line <- line
  ctx$nodes[[length(ctx$nodes) + 1L]] <- node
  index <- length(ctx$nodes) - 1L
  shapes <- tryCatch(
    cpp_traced_shapes(trace_json(ctx, list(list("node", index)))),
    error = function(e) {
      ctx$nodes[[index + 1L]] <- NULL
      trace_core_error(ctx, e)
    })
  traced_tensor(ctx, "node", index, shapes$nodes[[index + 1L]]$shape, dtype)
}

# A core error (message "[mirrored:<kind>] ...") raised while recording: a
# mirrored_trace_error (also mirrored_<kind>_error) when tracing a user's
# function, the plain classed error of the op_* call when eager.
trace_core_error <- function(ctx, e) {
  msg <- conditionMessage(e)
  m <- regmatches(msg, regexec("^\\[mirrored:([a-z]+)\\] (.*)$", msg))[[1]]
  if (length(m) != 3) stop(e)
  if (ctx$eager) {
    cli::cli_abort("{m[3]}", class = c(paste0("mirrored_", m[2], "_error"), "mirrored_error"),
                   call = ctx$call)
  }
  trace_abort(ctx, m[3], kind = m[2])
}

# A mirrored_trace_error naming the user's function, the line being
# evaluated in it and `why`. `kind`: the mirrored error kind it also is.
trace_abort <- function(ctx, why, kind = "value", cond_call = NULL, generic = NULL) {
  line <- trace_user_line(ctx, cond_call, generic)
  where <- paste0(ctx$what %||% "the traced function", if (nzchar(line)) paste0(", at ", line))
  cli::cli_abort(c("Cannot trace {where}: {why}"),
                 class = c("mirrored_trace_error", paste0("mirrored_", kind, "_error"), "mirrored_error"),
                 call = ctx$call, line = line, why = why)
}

# The user's line being evaluated: the call the traced function (or a
# helper of the user's it called) is evaluating, found on the stack below
# the traced function's frame. With source references (keep.source, source(),
# RStudio, testthat) it is "file#line: <call>", otherwise the deparsed call;
# "" when the traced function is not on the stack. `generic`: the name of a
# group generic whose method raises. `cond_call`: the call of
# a base error being handled (the `if (...)` that failed), shown in place of
# R's handler call, whose srcref is the user's statement.
trace_user_line <- function(ctx, cond_call = NULL, generic = NULL) {
  fn <- ctx$fn
  if (is.null(fn)) return("")
  n <- sys.nframe()
  i <- 0L
  for (k in seq_len(n)) {
    if (identical(sys.function(k), fn)) {
      i <- k
      break
    }
  }
  if (i == 0L || i >= n) return("")
  repeat {
    i <- i + 1L
    cl <- sys.call(i)
    if (is.call(cl) && identical(cl[[1]], quote(.handleSimpleError))) {
      return(format_user_call(cond_call %||% cl, attr(cl, "srcref")))
    }
    callee <- sys.function(i)
    # A helper the user wrote (not in a package namespace): the line in it.
    user_helper <- is.function(callee) && !is.primitive(callee) && i < n &&
      !isNamespace(topenv(environment(callee))) && !identical(callee, fn)
    if (!user_helper) {
      # A group generic's method frame shows the method's name: the
      # user wrote the generic (cumsum(x), not Math.mirrored_traced_tensor(x)).
      if (!is.null(generic) && is.call(cl) && is.symbol(cl[[1]]) &&
          grepl("^(Math|Ops|Summary)\\.mirrored_traced_tensor$", as.character(cl[[1]]))) {
        cl[[1]] <- as.symbol(generic)
      }
      return(format_user_call(cl, attr(cl, "srcref")))
    }
  }
}

format_user_call <- function(cl, sr) {
  text <- paste(trimws(deparse(cl, width.cutoff = 500L)), collapse = " ")
  if (nchar(text) > 100L) text <- paste0(substr(text, 1L, 97L), "...")
  if (is.null(sr)) return(text)
  file <- attr(sr, "srcfile")$filename %||% ""
  file <- if (nzchar(file)) basename(file) else "<text>"
  paste0(file, "#", sr[[1]], ": ", text)
}

#' Traces `fn` into a graph (internal; the layer, loss and metric code builds
#' on it).
#'
#' @param fn The user's function, called once on traced tensors.
#' @param inputs A list of `list(shape = c(NA, 10), dtype = "float32")`: NA
#'   first makes a batched input, fixed dims an unbatched one.
#' @param weights A list of `list(name, shape, initializer, trainable,
#'   bind)`: graph weights, in `add_weight()` order. `fn` reaches them as
#'   traced tensors it closes over (a layer's `self$w`): before `fn` is
#'   called, each weight's `bind` (a function, optional) is called with its
#'   traced tensor, e.g. `bind = function(t) self$w <- t`.
#' @param what The user's function as errors name it.
#' @param call The user-facing call errors are attributed to.
#' @return `list(graph = <the JSON as an R list>, json = <string>, outputs =
#'   list of list(shape, dtype), weights = <the weights' traced tensors>)`.
#' @noRd
trace_function <- function(fn, inputs, weights = list(), what, call, owner = NULL) {
  ctx <- new_trace_context(what = what, fn = fn, eager = FALSE, call = call)
  # The custom layer whose call() is traced: layers it calls add their
  # weights to the graph (R/layers-traced-sublayers.R), also when they are
  # called on R arrays there (current_layer_trace()).
  ctx$owner <- owner
  if (!is.null(owner)) {
    layer_traces$stack <- c(layer_traces$stack, list(ctx))
    on.exit(layer_traces$stack <- utils::head(layer_traces$stack, -1L), add = TRUE)
  }
  ctx$sublayers <- list()
  xs <- lapply(inputs, function(i) trace_add_input(ctx, i$shape, i$dtype %||% "float32"))
  ws <- lapply(weights, function(w) {
    t <- trace_add_weight(ctx, w)
    if (is.function(w$bind)) w$bind(t)
    t
  })
  ctx$weight_tensors <- ws
  result <- withCallingHandlers(
    do.call(fn, xs),
    error = function(e) {
      if (inherits(e, "mirrored_error")) return()
      trace_base_error(ctx, e)
    })
  outs <- if (is_traced_tensor(result)) list(result) else result
  if (!is.list(outs) || !length(outs) || !all(vapply(outs, is_traced_tensor, logical(1)))) {
    trace_abort(ctx, paste0("it must return a tensor computed with op_* functions (or a list of them), ",
                            "not ", describe(result), "."))
  }
  refs <- lapply(outs, function(t) {
    if (!identical(t$ctx, ctx)) trace_abort(ctx, "it returned a tensor of another traced function.")
    # Outputs are nodes or inputs: a weight or constant goes through an
    # identity reshape (a view; gradients flow).
    if (t$ref$kind %in% c("weight", "constant")) {
      t <- trace_record(ctx, "reshape", list(t), list(shape = I(as.integer(t$shape))), t$dtype)
    }
    list(t, ref_json(t))
  })
  graph <- trace_graph_list(ctx, lapply(refs, `[[`, 2L))
  list(graph = graph, json = cpp_traced_json(graph),
       outputs = lapply(refs, function(r) list(shape = r[[1]]$shape, dtype = r[[1]]$dtype)),
       weights = ws)
}

# A base R error raised while the user's function runs on traced tensors:
# `if (tensor)`, `&&`, or a function that is not an op (colSums(), cumsum()
# through an internal generic, ...) -- a mirrored_trace_error naming it.
trace_base_error <- function(ctx, e) {
  cl <- conditionCall(e)
  head <- if (is.call(cl) && is.symbol(cl[[1]])) as.character(cl[[1]]) else ""
  why <- if (head %in% c("if", "while")) {
    paste0("`", head, "` reads the value of a traced tensor, which is only known when the graph runs ",
           "(use op_where() to choose between values).")
  } else if (head %in% c("&&", "||")) {
    paste0("`", head, "` reads the value of a traced tensor (use `&` / `|` or op_where()).")
  } else if (nzchar(head) && head %in% getNamespaceExports(topenv(environment(trace_base_error)))) {
    # An op called wrongly (an unknown argument, a missing one): R's message.
    paste0("`", head, "()`: ", conditionMessage(e))
  } else if (head == "%*%") {
    "`%*%` is not an op on traced tensors: use op_matmul()."
  } else if (nzchar(head)) {
    paste0("`", head, "()` is not an op: only op_* functions, R's arithmetic and comparison ",
           "operators and `[` work on traced tensors (", head, "() said: ", conditionMessage(e), ").")
  } else {
    conditionMessage(e)
  }
  trace_abort(ctx, why, cond_call = cl)
}

# The custom layers' call()s being traced, innermost last: a layer called
# on an R array inside one (positions from op_arange() fed to an
# Embedding) is written into that trace with the array as a constant, not
# run eagerly with weights of its own.
layer_traces <- new.env(parent = emptyenv())
layer_traces$stack <- list()

current_layer_trace <- function() {
  n <- length(layer_traces$stack)
  if (n) layer_traces$stack[[n]] else NULL
}
