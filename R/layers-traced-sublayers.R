# Layers called inside a custom layer's call() (keras3's sub-layer idiom:
# `self$proj <- layer_dense(units = 32)` in initialize(), `self$proj(x)` in
# call()). While a Layer()'s call() is traced, a layer it calls on a traced
# tensor is written into the same graph with its weights added to the
# graph's weights, after the custom layer's own: Keras' order for a layer's
# weights (its own trainable, its own non-trainable, then each sub-layer's).
# A sub-layer called twice (a loop over time steps) reuses its weights. The
# built-in layers written so are Dense, Dropout (in training steps only), Embedding,
# LayerNormalization (last axis), Activation, Flatten and Reshape, and
# another custom Layer() (its build() and call() run inside the outer
# trace); any other layer, or a model, is a mirrored_not_yet_error naming
# what to use instead.

# TRUE when `x` is a traced tensor or a list holding one.
is_traced_input <- function(x) {
  is_traced_tensor(x) ||
    (is.list(x) && !is.object(x) && any(vapply(x, is_traced_tensor, logical(1))))
}

traced_input_ctx <- function(x) {
  if (is_traced_tensor(x)) return(x$ctx)
  Find(is_traced_tensor, x)$ctx
}

# `layer` (a layer function or Layer object) called on traced `x`.
traced_sublayer_call <- function(layer, x, training, call) {
  ctx <- traced_input_ctx(x)
  obj <- layer_object(layer)
  what <- paste0("layer ", obj$class_name %||% "?", " (", obj$name %||% "?", ")")
  if (is.null(ctx$owner)) {
    trace_abort(ctx, paste0(what, " is called on a traced tensor outside a custom layer's call(); ",
                            "layers can be called inside a Layer()'s call() only."), kind = "not_yet")
  }
  if (!is.null(training) && !identical(training, FALSE)) {
    trace_abort(ctx, paste0(what, ": `training = TRUE` cannot be passed to a layer inside a traced call() yet; ",
                            "pass the call()'s own `training` argument (NULL while tracing): Dropout then drops ",
                            "in training steps only, as in Keras."), kind = "not_yet")
  }
  if (inherits(obj, "mirrored_traced_layer") && !is.null(obj$user)) {
    return(traced_custom_sublayer(ctx, obj$user, x))
  }
  if (is.list(x) && !is_traced_tensor(x)) {
    trace_abort(ctx, paste0(what, " takes one tensor inside a traced call()."), kind = "not_yet")
  }
  cfg <- obj$config
  switch(obj$class_name %||% "",
    Dense = traced_dense(ctx, obj, cfg, x, what),
    LayerNormalization = traced_layer_norm(ctx, obj, cfg, x, what),
    Activation = traced_activation(x, cfg$activation, ctx, what),
    Dropout = traced_dropout(ctx, cfg, x, training),
    Embedding = traced_embedding(ctx, obj, cfg, x, what),
    Flatten = op_reshape(x, c(NA, prod(x$shape[-1]))),
    Reshape = op_reshape(x, c(NA, as.integer(unlist(cfg$target_shape)))),
    trace_abort(ctx, paste0(
      what, " cannot be called inside a custom layer's call() yet (Dense, Dropout, Embedding, LayerNormalization, ",
      "Activation, Flatten, Reshape and custom Layer()s can): apply it to the custom layer's output in the model, ",
      "or write it with op_* functions."), kind = "not_yet")
  )
}

# Keras' Embedding: the rows of its table ("embeddings", input_dim x
# output_dim) at the (0-based) ids of `x`, a "take" node (an index out of
# range is an error, as the built-in layer's).
traced_embedding <- function(ctx, obj, cfg, x, what) {
  if (isTRUE(cfg$mask_zero)) {
    trace_abort(ctx, paste0(what, ": mask_zero = TRUE needs masks, which come with the next layers."), kind = "not_yet")
  }
  check_no_weight_options(ctx, cfg, c("embeddings_regularizer", "activity_regularizer", "embeddings_constraint"), what)
  trainable <- !identical(cfg$trainable, FALSE)
  w <- sublayer_weights(ctx, obj, function() {
    list(list(name = "embeddings", shape = c(as.integer(cfg$input_dim), as.integer(cfg$output_dim)),
              initializer = cfg$embeddings_initializer, trainable = trainable))
  })$tensors
  trace_record(ctx, "take", list(w$embeddings, x), list(axis = 0L), "float32")
}

# Keras' Dropout: one "dropout" node, which drops (and scales the kept
# values by 1 / (1 - rate)) in training steps only, with masks keyed by the
# layer's seed, the step and the sample's global row, as the built-in layer
# (nn/traced_random_ops.cpp); `training = FALSE` makes it the identity.
traced_dropout <- function(ctx, cfg, x, training) {
  rate <- as.numeric(cfg$rate)
  if (identical(training, FALSE) || rate == 0) return(x)
  trace_record(ctx, "dropout", list(x), list(rate = rate, seed = as.integer(cfg$seed)), x$dtype %||% "float32")
}

# The graph weights of sub-layer `key` (its R6 object): list(tensors, pos),
# added to the graph at its first call from `declare()`'s specs (name,
# shape, initializer, trainable; attribute "pos" kept with them).
sublayer_weights <- function(ctx, key, declare) {
  for (s in ctx$sublayers) if (identical(s$key, key)) return(s)
  specs <- declare()
  tensors <- lapply(specs, function(w) trace_add_weight(ctx, w))
  names(tensors) <- vapply(specs, function(w) w$name, "")
  entry <- list(key = key, tensors = tensors, pos = attr(specs, "pos"))
  ctx$sublayers[[length(ctx$sublayers) + 1L]] <- entry
  entry
}

# A sub-layer's regularizers and constraints (config entries `keys`) have
# no place in a traced graph yet.
check_no_weight_options <- function(ctx, cfg, keys, what) {
  if (length(Filter(Negate(is.null), cfg[intersect(names(cfg), keys)]))) {
    trace_abort(ctx, paste0(what, ": regularizers and constraints of a layer inside a custom layer's ",
                            "call() are not supported yet."), kind = "not_yet")
  }
}

traced_dense <- function(ctx, obj, cfg, x, what) {
  check_no_weight_options(ctx, cfg, c("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                                      "kernel_constraint", "bias_constraint"), what)
  d <- x$shape[length(x$shape)]
  if (!length(x$shape) || is.na(d)) {
    trace_abort(ctx, paste0(what, " needs inputs whose last axis is known; got shape ",
                            format(shape(x$shape)), "."), kind = "shape")
  }
  units <- as.integer(cfg$units)
  trainable <- !identical(cfg$trainable, FALSE)
  w <- sublayer_weights(ctx, obj, function() {
    specs <- list(list(name = "kernel", shape = c(d, units), initializer = cfg$kernel_initializer,
                       trainable = trainable))
    if (!identical(cfg$use_bias, FALSE)) {
      specs[[2]] <- list(name = "bias", shape = units, initializer = cfg$bias_initializer,
                         trainable = trainable)
    }
    specs
  })$tensors
  if (w$kernel$shape[1] != d) {
    trace_abort(ctx, paste0(what, " was built for inputs with last axis ", w$kernel$shape[1],
                            " and is now called on shape ", format(shape(x$shape)), "."), kind = "shape")
  }
  y <- op_matmul(x, w$kernel)
  if (!is.null(w$bias)) y <- op_add(y, w$bias)
  traced_activation(y, cfg$activation, ctx, what)
}

# Keras' LayerNormalization over the last axis: (x - mean) / sqrt(var + eps)
# * gamma + beta (gamma, then beta, as Keras builds them); Keras' rms_scaling
# (as the built-in layer, nn/layers/layer_normalization.cpp): x / sqrt(var +
# eps) * gamma.
traced_layer_norm <- function(ctx, obj, cfg, x, what) {
  axis <- unlist(cfg$axis)
  if (length(axis) != 1 || !(axis == -1L || axis == length(x$shape) - 1L)) {
    trace_abort(ctx, paste0(what, ": normalizing over axes other than the last inside a traced call() ",
                            "is not supported yet."), kind = "not_yet")
  }
  check_no_weight_options(ctx, cfg, c("beta_regularizer", "gamma_regularizer", "beta_constraint",
                                      "gamma_constraint"), what)
  d <- x$shape[length(x$shape)]
  rms <- isTRUE(cfg$rms_scaling)
  trainable <- !identical(cfg$trainable, FALSE)
  w <- sublayer_weights(ctx, obj, function() {
    specs <- list()
    if (!identical(cfg$scale, FALSE) || rms) {
      specs[[length(specs) + 1L]] <- list(name = "gamma", shape = d, initializer = cfg$gamma_initializer,
                                          trainable = trainable)
    }
    if (!identical(cfg$center, FALSE) && !rms) {
      specs[[length(specs) + 1L]] <- list(name = "beta", shape = d, initializer = cfg$beta_initializer,
                                          trainable = trainable)
    }
    specs
  })$tensors
  eps <- as.numeric(cfg$epsilon %||% 0.001)
  centered <- op_subtract(x, op_mean(x, axis = -1L, keepdims = TRUE))
  inv <- op_rsqrt(op_add(op_mean(op_square(centered), axis = -1L, keepdims = TRUE), eps))
  y <- op_multiply(if (rms) x else centered, inv)
  if (!is.null(w$gamma)) y <- op_multiply(y, w$gamma)
  if (!is.null(w$beta)) y <- op_add(y, w$beta)
  y
}

# Keras' activation `name` on a traced tensor, with the activation
# functions' defaults (gelu exact, leaky_relu's slope 0.2).
traced_activation <- function(x, name, ctx, what) {
  name <- name %||% "linear"
  switch(name,
    linear = x,
    relu = op_relu(x),
    sigmoid = op_sigmoid(x),
    tanh = op_tanh(x),
    softmax = op_softmax(x),
    log_softmax = op_log_softmax(x),
    gelu = op_gelu(x, approximate = FALSE),
    elu = op_elu(x),
    selu = op_selu(x),
    silu = , swish = op_silu(x),
    leaky_relu = op_leaky_relu(x),
    relu6 = op_relu6(x),
    softplus = op_softplus(x),
    softsign = op_softsign(x),
    hard_sigmoid = op_hard_sigmoid(x),
    hard_silu = , hard_swish = op_hard_silu(x),
    exponential = op_exp(x),
    mish = op_multiply(x, op_tanh(op_softplus(x))),
    trace_abort(ctx, paste0(what, ": activation \"", name, "\" inside a traced call() is not supported yet."),
                kind = "not_yet")
  )
}

# A custom Layer() instance `u` called inside another's call(): built on
# the traced input's shape at its first call, its weights added to the
# graph (trainable first, as for the outer layer), its call() run with its
# weight handles standing for those tensors.
traced_custom_sublayer <- function(ctx, u, x) {
  xs <- if (is_traced_tensor(x)) list(x) else x
  sub <- sublayer_weights(ctx, u, function() {
    if (!isTRUE(u$built)) {
      shapes <- lapply(xs, function(t) shape(t$shape))
      u$build(if (length(shapes) == 1) shapes[[1]] else shapes)
      u$built <- TRUE
    }
    ordered <- trainable_first(u$weight_specs() %||% list())
    out <- ordered$specs
    if (identical(u$trainable, FALSE)) out <- lapply(out, function(w) utils::modifyList(w, list(trainable = FALSE)))
    attr(out, "pos") <- ordered$pos
    out
  })
  call_with_weights(u, xs, function(h) sub$tensors[[sub$pos[h$index]]])
}
