#' Print a summary of a model
#'
#' Prints Keras' layer table: each layer's name and type, output shape and
#' number of parameters, then the totals (and, once the optimizer has taken
#' a step, the size of its state). The arguments are keras3's (Keras 3's
#' `Model.summary()`).
#'
#' @param object A model.
#' @param line_length The table's width in characters (default as Keras:
#'   88, or 108 with a "Connected to" column, 12 more with "Trainable", at
#'   most the terminal's width - 4).
#' @param positions The right edges of the columns as fractions of
#'   `line_length`, increasing, the last 1 (default as Keras: `c(0.45, 0.8,
#'   1)`, or `c(0.3, 0.56, 0.74, 1)` with "Connected to"; with
#'   `show_trainable`, those times 0.9 then 1).
#' @param expand_nested Whether the layers of nested models are listed under
#'   the model's row (prefixed with "└ ", indented by depth).
#' @param show_trainable Whether to add a "Trainable" column: Y, N, or - for
#'   a layer without weights. `NA` (keras3's default): when the model has
#'   non-trainable weights.
#' @param ... Must be empty.
#' @param layer_range `NULL`, or the names of the first and last layers to
#'   list (both included).
#' @return The model, invisibly.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 784) |>
#'   layer_dense(units = 256, activation = "relu") |>
#'   layer_dense(units = 10)
#' summary(model)
#' summary(model, show_trainable = TRUE, line_length = 70)
#' @export
summary.mirrored_model <- function(object, line_length = NULL, positions = NULL, expand_nested = FALSE,
                                   show_trainable = FALSE, ..., layer_range = NULL) {
  check_dots_empty(list(...), "summary",
                   c("line_length", "positions", "expand_nested", "show_trainable", "layer_range"))
  check_bool(expand_nested, "expand_nested")
  if (!(is.logical(show_trainable) && length(show_trainable) == 1)) {
    abort_value("{.arg show_trainable} must be TRUE, FALSE or NA, not {describe(show_trainable)}.")
  }
  if (!is.null(positions) && !(is.numeric(positions) && length(positions) >= 1 && !anyNA(positions) &&
                               all(positions > 0) && all(diff(positions) > 0) && positions[[length(positions)]] <= 1)) {
    abort_value("{.arg positions} must be increasing fractions of {.arg line_length} in (0, 1], not {describe(positions)}.")
  }
  if (!is.null(layer_range) && !(is.character(layer_range) && length(layer_range) == 2 && !anyNA(layer_range))) {
    abort_value("{.arg layer_range} must be NULL or the names of two layers, not {describe(layer_range)}.")
  }
  print_model_summary(object, line_length = line_length, positions = positions,
                      expand_nested = expand_nested, show_trainable = show_trainable,
                      layer_range = layer_range)
  invisible(object)
}

print_model_summary <- function(model, line_length = NULL, positions = NULL, expand_nested = FALSE,
                                show_trainable = FALSE, layer_range = NULL) {
  if (is.null(model$graph())) {
    cat("Model: \"", model$name, "\" (unbuilt: no input shape yet; ",
        length(model$layers), " layer", if (length(model$layers) != 1) "s", ")\n", sep = "")
    return(invisible(model))
  }
  s <- summary_model_rows(model)
  rows <- s$rows
  trainable <- s$trainable
  non_trainable <- s$non_trainable
  params <- trainable + non_trainable
  seq_like <- s$seq_like
  nested <- s$nested
  if (!is.null(layer_range)) {
    keep <- summary_layer_range(rows$name, layer_range)
    rows <- rows[keep, , drop = FALSE]
    nested <- nested[keep]
  }
  if (expand_nested) rows <- summary_expand_nested(rows, nested, seq_like, 1L)
  if (is.na(show_trainable)) show_trainable <- sum(non_trainable) > 0
  total <- sum(params)
  opt_params <- NULL
  if (!is.null(model$optimizer) && model$is_built() && model$optimizer$iterations > 0) {
    # Keras' optimizer variables: iteration, learning rate, then the slots
    # (one per trainable variable).
    opt_params <- 2 + sum(trainable) * with_core(cpp_model_slot_count(model$ptr()))
  }
  # Keras counts the optimizer's variables in the total once it is built.
  cat(format_summary_table(model$name, rows, total + (opt_params %||% 0), sum(trainable),
                           sum(non_trainable), optimizer_params = opt_params, line_length = line_length,
                           positions = positions, show_trainable = show_trainable), sep = "\n")
  invisible(model)
}

# The rows of a built model's summary table (a data frame: name, class_name,
# output_shape, params, connected_to, trainable), each row's nested model
# (or NULL), the per-node trainable and non-trainable counts, and
# whether the model is sequential-like (no "Connected to" column).
summary_model_rows <- function(model) {
  g <- model$graph()
  nodes <- g$nodes
  # A shared layer is one row (its first call), with its weights once and
  # every call's inputs in "Connected to", as Keras prints it; a nested
  # model is one row of class Functional/Sequential with its layers' weights.
  shares <- graph_shares(g)
  entries <- graph_entries(g)
  refs <- graph_node_refs(g, entries)
  # Each layer's variables as the core's registry describes them; a frozen
  # layer's all count as non-trainable (Keras' split).
  frozen <- model_frozen_nodes(model)
  counts <- lapply(seq_along(nodes), function(k) {
    n <- nodes[[k]]
    if (!length(n$inputs) || shares[k] >= 0) return(c(0, 0))
    w <- n$layer$spec(lapply(n$inputs, function(i) nodes[[i + 1]]$shape))$weights
    if (frozen[k]) return(c(0, sum(w$size)))
    c(sum(w$size[w$trainable]), sum(w$size[!w$trainable]))
  })
  trainable <- vapply(counts, `[`, numeric(1), 1)
  non_trainable <- vapply(counts, `[`, numeric(1), 2)
  params <- trainable + non_trainable
  shape_of <- function(i) paste0("(None", paste0(", ", dim_text(nodes[[i + 1]]$shape), collapse = ""), ")")
  entry_key <- function(e) if (is.null(e$model)) e$layer else e$model
  # Rows: each layer or model once (its first call).
  rows_e <- Filter(function(e) e$owner, entries)
  if (inherits(model, "mirrored_sequential")) rows_e <- rows_e[-1]
  seq_like <- length(g$inputs) == 1 && length(g$outputs) == 1 &&
    all(vapply(entries, function(e) e$owner, logical(1))) &&
    all(vapply(seq_along(entries)[-1], function(j) {
      identical(as.integer(entries[[j]]$inputs), as.integer(entries[[j - 1]]$outputs)) &&
        length(entries[[j]]$outputs) == 1
    }, logical(1)))
  connected <- vapply(rows_e, function(e) {
    calls <- Filter(function(f) identical(entry_key(f), entry_key(e)), entries)
    ins <- unlist(lapply(calls, function(f) f$inputs))
    if (!length(ins)) return("-")
    paste0(vapply(ins, function(i) {
      r <- refs[[i + 1]]
      paste0(r$name, "[", r$call, "][", r$tensor, "]")
    }, character(1)), collapse = ", ")
  }, character(1))
  rows <- data.frame(
    name = vapply(rows_e, function(e) if (is.null(e$model)) e$layer$name else e$model$name, character(1)),
    class_name = vapply(rows_e, function(e) {
      if (is.null(e$model)) e$layer$class_name else keras_model_class(e$model)
    }, character(1)),
    output_shape = vapply(rows_e, function(e) {
      s <- vapply(e$outputs, shape_of, character(1))
      if (length(s) == 1) s else paste0("[", paste(s, collapse = ", "), "]")
    }, character(1)),
    params = vapply(rows_e, function(e) sum(params[e$nodes]), numeric(1)),
    connected_to = if (seq_like) NA_character_ else connected,
    trainable = vapply(rows_e, function(e) {
      w <- sum(params[e$nodes])
      if (w == 0) "-" else if (all(frozen[e$nodes] | params[e$nodes] == 0)) "N" else "Y"
    }, character(1)),
    stringsAsFactors = FALSE)
  list(rows = rows, nested = lapply(rows_e, function(e) e$model), trainable = trainable,
       non_trainable = non_trainable, seq_like = seq_like)
}

# For each node, which call of its layer it is (0 for the owner, 1 for the
# next call of a shared layer, ...): Keras' node_index.
node_call_index <- function(shares) {
  vapply(seq_along(shares), function(k) {
    if (shares[k] < 0) 0L else sum(shares[seq_len(k)] == shares[k])
  }, integer(1))
}

# The rows from the one named layer_range[1] to the one named
# layer_range[2] (Keras' get_layer_index_bound_by_layer_name).
summary_layer_range <- function(names, layer_range) {
  at <- match(layer_range, names)
  if (anyNA(at)) {
    abort_value("{.arg layer_range} names {.val {layer_range[is.na(at)]}}, not a layer of this model (its layers: {.val {names}}).",
                call = user_call())
  }
  seq(min(at), max(at))
}

# Each nested model's row followed by its own layers' rows, their names
# prefixed as Keras prints them ("   " per level, then "\u2514 "); their
# "Connected to" is "-" (their nodes are not the outer model's).
summary_expand_nested <- function(rows, nested, seq_like, level) {
  out <- list()
  for (i in seq_len(nrow(rows))) {
    out[[length(out) + 1L]] <- rows[i, , drop = FALSE]
    inner <- nested[[i]]
    if (is.null(inner) || is.null(inner$graph())) next
    sub <- summary_model_rows(inner)
    r <- sub$rows
    r$name <- paste0(strrep("   ", level), "\u2514 ", r$name)
    r$connected_to <- if (seq_like) NA_character_ else "-"
    out[[length(out) + 1L]] <- summary_expand_nested(r, sub$nested, seq_like, level + 1L)
  }
  do.call(rbind, out)
}
