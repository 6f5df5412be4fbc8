# Keras 3 configs: what `config.json` of a .keras archive holds, written
# exactly as Keras 3 writes it (module, class_name, config, registered_name,
# build_config, compile_config) for Functional and Sequential models of the
# layers mirrored has, and read back into mirrored models. Reading never
# evaluates anything from the file: class names are looked up in fixed
# tables (or in `custom_objects`, R functions the caller supplies).
#
# JSON conventions (see src/r_saving.cpp): named list = object, unnamed list
# = array, length-1 atomic = scalar, NULL = null; integers are written as
# integer literals and doubles as Python floats, so counts must be integers.

keras_version_written <- "3.15.1"

dtype_policy_config <- function(name = "float32") dtype_policy_keras_config(name)

# [null, d1, d2, ...] for a per-sample shape.
batch_shape_json <- function(shape) c(list(NULL), as.list(as.integer(shape)))

# Python's keras.src.utils.naming.to_snake_case.
to_snake_case <- function(name) {
  s <- gsub("(.)([A-Z][a-z]+)", "\\1_\\2", name, perl = TRUE)
  s <- gsub("([a-z])([A-Z])", "\\1_\\2", s, perl = TRUE)
  tolower(s)
}

# ---- writing ------------------------------------------------------------------

# How Keras 3 names a layer's class in a file: a built-in one by its module;
# a custom class (a Layer() class, whose graph mirrored keeps under
# "mirrored_graph") as Keras writes an unregistered custom class, with no
# module and its class name as registered name (custom_objects finds it).
layer_keras_identity <- function(layer) {
  custom <- (inherits(layer, "mirrored_traced_layer") || !is.null(layer$config$mirrored_graph)) &&
    layer$class_name != "Lambda"
  list(module = if (custom) NULL else "keras.layers", class_name = layer$class_name,
       registered_name = if (custom) custom_layer_registered_name(layer$class_name) else NULL)
}

# The name a Layer() class is registered under (register_keras_serializable():
# "package>name"), else its class name, as Keras writes registered_name.
custom_layer_registered_name <- function(class_name) {
  registered_names(function(o) {
    inherits(o, "mirrored_custom_layer_class") && identical(attr(o, "classname"), class_name)
  })$full %||% class_name
}

# A serialized layer (the entry in the model's "layers" list). `calls`
# (functional models): one entry per call of the layer, each a list of its
# input tensors (name, shape, node_index, tensor: the producing layer or
# model, which of its calls produced the tensor, and which of that call's
# outputs it is).
layer_entry <- function(layer, input_shape, functional, calls = NULL) {
  e <- layer_keras_identity(layer)
  e$config <- layer$config
  e <- e[c("module", "class_name", "config", "registered_name")]
  if (layer$class_name != "InputLayer") {
    e$build_config <- list(input_shape = if (is.list(input_shape)) lapply(input_shape, batch_shape_json)
                           else batch_shape_json(input_shape))
  }
  if (functional) {
    e$name <- layer$name
    e$inbound_nodes <- inbound_nodes_json(calls, stats::setNames(list(), character()))
  }
  e
}

# The inbound_nodes of a layer or model entry: one per call.
inbound_nodes_json <- function(calls, kwargs) {
  lapply(calls, function(history) {
    tensors <- lapply(history, function(h) {
      list(class_name = "__keras_tensor__",
           config = list(shape = batch_shape_json(h$shape), dtype = "float32",
                         keras_history = list(h$name, as.integer(h$node_index), as.integer(h$tensor %||% 0L))))
    })
    # A layer of several inputs is called on one list of tensors.
    kw <- kwargs
    if (!is.null(attr(history, "training"))) kw <- c(list(training = attr(history, "training")), kw)
    list(args = if (length(tensors) == 1) tensors else list(tensors), kwargs = kw)
  })
}

# A model nested in a model, as Keras 3 serializes it: the model's full
# config (as in config.json) with an empty compile_config (Keras writes one
# for a nested model even when it was never compiled), and in a functional
# model its name and the inbound_nodes of its calls (kwargs mask = null).
nested_model_entry <- function(model, functional, calls = NULL) {
  e <- model_keras_config(model)
  e$compile_config <- if (!is.null(model$optimizer)) compile_keras_config(model)
                      else stats::setNames(list(), character())
  if (functional) {
    e$name <- model$name
    e$inbound_nodes <- inbound_nodes_json(calls, list(mask = NULL))
  }
  e
}

# optimizer_keras_config(): R/optimizers-keras.R

metric_keras_config <- function(m) {
  if (!is.null(m$string)) return(m$string)
  if (m$kind == "traced") return(traced_keras_config(m))
  if (m$kind == "state") {  # a Metric() class, as Keras writes an unregistered custom class
    return(list(module = NULL, class_name = m$class_name, config = m$user$get_config(),
                registered_name = m$class_name))
  }
  if (m$name %in% c("accuracy", "acc")) return(m$name)
  cfg <- c(list(name = m$name, dtype = if (m$kind == "mean_iou") "int64" else "float32"), m$config)
  list(module = "keras.metrics", class_name = m$class_name, config = cfg, registered_name = NULL)
}

compile_keras_config <- function(model) {
  outs <- model$compiled_outputs
  if (length(outs) > 1) {
    # Several outputs: a list in output order, or a dict by output name when
    # compile() was given names (Keras writes what it was given).
    named <- !is.null(names(model$loss))
    keyed <- function(x) if (named) stats::setNames(x, vapply(outs, function(o) o$name, "")) else x
    loss <- keyed(lapply(outs, function(o) loss_keras_config(o$loss)))
    # weighted_metrics (compile()'s argument) apart from metrics.
    of <- function(o, weighted) Filter(function(m) isTRUE(m$weighted) == weighted, o$metrics)
    per <- function(weighted) {
      if (any(vapply(outs, function(o) length(of(o, weighted)) > 0, logical(1))))
        keyed(lapply(outs, function(o) lapply(of(o, weighted), metric_keras_config)))
    }
    metrics <- per(FALSE)
    weighted <- per(TRUE)
    weights <- if (!is.null(model$loss_weights)) keyed(lapply(outs, function(o) o$weight))
  } else {
    loss <- loss_keras_config(model$loss)
    ms <- outs[[1]]$metrics
    is_w <- vapply(ms, function(m) isTRUE(m$weighted), logical(1))
    metrics <- if (any(!is_w)) lapply(ms[!is_w], metric_keras_config)
    weighted <- if (any(is_w)) lapply(ms[is_w], metric_keras_config)
    weights <- if (!is.null(model$loss_weights)) outs[[1]]$weight
  }
  # Keras records the optimizer given to compile(), not the one
  # auto_scale_loss wrapped it in.
  opt <- model$optimizer
  if (isTRUE(opt$auto)) opt <- opt$inner_optimizer
  list(optimizer = optimizer_keras_config(opt), loss = loss,
       loss_weights = weights, metrics = metrics, weighted_metrics = weighted, run_eagerly = FALSE,
       steps_per_execution = 1L, jit_compile = FALSE)
}

# The inner config of a model (what get_config() returns).
model_inner_config <- function(model) {
  g <- model$graph()
  if (inherits(model, "mirrored_sequential")) {
    cfg <- list(name = model$name, trainable = isTRUE(model$trainable), dtype = dtype_policy_config(model$dtype_policy))
    if (is.null(g)) {
      cfg$layers <- lapply(model$layers, function(l) {
        if (inherits(l, "mirrored_model")) return(nested_model_entry(l, FALSE))
        e <- layer_keras_identity(l)
        list(module = e$module, class_name = e$class_name, config = l$config, registered_name = e$registered_name)
      })
      return(cfg)
    }
    nodes <- g$nodes
    cfg$layers <- lapply(graph_entries(g), function(e) {
      if (!is.null(e$model)) return(nested_model_entry(e$model, FALSE))
      layer_entry(e$layer, if (length(e$inputs)) nodes[[e$inputs[1] + 1]]$shape, FALSE)
    })
    cfg$build_input_shape <- batch_shape_json(nodes[[1]]$shape)
    return(cfg)
  }
  nodes <- g$nodes
  entries <- graph_entries(g)
  refs <- graph_node_refs(g, entries)
  key <- function(e) if (is.null(e$model)) e$layer else e$model
  layers <- lapply(Filter(function(e) e$owner, entries), function(e) {
    calls <- Filter(function(f) identical(key(f), key(e)), entries)
    hist <- lapply(calls, function(f) {
      h <- lapply(f$inputs, function(i) {
        r <- refs[[i + 1]]
        list(name = r$name, shape = nodes[[i + 1]]$shape, node_index = r$call, tensor = r$tensor)
      })
      # keras3's training argument of the call (a model call's, or a layer's).
      n1 <- nodes[[f$nodes[1]]]
      attr(h, "training") <- if (!is.null(f$model)) n1$scope$training else n1$training
      h
    })
    if (!is.null(e$model)) return(nested_model_entry(e$model, TRUE, hist))
    in_shape <- if (length(e$inputs) == 1) nodes[[e$inputs[1] + 1]]$shape
                else if (length(e$inputs) > 1) lapply(e$inputs, function(i) nodes[[i + 1]]$shape)
    layer_entry(e$layer, in_shape, TRUE, if (length(e$inputs)) hist else list())
  })
  # input_layers/output_layers count a nested Functional model's calls from
  # 1 (Keras' functional models own a node of their own before any call);
  # Sequential models and layers count from 0.
  functional_call <- vapply(seq_along(nodes), function(k) {
    sc <- nodes[[k]]$scope
    !is.null(sc) && !inherits(sc$model, "mirrored_sequential")
  }, logical(1))
  ref <- function(i) {
    r <- refs[[i + 1]]
    list(r$name, as.integer(r$call + functional_call[i + 1]), as.integer(r$tensor))
  }
  triple <- function(idx) {
    t <- lapply(idx, ref)
    if (length(t) == 1) t[[1]] else t
  }
  outputs <- triple(g$outputs)
  # Named outputs are Keras' dict outputs: output_layers is a dict by name.
  if (!is.null(g$output_names)) outputs <- stats::setNames(lapply(g$outputs, ref), g$output_names)
  list(name = model$name, trainable = isTRUE(model$trainable), layers = layers, input_layers = triple(g$inputs),
       output_layers = outputs)
}

# The full serialized model (config.json).
model_keras_config <- function(model) {
  inner <- model_inner_config(model)
  seq <- inherits(model, "mirrored_sequential")
  out <- list(module = if (seq) "keras" else "keras.src.models.functional",
              class_name = if (seq) "Sequential" else "Functional", config = inner,
              registered_name = if (seq) NULL else "Functional")
  out["registered_name"] <- list(if (seq) NULL else "Functional")
  out$build_config <- if (seq) {
    if (!is.null(inner$build_input_shape)) list(input_shape = inner$build_input_shape)
  } else {
    list(input_shape = NULL)
  }
  if (!is.null(model$optimizer)) out$compile_config <- compile_keras_config(model)
  out
}

# ---- reading ------------------------------------------------------------------

# Raised for anything in a file mirrored cannot rebuild.
abort_config <- function(what, message, ..., .envir = parent.frame()) {
  abort_kind("io", c(paste0("{what}: ", message)), ..., call = NULL, .envir = .envir)
}

cfg_get <- function(cfg, key, default = NULL) {
  if (is.list(cfg) && key %in% names(cfg)) cfg[[key]] else default
}

check_null_options <- function(cfg, keys, cls, what) {
  for (k in keys) {
    if (!is.null(cfg_get(cfg, k))) {
      abort_config(what, "{.val {cls}} option {.field {k}} is not supported by mirrored (it must be null).")
    }
  }
}

# A mirrored layer from a serialized layer entry: the core's registry reads
# the config (every key checked); what it cannot take becomes an io error
# naming the file.
layer_from_keras <- function(entry, custom_objects, what) {
  cls <- cfg_get(entry, "class_name")
  cfg <- cfg_get(entry, "config", list())
  if (!is.character(cls) || length(cls) != 1) abort_config(what, "a layer entry has no {.field class_name}.")
  if (inherits(custom_objects[[cls]], "mirrored_custom_layer_class")) {
    return(custom_layer_from_config(custom_objects[[cls]], cls, cfg))
  }
  if (!is.null(custom_objects[[cls]])) {
    layer <- layer_object(custom_objects[[cls]](cfg))
    if (!inherits(layer, "mirrored_layer")) {
      abort_value("{.arg custom_objects}${cls} must return a layer, not {describe(layer)}.")
    }
    return(layer)
  }
  name <- cfg_get(cfg, "name")
  if (!is.character(name) || length(name) != 1) abort_config(what, "layer of class {.val {cls}} has no name.")
  # A nested model: its full config is in the entry (Keras 3's layout).
  if (cls %in% c("Functional", "Sequential", "Model")) return(model_from_keras(cls, cfg, custom_objects, what))
  tryCatch(LayerNode$new(cls, cfg), mirrored_error = function(e) {
    abort_config(what, "layer {.val {name}}: {conditionMessage(e)}")
  })
}

input_shape_from_keras <- function(cfg, what) {
  bs <- cfg_get(cfg, "batch_shape") %||% cfg_get(cfg, "batch_input_shape")
  if (!is.list(bs) || length(bs) < 2) abort_config(what, "InputLayer {.val {cfg$name}} has no batch_shape.")
  dims <- bs[-1]
  # null: a variable-length axis (NA; one per input, as keras_input() takes).
  unknown <- vapply(dims, is.null, logical(1))
  if (any(vapply(dims[!unknown], function(d) !is.numeric(d) || length(d) != 1 || d < 1, logical(1)))) {
    abort_config(what, "InputLayer {.val {cfg$name}} has a shape with dimensions that are neither sizes nor null.")
  }
  if (sum(unknown) > 1) {
    abort_config(what, "InputLayer {.val {cfg$name}} has {sum(unknown)} variable-length axes; mirrored supports one per input yet.")
  }
  vapply(dims, function(d) if (is.null(d)) NA_integer_ else as.integer(d), integer(1))
}

input_dtype_from_keras <- function(cfg, what) {
  dtype <- cfg_get(cfg, "dtype", "float32") %||% "float32"
  if (!is.character(dtype) || length(dtype) != 1 || !dtype %in% input_dtypes) {
    abort_config(what, "InputLayer {.val {cfg$name}} has dtype {.val {format(dtype)}}; mirrored supports {.val {input_dtypes}}.")
  }
  dtype
}

# A model from a full serialized config (class_name + config) or an inner
# config with the class given.
model_from_keras <- function(cls, cfg, custom_objects, what) {
  layers <- cfg_get(cfg, "layers")
  if (!is.list(layers)) abort_config(what, "the model config has no {.field layers} list.")
  name <- cfg_get(cfg, "name")
  if (identical(cls, "Sequential")) {
    shape <- NULL
    input_name <- NULL
    input_dtype <- NULL
    rest <- layers
    if (length(layers) && identical(cfg_get(layers[[1]], "class_name"), "InputLayer")) {
      shape <- input_shape_from_keras(cfg_get(layers[[1]], "config"), what)
      input_name <- cfg_get(cfg_get(layers[[1]], "config"), "name")
      input_dtype <- input_dtype_from_keras(cfg_get(layers[[1]], "config"), what)
      if (!is.character(input_name) || length(input_name) != 1) input_name <- NULL
      rest <- layers[-1]
    } else if (!is.null(cfg_get(cfg, "build_input_shape"))) {
      shape <- input_shape_from_keras(list(batch_shape = cfg$build_input_shape), what)
    }
    model <- keras_model_sequential(input_shape = shape, name = name, input_name = input_name,
                                    input_dtype = input_dtype)
    for (e in rest) model$add(layer_from_keras(e, custom_objects, what))
    model$dtype_policy <- model_policy_from_keras(cfg, model$dtype_policy, what)
    return(set_loaded_trainable(model, cfg))
  }
  if (!identical(cls, "Functional") && !identical(cls, "Model")) {
    abort_config(what, "unknown model class {.val {cls}}; mirrored loads Functional and Sequential models.")
  }
  # tensors[[layer name]][[node_index + 1]]: the output of each call. Keras
  # lists layers, not calls: a shared layer's later call may need a layer
  # listed after it, so calls are made as soon as their inputs exist.
  tensors <- list()
  pending <- list()
  functional_models <- character()
  for (e in layers) {
    lname <- cfg_get(e, "name") %||% cfg_get(cfg_get(e, "config"), "name")
    if (identical(cfg_get(e, "class_name"), "InputLayer")) {
      t <- keras_input(shape = input_shape_from_keras(cfg_get(e, "config"), what), name = lname,
                       dtype = input_dtype_from_keras(cfg_get(e, "config"), what))
      tensors[[lname]] <- list(list(t))
      next
    }
    layer <- layer_from_keras(e, custom_objects, what)
    if (inherits(layer, "mirrored_model") && !inherits(layer, "mirrored_sequential")) {
      functional_models <- c(functional_models, lname)
    }
    nodes <- cfg_get(e, "inbound_nodes", list())
    if (!length(nodes)) abort_config(what, "layer {.val {lname}} is never called (no {.field inbound_nodes}).")
    for (k in seq_along(nodes)) {
      args <- cfg_get(nodes[[k]], "args", list())
      # One tensor, or one list of tensors (layers of several inputs).
      if (length(args) == 1 && is.list(args[[1]]) && is.null(cfg_get(args[[1]], "class_name"))) {
        args <- args[[1]]
      }
      hist <- lapply(args, function(a) cfg_get(cfg_get(a, "config"), "keras_history"))
      ok <- length(hist) >= 1 && all(vapply(hist, function(h) {
        is.list(h) && length(h) >= 2 && is.character(h[[1]]) && is.numeric(h[[2]])
      }, logical(1)))
      if (!ok) abort_config(what, "layer {.val {lname}} has inputs mirrored cannot read (keras_history expected).")
      training <- cfg_get(cfg_get(nodes[[k]], "kwargs", list()), "training")
      if (!(is.null(training) || isFALSE(training) || isTRUE(training))) training <- NULL
      pending[[length(pending) + 1L]] <- list(layer = layer, name = lname, call = k, hist = hist,
                                              training = training)
    }
  }
  ready <- function(p) all(vapply(p$hist, function(h) length(tensors[[h[[1]]]]) > h[[2]], logical(1)))
  while (length(pending)) {
    progress <- FALSE
    for (j in seq_along(pending)) {
      p <- pending[[j]]
      # Calls of one layer are made in their order.
      if (length(tensors[[p$name]]) != p$call - 1L || !ready(p)) next
      ins <- lapply(p$hist, function(h) {
        outs <- tensors[[h[[1]]]][[h[[2]] + 1L]]
        k <- if (length(h) >= 3 && is.numeric(h[[3]])) h[[3]] + 1L else 1L
        if (k > length(outs)) abort_config(what, "layer {.val {p$name}} reads output {k - 1} of {.val {h[[1]]}}, which has {length(outs)}.")
        outs[[k]]
      })
      if (is.null(tensors[[p$name]])) tensors[[p$name]] <- list()
      arg <- if (length(ins) == 1) ins[[1]] else ins
      # Each call's outputs, as a list (a nested model may have several).
      out <- if (inherits(p$layer, "mirrored_model")) call_model(p$layer, arg, training = p$training)
             else call_layer(p$layer, arg, training = p$training)
      tensors[[p$name]][[p$call]] <- if (is_keras_tensor(out)) list(out) else unname(out)
      pending[[j]] <- NULL
      progress <- TRUE
      break
    }
    if (!progress) {
      abort_config(what, "layer {.val {pending[[1]]$name}} has inputs mirrored cannot connect (layers or calls the config does not define).")
    }
  }
  pick <- function(spec, arg) {
    if (length(spec) && !is.list(spec[[1]])) spec <- list(spec)
    lapply(spec, function(s) {
      idx <- if (length(s) >= 2 && is.numeric(s[[2]])) s[[2]] + 1L else 1L
      # Keras counts a nested Functional model's calls from 1 here (its own
      # node comes first).
      if (s[[1]] %in% functional_models) idx <- idx - 1L
      k <- if (length(s) >= 3 && is.numeric(s[[3]])) s[[3]] + 1L else 1L
      t <- tensors[[s[[1]]]]
      if (idx < 1 || length(t) < idx || length(t[[idx]]) < k) {
        abort_config(what, "{arg} names layer {.val {s[[1]]}} (call {idx - 1}, output {k - 1}), which the config does not define.")
      }
      t[[idx]][[k]]
    })
  }
  ins <- pick(cfg_get(cfg, "input_layers"), "input_layers")
  out_spec <- cfg_get(cfg, "output_layers")
  outs <- pick(if (is.null(names(out_spec))) out_spec else unname(out_spec), "output_layers")
  # A dict of outputs names them.
  if (!is.null(names(out_spec))) names(outs) <- names(out_spec)
  model <- keras_model(if (length(ins) == 1) ins[[1]] else ins,
                       if (length(outs) == 1 && is.null(names(outs))) outs[[1]] else outs,
                       name = name)
  set_loaded_trainable(model, cfg)
}

# optimizer_from_keras(): R/optimizers-keras.R

metric_from_keras <- function(x, what, custom_objects = list()) {
  custom <- traced_from_keras(x, what, custom_objects, "metric")
  if (!is.null(custom)) return(custom)
  if (is.character(x)) return(x)
  cls <- cfg_get(x, "class_name", "")
  cfg <- cfg_get(x, "config", list())
  name <- cfg_get(cfg, "name")
  switch(cls,
    SparseCategoricalAccuracy = metric_sparse_categorical_accuracy(name = name),
    CategoricalAccuracy = metric_categorical_accuracy(name = name),
    BinaryAccuracy = metric_binary_accuracy(threshold = cfg_get(cfg, "threshold", 0.5), name = name),
    MeanAbsoluteError = metric_mean_absolute_error(name = name),
    metric_from_keras_config(cls, cfg, name) %||%
      abort_config(what, paste("metric class {.val {cls}} is not supported by mirrored; a {.fn Metric} class",
                               "written in R is given to {.fn load_model} in {.arg custom_objects}."))
  )
}

# compile() from a compile_config; `optimizer` overrides the file's one
# (mirrored's own member keeps the exact hyper-parameters).
compile_from_keras <- function(model, cc, what, optimizer = NULL, custom_objects = list()) {
  opt <- optimizer %||% optimizer_from_keras(cfg_get(cc, "optimizer", "rmsprop"), what)
  is_entry <- function(x) is.character(x) || !is.null(cfg_get(x, "class_name"))
  loss <- cfg_get(cc, "loss")
  # Several outputs: a list (or dict) of losses, of metric lists, of weights.
  loss <- if (is_entry(loss)) loss_from_keras(loss, what, custom_objects)
          else lapply(loss, loss_from_keras, what = what, custom_objects = custom_objects)
  read_metrics <- function(metrics) {
    per_output <- length(metrics) && !is_entry(metrics[[1]])
    read <- function(m) metric_from_keras(m, what, custom_objects)
    metrics <- if (per_output) lapply(metrics, function(m) lapply(m, read)) else lapply(metrics, read)
    if (length(metrics)) metrics
  }
  weights <- cfg_get(cc, "loss_weights")
  compile(model, optimizer = opt, loss = loss, metrics = read_metrics(cfg_get(cc, "metrics")),
          loss_weights = weights, weighted_metrics = read_metrics(cfg_get(cc, "weighted_metrics")))
}
