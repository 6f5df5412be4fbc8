# Models as layers (keras3's nested models).
#
# keras_model() and keras_model_sequential() return a function holding the
# model's R6 object, as layers do (R/layer.R): `inner(x)` calls the model on
# symbolic tensors, and `$`, `$<-`, `[[` and print() forward to the R6 object,
# so `model$layers`, `model |> fit()` and the S3 generics keep working. The
# function's classes are c("mirrored_model_function", <the model's classes
# but "R6">, "function"): inherits(m, "mirrored_model") holds for both forms.
#
# Calling a model inlines its layers into the caller's graph: each node of
# the inner graph becomes a node of the outer one, calling the same layer
# object, so a model called twice (or a model and its layers used directly)
# shares its weights through the shared-layer mechanism. Every inlined node
# carries a `scope` (an environment shared by the nodes of one call: the
# model, the call's id, its input and output tensors), from which summary(),
# model$layers and the .keras writer show the call as one layer. The inner
# model's weights are copied into the outer model when the outer one is
# built (nested_start_weights(); an unbuilt inner model is built then, so
# both start equal). The two models then hold separate replicas: while the
# outer model trains, the inner object keeps its weights; at the end of
# fit() and when weights are loaded into the outer model they are copied
# back into it (sync_nested_weights()). Keras shares the variables
# themselves; weights set on the inner object later do not reach an outer
# model already built.

as_model_function <- function(model) {
  if (inherits(model, "mirrored_model_function")) return(model)
  # Made once, so that a model is always the same (identical) function; a
  # clone() gets its own.
  if (is.null(model$fn) || !identical(environment(unclass(model$fn))$model, model)) {
    model$fn <- make_model_function(model)
  }
  model$fn
}

make_model_function <- function(model) {
  force(model)
  f <- function(inputs, ...) {
    call <- sys.call()
    training <- call_training_arg(list(...), "model", model$name, call)
    if (missing(inputs)) {
      abort_value("Model {.val {model$name}} must be called on a symbolic tensor (or a list of them).",
                  call = call)
    }
    # keras3: a model called on a sequential model is added to it as a layer.
    if (inherits(inputs, "mirrored_sequential")) {
      inputs$add(model)
      return(invisible(inputs))
    }
    if (is_traced_input(inputs)) {
      trace_abort(traced_input_ctx(inputs), paste0(
        "model ", model$name, " cannot be called inside a traced call() yet: call its layers ",
        "(Dense, Activation, custom Layer()s) there, or apply the model to the custom layer's output."),
        kind = "not_yet")
    }
    if (is_eager_input(inputs)) return(eager_model_call(model, inputs, training, call))
    call_model(model, inputs, training = training, call = call)
  }
  class(f) <- c("mirrored_model_function", setdiff(class(model), "R6"), "function")
  f
}

# The model (R6) object behind either form.
model_object <- function(x) {
  if (inherits(x, "mirrored_model_function")) environment(unclass(x))$model else x
}

#' @export
`$.mirrored_model_function` <- function(x, name) model_object(x)[[name]]

#' @export
`[[.mirrored_model_function` <- function(x, i, ...) model_object(x)[[i]]

#' @export
`$<-.mirrored_model_function` <- function(x, name, value) {
  m <- model_object(x)
  m[[name]] <- value
  x
}

#' @export
`[[<-.mirrored_model_function` <- function(x, i, value) {
  m <- model_object(x)
  m[[i]] <- value
  x
}

#' @export
print.mirrored_model_function <- function(x, ...) {
  print(model_object(x))
  invisible(x)
}

#' @export
format.mirrored_model_function <- function(x, ...) {
  paste0("<", keras_model_class(model_object(x)), " name=", x$name, ">")
}

#' @export
names.mirrored_model_function <- function(x) names(model_object(x))

# Keras' class name of a model seen as a layer.
keras_model_class <- function(model) {
  if (inherits(model, "mirrored_sequential")) "Sequential" else "Functional"
}

# `x`: one symbolic tensor, or a list of them (one per input of the model).
# Returns the output tensor, or a list of them (named as the model's outputs
# when keras_model() was given a named list).
call_model <- function(model, x, training = NULL, call = sys.call(-1)) {
  model <- model_object(model)
  xs <- if (is_keras_tensor(x)) list(x) else x
  if (!is.list(xs) || inherits(xs, "mirrored_model") || !length(xs) ||
      !all(vapply(xs, is_keras_tensor, logical(1)))) {
    abort_value("Model {.val {model$name}} can only be called on a symbolic tensor (or a list of them), not {describe(x)}.",
                call = call)
  }
  xs <- unname(xs)
  if (inherits(model, "mirrored_sequential") && is.null(model$graph())) {
    if (!length(model$layers)) {
      abort_value("Sequential model {.val {model$name}} has no layers; it cannot be called.", call = call)
    }
    if (length(xs) == 1) model$build(xs[[1]]$shape)
  }
  g <- model$graph()
  if (is.null(g)) {
    abort_value("Model {.val {model$name}} has no input shape yet and cannot be called; give it {.arg input_shape}.",
                call = call)
  }
  if (length(xs) != length(g$inputs)) {
    abort_value("Model {.val {model$name}} takes {length(g$inputs)} input{?s}, but it was called on {length(xs)} tensor{?s}.",
                call = call)
  }
  fmt <- function(s) paste0("(None", paste0(", ", s, collapse = ""), ")")
  for (j in seq_along(xs)) {
    want <- g$nodes[[g$inputs[j] + 1L]]$shape
    if (!identical(as.integer(xs[[j]]$shape), as.integer(want))) {
      abort_kind("shape", c("Model {.val {model$name}}: input {j} ({.val {g$nodes[[g$inputs[j] + 1L]]$layer$name}}) expects shape {fmt(want)}, but it was called on a tensor of shape {fmt(xs[[j]]$shape)}."),
                 call = call)
    }
  }
  if (any(g$outputs %in% g$inputs)) {
    abort_not_yet("Model {.val {model$name}} returns one of its inputs unchanged; calling such a model is not supported yet.",
                  call = call)
  }
  if (isTRUE(training)) {
    abort_not_yet("Calling model {.val {model$name}} with {.code training = TRUE} is not supported yet: give {.code training = FALSE} (inference mode in every pass) or leave it out.",
                  call = call)
  }
  scope <- new.env(parent = emptyenv())
  scope$model <- model
  scope$id <- next_node_id()
  scope$inputs <- xs
  scope$training <- training
  out <- vector("list", length(g$nodes))
  out[g$inputs + 1L] <- xs
  for (k in seq_along(g$nodes)) {
    n <- g$nodes[[k]]
    if (!is.null(out[[k]])) next
    # A call's own training argument wins over the enclosing call's (Keras).
    t <- keras_tensor(n$layer, out[n$inputs + 1L], n$shape, n$training %||% training)
    t$node$scope <- scope
    out[[k]] <- t
  }
  outs <- out[g$outputs + 1L]
  scope$outputs <- outs
  if (length(outs) == 1 && is.null(g$output_names)) return(outs[[1]])
  if (!is.null(g$output_names)) names(outs) <- g$output_names
  outs
}

# The entries of a graph as keras3 lists them in model$layers and summary():
# each node of a layer, and each call of a nested model as one entry.
# Fields: model (or NULL), layer (or NULL), nodes (1-based node indices),
# inputs / outputs (0-based node indices), owner (the first call of that
# layer or model), call_index (Keras' node_index).
graph_entries <- function(g) {
  shares <- graph_shares(g)
  calls <- node_call_index(shares)
  entries <- list()
  seen_scopes <- list()
  model_calls <- list()
  for (k in seq_along(g$nodes)) {
    n <- g$nodes[[k]]
    sc <- n$scope
    if (is.null(sc)) {
      entries[[length(entries) + 1L]] <- list(model = NULL, layer = n$layer, nodes = k, inputs = n$inputs,
                                              outputs = k - 1L, owner = shares[k] < 0, call_index = calls[k])
      next
    }
    if (any(vapply(seen_scopes, identical, logical(1), sc))) next
    seen_scopes[[length(seen_scopes) + 1L]] <- sc
    members <- which(vapply(g$nodes, function(m) identical(m$scope, sc), logical(1)))
    prev <- sum(vapply(model_calls, identical, logical(1), sc$model))
    model_calls[[length(model_calls) + 1L]] <- sc$model
    ids <- vapply(g$nodes, function(m) m$id %||% NA_integer_, integer(1))
    entries[[length(entries) + 1L]] <- list(
      model = sc$model, layer = NULL, nodes = members,
      inputs = match(vapply(sc$inputs, function(t) t$node$id, integer(1)), ids) - 1L,
      outputs = match(vapply(sc$outputs, function(t) t$node$id, integer(1)), ids) - 1L,
      owner = prev == 0, call_index = prev)
  }
  entries
}

# How each node is referred to by the nodes it feeds (Keras' keras_history):
# the name of its layer or of the model call it belongs to, that call's
# node_index and the tensor's index among the call's outputs.
graph_node_refs <- function(g, entries = graph_entries(g)) {
  refs <- vector("list", length(g$nodes))
  for (e in entries) {
    name <- if (is.null(e$model)) e$layer$name else e$model$name
    for (j in seq_along(e$outputs)) refs[[e$outputs[j] + 1L]] <- list(name = name, call = e$call_index, tensor = j - 1L)
  }
  refs
}

# The user-facing form of a graph entry (model$layers).
entry_object <- function(e) {
  if (is.null(e$model)) as_layer_function(e$layer) else as_model_function(e$model)
}

# Start weights of the layers of the models nested in graph `g`: a list of
# list(layer, weights) for each layer of each nested model, from the nested
# model's current weights (a trained or loaded model keeps what it learned).
nested_start_weights <- function(g) {
  out <- list()
  models <- list()
  for (n in g$nodes) {
    m <- n$scope$model
    if (is.null(m) || any(vapply(models, identical, logical(1), m))) next
    models[[length(models) + 1L]] <- m
    mg <- m$graph()
    # An unbuilt nested model is built here, so that the outer model and the
    # inner one start from the same weights whichever is used first.
    w <- m$get_weights()
    counts <- graph_weight_counts(mg)
    shares <- graph_shares(mg)
    offset <- 0L
    for (k in seq_along(mg$nodes)) {
      if (shares[k] >= 0 || counts[k] == 0) next
      out[[length(out) + 1L]] <- list(layer = mg$nodes[[k]]$layer, weights = w[offset + seq_len(counts[k])])
      offset <- offset + counts[k]
    }
  }
  out
}

# Number of weight arrays of each node's layer (0 for a shared layer's
# later calls, which use the first call's).
graph_weight_counts <- function(g) {
  shares <- graph_shares(g)
  vapply(seq_along(g$nodes), function(k) {
    n <- g$nodes[[k]]
    if (!length(n$inputs) || shares[k] >= 0) return(0L)
    length(n$layer$spec(lapply(n$inputs, function(i) g$nodes[[i + 1L]]$shape))$weights$shape %||% list())
  }, integer(1))
}

# After the core model of `model` was created with fresh weights: the layers
# of built nested models start from those models' weights.
apply_nested_start_weights <- function(model) {
  g <- model$graph()
  if (!any(vapply(g$nodes, function(n) !is.null(n$scope), logical(1)))) return(invisible())
  start <- nested_start_weights(g)
  if (!length(start)) return(invisible())
  w <- model$get_weights()
  counts <- graph_weight_counts(g)
  offset <- 0L
  for (k in seq_along(g$nodes)) {
    if (counts[k] == 0) next
    for (s in start) {
      if (identical(s$layer, g$nodes[[k]]$layer)) {
        w[offset + seq_len(counts[k])] <- s$weights
        break
      }
    }
    offset <- offset + counts[k]
  }
  model$set_weights(w)
  invisible()
}

# Copies the weights of `model`'s layers back into the model objects nested
# in it (and theirs), so that after fit() or a load the nested model holds
# what the outer one learned, as a Keras model sharing its variables would.
sync_nested_weights <- function(model) {
  g <- model$graph()
  if (is.null(g) || !model$is_built() || !any(vapply(g$nodes, function(n) !is.null(n$scope), logical(1)))) {
    return(invisible())
  }
  w <- model$get_weights()
  counts <- graph_weight_counts(g)
  offsets <- cumsum(c(0L, counts))
  models <- list()
  for (n in g$nodes) {
    m <- n$scope$model
    if (is.null(m) || any(vapply(models, identical, logical(1), m))) next
    models[[length(models) + 1L]] <- m
    mg <- m$graph()
    mw <- m$get_weights()
    mcounts <- graph_weight_counts(mg)
    moff <- 0L
    for (k in seq_along(mg$nodes)) {
      if (mcounts[k] == 0) next
      at <- which(counts > 0 & vapply(g$nodes, function(t) identical(t$layer, mg$nodes[[k]]$layer), logical(1)))
      if (length(at)) mw[moff + seq_len(mcounts[k])] <- w[offsets[at[1]] + seq_len(mcounts[k])]
      moff <- moff + mcounts[k]
    }
    m$set_weights(mw)
    sync_nested_weights(m)
  }
  invisible()
}
