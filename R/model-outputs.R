# Several inputs and outputs: their names, and what compile() makes of a loss,
# metrics and loss weights given per output. Keras 3's rules
# (keras/src/trainers/compile_utils.py): one loss applies to every output; a
# list gives one per output in output order; a named list one per output
# name. Metrics of a model of several outputs are a list with one entry (a
# list of metrics) per output, or a named list. The total loss is the sum of
# each output's loss times its weight.

# Names of the model's inputs (their InputLayers' names), in input order.
model_input_names <- function(model) {
  g <- model$graph()
  if (is.null(g)) return("input_layer")
  vapply(g$inputs, function(i) g$nodes[[i + 1L]]$layer$name, character(1))
}

# Names of the model's outputs: the names of a named `outputs` list given to
# keras_model() (Keras' dict outputs), else the output layers' names.
model_output_names <- function(model) {
  g <- model$graph()
  if (is.null(g)) return(NA_character_)
  # An output of a nested model is named after the model (Keras' output_names).
  g$output_names %||% vapply(g$outputs, function(i) {
    n <- g$nodes[[i + 1L]]
    if (is.null(n$scope)) n$layer$name else n$scope$model$name
  }, character(1))
}

model_output_count <- function(model) {
  g <- model$graph()
  if (is.null(g)) 1L else length(g$outputs)
}

is_single_loss <- function(x) is.function(x) || (is.character(x) && length(x) == 1)

# A per-output value given as one value, a list in output order or a named
# list by output name, spread to one entry per output. `single(x)` says
# whether x is one value (applied to every output).
per_output <- function(x, outputs, arg, single, what, call) {
  n <- length(outputs)
  if (single(x)) return(rep(list(x), n))
  if (!is.list(x) && !(is.atomic(x) && length(x) > 1)) {
    abort_value("{.arg {arg}} must be {what}, a list of them (one per output) or a named list by output name, not {describe(x)}.",
                call = call)
  }
  x <- as.list(x)
  nm <- names(x)
  if (!is.null(nm) && all(nzchar(nm))) {
    unknown <- setdiff(nm, outputs)
    if (length(unknown)) {
      abort_value("{.arg {arg}} names {.val {unknown}}, which {?is/are} not output{?s} of the model; its outputs are {.val {outputs}}.",
                  call = call)
    }
    return(stats::setNames(lapply(outputs, function(o) x[[o]]), outputs))
  }
  if (length(x) != n) {
    abort_value(c("{.arg {arg}} must have one entry per model output ({n}: {.val {outputs}}), or name the outputs;",
                  "it has {length(x)}."), call = call)
  }
  x
}

# What compile() records for each output: list(name, loss, weight, metrics).
resolve_outputs <- function(model, loss, metrics, loss_weights, weighted_metrics = NULL, call = sys.call(-1)) {
  outputs <- model_output_names(model)
  n <- length(outputs)
  losses <- per_output(loss, outputs, "loss", is_single_loss, "a loss object or name", call)
  missing_loss <- vapply(losses, is.null, logical(1))
  if (any(missing_loss)) {
    abort_value("{.arg loss} gives no loss for output{?s} {.val {outputs[missing_loss]}}; every output needs one.",
                call = call)
  }
  losses <- lapply(losses, as_loss, call = call)
  weights <- if (is.null(loss_weights)) rep(list(1), n)
             else per_output(loss_weights, outputs, "loss_weights", function(x) is.numeric(x) && length(x) == 1 && n == 1,
                             "a number", call)
  weights <- vapply(seq_len(n), function(k) {
    w <- weights[[k]] %||% 1
    check_num(w, if (n == 1) "loss_weights" else paste0("loss_weights$", outputs[k]), min = 0, call = call)
  }, numeric(1))
  spread <- function(metrics, arg) {
    if (is.null(metrics)) return(rep(list(NULL), n))
    if (n == 1) {
      m <- metrics
      if (is.list(m) && !inherits(m, "mirrored_metric") && !is.null(names(m)) &&
          identical(names(m), outputs)) m <- m[[1]]
      return(list(m))
    }
    per_output(metrics, outputs, arg, function(x) FALSE, "a list with one list of metrics per output", call)
  }
  per_metrics <- spread(metrics, "metrics")
  per_weighted <- spread(weighted_metrics, "weighted_metrics")
  resolve <- function(ms, k, arg) {
    if (inherits(ms, "mirrored_metric") || is.function(ms)) ms <- list(ms)
    if (!is.null(ms) && !is.list(ms)) ms <- as.list(ms)
    # A plain function is named after its list name (custom_metric()).
    nms <- names(ms) %||% rep("", length(ms))
    unname(Map(function(m, nm) as_metric(m, loss = losses[[k]], arg = arg, name = nm, call = call), ms, nms))
  }
  lapply(seq_len(n), function(k) {
    ms <- resolve(per_metrics[[k]], k, "metrics")
    wms <- resolve(per_weighted[[k]], k, "weighted_metrics")
    if (any(vapply(c(ms, wms), function(m) m$name == "loss", logical(1)))) {
      abort_value("A metric{if (n > 1) paste0(' of output ', outputs[k])} is named {.val loss}, the loss's log key; rename it.",
                  call = call)
    }
    list(name = outputs[k], loss = losses[[k]], weight = weights[k], metrics = metric_log_names(ms, wms))
  })
}

# Keras 3's log names (CompileMetrics.result()): a metric whose name an
# earlier one has logs as "<name>_<i>" (i = 1, 2, ...); a weighted metric
# whose name is taken as "weighted_<name>", then "weighted_<name>_<i>". The
# metric keeps its own name (saved in its config); `log_name` is the key.
metric_log_names <- function(ms, wms) {
  counters <- list()
  used <- character()
  unique_key <- function(key) {
    if (!key %in% used) return(key)
    i <- counters[[key]] %||% 1L
    counters[[key]] <<- i + 1L
    paste0(key, "_", i)
  }
  ms <- lapply(ms, function(m) {
    m$log_name <- unique_key(m$name)
    used <<- c(used, m$log_name)
    m
  })
  wms <- lapply(wms, function(m) {
    m$weighted <- TRUE
    m$log_name <- if (m$name %in% used) unique_key(paste0("weighted_", m$name)) else m$name
    used <<- c(used, m$log_name)
    m
  })
  c(ms, wms)
}

# The compile settings of each output as the core takes them.
outputs_core_spec <- function(model, call = sys.call(-1)) {
  lapply(seq_along(model$compiled_outputs), function(k) {
    o <- model$compiled_outputs[[k]]
    # Losses and metrics written in R: their graphs (R/losses-custom.R).
    metrics <- lapply(o$metrics, function(m) {
      spec <- c(metric_core_spec(m, isTRUE(m$weighted)), list(graph = traced_output_json(model, k, m, call)))
      if (!identical(m$kind, "state")) return(spec)
      # A Metric() class (R/metrics-custom-class.R).
      if (isTRUE(m$weighted)) {
        abort_not_yet(c("Metric {.val {m$name}} ({.cls {m$class_name}}) is in {.arg weighted_metrics}: Metric classes do not take sample weights yet.",
                        i = "Give it in {.arg metrics}."), call = call)
      }
      c(spec, state_metric_core_spec(m, call))
    })
    list(loss = c(loss_core_spec(o$loss), list(graph = traced_output_json(model, k, o$loss, call))),
         weight = o$weight, metrics = metrics,
         name = if (is.na(o$name)) "" else o$name)
  })
}
