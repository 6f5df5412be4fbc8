# Sample weights and class weights (fit()'s `sample_weight` and
# `class_weight`, evaluate()'s `sample_weight`), as Keras 3 takes them:
# - `sample_weight`: one weight per sample, a vector of length n (or an
#   n x 1 array); for an output of rank > 2 per sample (a sequence, an
#   image), also one weight per position of its loss values: an array of
#   dimensions n x (the output's shape without its last axis), Keras'
#   "temporal" weights. For a model of several outputs, one per output (a
#   list in output order, or named by output) or a single one used for
#   every output.
# - `class_weight`: a named list (or named numeric vector) mapping 0-based
#   class indices ("0", "1", ...) to weights; an unnamed numeric vector gives
#   classes 0, 1, ... in order. The core turns it into per-sample weights as
#   it assembles each batch (data/class_weight_source.h): sparse labels
#   directly, one-hot or probability targets by their argmax; classes
#   without a weight weigh 1. Only a model of one output takes it, and not
#   together with `sample_weight`.
# Negative weights are accepted (Keras 3 does not check them); NA, NaN and
# Inf are errors. The loss is sum(w_i * loss_i) / (loss values in the
# batch: samples x positions), Keras' "sum_over_batch_size".

# The sample weight arrays of `sample_weight` (one per output, or one shared
# by all outputs) with their labels, or NULL; `n` samples.
as_sample_weights <- function(model, sample_weight, n, arg = "sample_weight", call = sys.call(-1)) {
  if (is.null(sample_weight)) return(NULL)
  outputs <- model_output_names(model)
  g <- model$graph()
  # Each output's positions: its per-sample shape without the last axis.
  lead <- lapply(g$outputs, function(o) {
    s <- g$nodes[[o + 1L]]$shape
    if (length(s) > 1) s[-length(s)] else integer(0)
  })
  if (is.list(sample_weight) && !is.data.frame(sample_weight)) {
    if (length(outputs) == 1 && length(sample_weight) == 1 && is.null(names(sample_weight))) {
      sample_weight <- sample_weight[[1]]
    } else {
      ws <- per_output(sample_weight, outputs, arg, function(x) FALSE, "a vector of weights", call)
      labels <- if (is.null(names(ws))) paste0(arg, "[[", seq_along(ws), "]]") else paste0(arg, "$", names(ws))
      missing <- vapply(ws, is.null, logical(1))
      if (any(missing)) {
        abort_value("{.arg {arg}} gives no weights for output{?s} {.val {outputs[missing]}}; give one vector per output (or one vector for all).",
                    call = call)
      }
      arrays <- lapply(seq_along(ws), function(k) weight_array(ws[[k]], n, list(lead[[k]]), labels[k], call))
      return(structure(arrays, labels = labels))
    }
  }
  structure(list(weight_array(sample_weight, n, lead, arg, call)), labels = arg)
}

# The finite weights of `w` for outputs whose positions have the shapes
# `leads`: a vector of n (an n-vector, or an array n x 1), or an array of
# dimensions c(n, lead) when every output of `leads` has that lead shape.
weight_array <- function(w, n, leads, arg, call) {
  if (is.data.frame(w)) w <- as.matrix(w)
  if (!(is.numeric(w) || is.logical(w)) || is.factor(w)) {
    abort_value("{.arg {arg}} must be a numeric vector of one weight per sample, not {describe(w)}.", call = call)
  }
  d <- dim(w)
  lead <- leads[[1]]
  per_position <- length(lead) > 0 && all(vapply(leads, identical, logical(1), lead)) &&
    length(d) == length(lead) + 1 && all(d[-1] == lead)
  if (!is.null(d) && !per_position && (length(d) > 2 || (length(d) == 2 && d[2] != 1))) {
    also <- if (length(lead) > 0) paste0(", or one per position of the output's loss values: an array of dimensions n x ",
                                        paste(lead, collapse = " x ")) else ""
    abort_kind("shape", "{.arg {arg}} must hold one weight per sample (a vector or an n x 1 array{also}), not an array of dimensions {paste(d, collapse = ' x ')}.",
               call = call)
  }
  rows <- if (per_position) d[1] else length(w)
  if (rows != n) {
    abort_value("{.arg {arg}} must have one weight per sample ({n}), not {rows}.", call = call)
  }
  bad <- which(!is.finite(w))
  if (length(bad)) {
    at <- if (per_position) paste0("element ", bad[1]) else paste0("row ", bad[1])
    abort_value("{.arg {arg}} must hold finite weights; {at} has {format(w[bad[1]])}.", call = call)
  }
  if (per_position) array(as.double(w), dim = d) else as.double(w)
}

# class_weight as the weight table of classes 0..max (1 where not given),
# checked against the model: one output; classes within its output (units,
# or 0 and 1 for a single unit).
class_weight_table <- function(model, class_weight, call = sys.call(-1)) {
  if (is.null(class_weight)) return(NULL)
  outputs <- model_output_names(model)
  if (length(outputs) != 1) {
    abort_value("{.arg class_weight} is only supported for models of a single output; this model has {length(outputs)} ({.val {outputs}}). Give {.arg sample_weight} per output instead.",
                call = call)
  }
  if (is.list(class_weight) && !is.data.frame(class_weight)) {
    ok <- vapply(class_weight, function(v) (is.numeric(v) || is.logical(v)) && length(v) == 1, logical(1))
    if (!all(ok)) {
      abort_value("{.arg class_weight} must map classes to single numbers; entry {which(!ok)[1]} is {describe(class_weight[[which(!ok)[1]]])}.",
                  call = call)
    }
    class_weight <- vapply(class_weight, as.double, numeric(1))
  } else if (!is.numeric(class_weight) || length(class_weight) == 0) {
    abort_value("{.arg class_weight} must be a named list (or vector) of weights by 0-based class index, e.g. {.code list(\"0\" = 1, \"1\" = 5)}, not {describe(class_weight)}.",
                call = call)
  }
  nm <- names(class_weight)
  if (is.null(nm)) nm <- as.character(seq_along(class_weight) - 1L)
  cls <- suppressWarnings(as.numeric(nm))
  if (anyNA(cls) || any(cls < 0) || any(cls != round(cls))) {
    abort_value("{.arg class_weight} must be named by 0-based class indices (\"0\", \"1\", ...); it names {.val {nm[is.na(cls) | cls < 0 | cls != round(cls)]}}.",
                call = call)
  }
  if (anyDuplicated(cls)) {
    abort_value("{.arg class_weight} names class {cls[duplicated(cls)][1]} more than once.", call = call)
  }
  bad <- which(!is.finite(class_weight))
  if (length(bad)) {
    abort_value("{.arg class_weight} must hold finite weights; class {nm[bad[1]]} has {format(class_weight[[bad[1]]])}.",
                call = call)
  }
  g <- model$graph()
  shape <- g$nodes[[g$outputs[1] + 1L]]$shape
  if (length(shape) > 1) {
    abort_value(c("{.arg class_weight} is not supported for outputs of rank > 2, as in Keras; this model's output has shape {shape_str(c('None', shape))}.",
                  i = "Give {.arg sample_weight} an array of one weight per position instead (dimensions n x {paste(shape[-length(shape)], collapse = ' x ')})."),
                call = call)
  }
  units <- prod(shape)
  classes <- max(units, 2)
  if (any(cls >= classes)) {
    unknown <- nm[cls >= classes]
    abort_value("{.arg class_weight} names class {.val {unknown}}, which the model's output does not have: its classes are 0..{classes - 1}.",
                call = call)
  }
  table <- rep(1, max(cls) + 1)
  table[cls + 1] <- as.double(class_weight)
  table
}

# Wraps a batch source so that its batches carry class weights.
class_weight_source <- function(model, source, table, arg, call = sys.call(-1)) {
  if (is.null(table)) return(source)
  parts <- length(model$graph()$inputs) + 1L
  with_core(cpp_class_weight_source(source, parts, table, arg), call = call)
}

# What the components of a dataset's elements are, for errors about their
# values: the inputs, the targets, the sample weights (`extra` components
# after the targets: 1 shared by the outputs, or one per output).
dataset_roles <- function(model, extra = 0L) {
  in_names <- model_input_names(model)
  out_names <- model_output_names(model)
  roles <- if (length(in_names) == 1) "the features" else paste0("the features of input \"", in_names, "\"")
  roles <- c(roles, if (length(out_names) == 1) "the targets" else paste0("the targets of output \"", out_names, "\""))
  if (identical(extra, 1L)) roles <- c(roles, "the sample weights")
  if (extra > 1) roles <- c(roles, paste0("the sample weights of output \"", out_names, "\""))
  roles
}

# Rows `rows` of the weight vectors of as_sample_weights().
take_weights <- function(ws, rows) {
  structure(lapply(ws, function(w) if (is.null(dim(w))) w[rows] else take_rows(w, rows)), labels = attr(ws, "labels"))
}
