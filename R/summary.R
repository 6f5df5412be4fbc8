#' Print a summary of a model
#'
#' Prints Keras' layer table: each layer's name and type, output shape and
#' number of parameters, then the totals (and, once the optimizer has taken
#' a step, the size of its state).
#'
#' @param object A model.
#' @param ... Unused.
#' @return The model, invisibly.
#' @family model functions
#' @seealso [keras_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 784) |>
#'   layer_dense(units = 256, activation = "relu") |>
#'   layer_dense(units = 10)
#' summary(model)
#' @export
summary.mirrored_model <- function(object, ...) {
  print_model_summary(object)
  invisible(object)
}

print_model_summary <- function(model) {
  g <- model$graph()
  if (is.null(g)) {
    cat("Model: \"", model$name, "\" (unbuilt: no input shape yet; ",
        length(model$layers), " layer", if (length(model$layers) != 1) "s", ")\n", sep = "")
    return(invisible(model))
  }
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
  shape_of <- function(i) paste0("(None", paste0(", ", nodes[[i + 1]]$shape, collapse = ""), ")")
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
    stringsAsFactors = FALSE)
  total <- sum(params)
  opt_params <- NULL
  if (!is.null(model$optimizer) && model$is_built() && model$optimizer$iterations > 0) {
    # Keras' optimizer variables: iteration, learning rate, then the slots
    # (one per trainable variable).
    opt_params <- 2 + sum(trainable) * with_core(cpp_model_slot_count(model$ptr()))
  }
  # Keras counts the optimizer's variables in the total once it is built.
  cat(format_summary_table(model$name, rows, total + (opt_params %||% 0), sum(trainable),
                           sum(non_trainable), optimizer_params = opt_params), sep = "\n")
  invisible(model)
}

# For each node, which call of its layer it is (0 for the owner, 1 for the
# next call of a shared layer, ...): Keras' node_index.
node_call_index <- function(shares) {
  vapply(seq_along(shares), function(k) {
    if (shares[k] < 0) 0L else sum(shares[seq_len(k)] == shares[k])
  }, integer(1))
}
