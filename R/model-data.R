# The arrays fit(), evaluate() and predict() take: `x` one array per model
# input (an array for a model of one input; a list in input order, or a
# named list by input name, for several), `y` one array per output likewise.
# Each array holds samples along its first dimension; the per-sample shape
# must be the input's (Keras adds or drops a trailing dimension of 1 only).

# The arrays of `x` in input order; `arg` names it in errors.
as_input_arrays <- function(model, x, arg, call = sys.call(-1)) {
  as_part_arrays(x, model_input_names(model), arg, "input", call)
}

# The arrays of `y` in output order.
as_target_arrays <- function(model, y, arg, call = sys.call(-1)) {
  names <- model_output_names(model)
  as_part_arrays(y, names, arg, "output", call)
}

as_part_arrays <- function(x, names, arg, what, call) {
  n <- length(names)
  if (is.list(x) && !is.data.frame(x)) {
    nm <- names(x)
    if (!is.null(nm) && all(nzchar(nm))) {
      unknown <- setdiff(nm, names)
      absent <- setdiff(names, nm)
      if (length(unknown) || length(absent)) {
        abort_value(c("{.arg {arg}} must name the model's {what}s {.val {names}};",
                      if (length(unknown)) "it names {.val {unknown}}, which {?is/are} not {what}{?s} of the model" else
                        "it lacks {.val {absent}}", "."), call = call)
      }
      x <- x[names]
      labels <- paste0(arg, "$", names)
    } else {
      if (length(x) != n) {
        abort_value("{.arg {arg}} must hold {n} array{?s} (one per model {what}: {.val {names}}), not {length(x)}.",
                    call = call)
      }
      labels <- if (n == 1) arg else paste0(arg, "[[", seq_len(n), "]]")
    }
  } else {
    if (n != 1) {
      abort_value("The model has {n} {what}s ({.val {names}}): {.arg {arg}} must be a list of {n} arrays, not {describe(x)}.",
                  call = call)
    }
    x <- list(x)
    labels <- arg
  }
  arrays <- lapply(seq_len(n), function(k) as_sample_array(x[[k]], labels[k], call = call))
  rows <- vapply(arrays, function(a) dim(a)[1], numeric(1))
  if (length(unique(rows)) > 1) {
    abort_value("The arrays of {.arg {arg}} must have the same number of samples; {.arg {labels}} have {rows}.",
                call = call)
  }
  structure(arrays, labels = labels)
}

# Keras 3 (Functional._adjust_input_rank) takes a per-sample shape equal to
# the input's, or one that differs by a trailing dimension of 1.
shape_compatible <- function(got, want) {
  got <- as.integer(got)
  want <- as.integer(want)
  # NA in `want`: a variable-length axis, any size (R/model.R).
  if (length(got) == length(want) && anyNA(want)) want[is.na(want)] <- got[is.na(want)]
  identical(got, want) ||
    (length(want) >= 1 && want[length(want)] == 1L && identical(got, want[-length(want)])) ||
    (length(got) >= 1 && got[length(got)] == 1L && identical(got[-length(got)], want))
}

shape_str <- function(s) paste0("(", paste(dim_text(s), collapse = ", "), ")")

# Checks the per-sample shapes of the input arrays (builds an unbuilt
# sequential model from them).
check_inputs <- function(model, xs, call = sys.call(-1)) {
  if (inherits(model, "mirrored_sequential") && is.null(model$graph())) model$build(sample_shape(xs[[1]]))
  g <- model$graph()
  labels <- attr(xs, "labels")
  names <- model_input_names(model)
  for (k in seq_along(xs)) {
    want <- g$nodes[[g$inputs[k] + 1L]]$shape
    got <- sample_shape(xs[[k]])
    if (!shape_compatible(got, want)) {
      abort_kind("shape", c("{.arg {labels[k]}} has samples of shape {shape_str(got)}; the model's input {.val {names[k]}} expects {shape_str(want)}.",
                            i = "Keras does not flatten or reshape inputs: reshape {.arg {labels[k]}} (e.g. with {.fn array_reshape}) or add a layer such as {.fn layer_flatten}."),
                 call = call)
    }
    check_input_values(xs[[k]], g$nodes[[g$inputs[k] + 1L]]$layer$config$dtype, labels[k], names[k], call)
  }
}

# An integer or boolean input's values: whole numbers within float32's exact
# range (batches travel as float32), 0/1 for bool. Keras would truncate
# fractions silently; mirrored says so instead.
check_input_values <- function(x, dtype, label, name, call) {
  if (is.null(dtype) || identical(dtype, "float32") || is.logical(x)) return(invisible())
  bad <- if (identical(dtype, "bool")) which(x != 0 & x != 1) else which(x != round(x) | abs(x) > 2^24)
  if (length(bad)) {
    want <- if (identical(dtype, "bool")) "0 or 1 (or logical values)" else "whole numbers of magnitude at most 2^24"
    abort_value("{.arg {label}} feeds input {.val {name}} of dtype {.val {dtype}}, whose values must be {want}; element {bad[1]} is {format(x[bad[1]])}.",
                call = call)
  }
}

# Checks each output's targets against its loss.
# `retrace`: whether traced losses may be traced again for these targets'
# shape (FALSE for validation data, R/losses-custom.R).
check_targets <- function(model, ys, n, call = sys.call(-1), retrace = TRUE) {
  labels <- attr(ys, "labels")
  # Traced losses and metrics take the targets' shape (R/losses-custom.R).
  ensure_target_shapes(model, lapply(ys, sample_shape), retrace = retrace, call = call)
  g <- model$graph()
  for (k in seq_along(ys)) {
    y <- ys[[k]]
    lab <- labels[k]
    if (dim(y)[1] != n) {
      abort_value("{.arg x} and {.arg {lab}} must have the same number of samples; {.arg x} has {n}, {.arg {lab}} has {dim(y)[1]}.",
                  call = call)
    }
    shape <- g$nodes[[g$outputs[k] + 1L]]$shape
    # Keras' losses reduce the last axis: each position of the axes before
    # it (a time step, a pixel) has its own target (output_positions in
    # src/mr/nn/loss.h).
    units <- if (length(shape)) shape[length(shape)] else 1
    positions <- prod(shape) / units
    loss <- model$compiled_outputs[[k]]$loss
    width <- prod(sample_shape(y))
    # An output whose length follows a variable-length input: the core checks
    # each batch's targets against that batch's length.
    variable <- anyNA(shape)
    if (loss$kind == "traced") {
      next  # its graph was traced for these targets (ensure_target_shapes)
    } else if (loss$kind == "sparse_categorical_crossentropy") {
      if (!variable && width != positions) {
        abort_kind("shape", if (positions == 1) "{.arg {lab}} must hold one class index per sample for {.val {loss$name}}, got {width} values per sample." else
          "{.arg {lab}} must hold one class index per position of the output of shape {shape_str(c('None', shape))} ({positions} per sample) for {.val {loss$name}}, got {width} values per sample.",
          call = call)
      }
      # Labels equal to the loss's ignore_class are masked out, whatever their value.
      ok <- y == round(y) & y >= 0 & y < units
      if (!is.null(loss$ignore_class)) ok <- ok | y == loss$ignore_class
      if (!isTRUE(all(ok))) {
        bad <- y[is.na(ok) | !ok][1]
        abort_value("{.arg {lab}} must hold class indices in 0..{units - 1} (the output has {units} units); found {bad}.",
                    call = call)
      }
    } else if (!variable && width != prod(shape)) {
      abort_kind("shape", "{.arg {lab}} has {width} values per sample; the model's output has {prod(shape)}.", call = call)
    }
  }
}

# x arrays (and y arrays, and sample weights: as_sample_weights()) as one
# array_source's parts.
data_parts <- function(xs, ys = NULL, ws = NULL) {
  parts <- c(unclass(xs), unclass(ys), unclass(ws))
  attributes(parts) <- NULL
  list(parts = parts, labels = c(attr(xs, "labels"), attr(ys, "labels"), attr(ws, "labels")))
}

take_rows_all <- function(xs, rows) {
  structure(lapply(xs, take_rows, rows), labels = attr(xs, "labels"))
}

# predict()'s result: one array for a model of one output, else a list (named
# when keras_model() was given a named list of outputs, as keras3 returns a
# dict's entries by name).
predict_result <- function(model, out) {
  if (length(out) == 1) return(out[[1]])
  g <- model$graph()
  if (!is.null(g$output_names)) names(out) <- g$output_names
  out
}
