# CUDA graphs of the training step: the core captures a step whose shapes
# repeat and replays it (src/mr/train/step_graphs.h); R reads the option and
# shows the counters.

#' How often training steps replayed a CUDA graph
#'
#' On a GPU, `fit()` runs the first step of each batch shape op by op, captures
#' the second as a CUDA graph and replays that graph for every later step of
#' the same shape, which saves the launch cost of each kernel. Steps of another
#' shape (the last short batch of an epoch) run op by op. Steps under gradient
#' accumulation or periodic EMA overwrites, and GPU replicas that reduce through
#' the peer-copy or host-staged all-reduce instead of NCCL, are never captured.
#' CPU replicas never capture: their counts of replays and captures stay 0.
#'
#' `options(mirrored.cuda_graphs = FALSE)` turns the graphs off for the next
#' `fit()` (read at each call; the default is `TRUE`).
#'
#' @param model A model.
#' @return A list: `enabled` (the setting of the last `fit()`), `replays` (steps
#'   that replayed a captured graph), `captures` (steps captured, then run once
#'   through their graph), `eager_steps` (steps run op by op) and
#'   `capture_failed` (`TRUE` when a capture failed, which turns graphs off
#'   until the next `compile()`); counts since the model's core was built.
#' @family training functions
#' @seealso [fit.mirrored_model()]
#' @examples
#' x <- matrix(runif(200), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |>
#'   layer_dense(units = 2)
#' model |> compile(optimizer = "adam", loss = "sparse_categorical_crossentropy")
#' model |> fit(x, y, batch_size = 32, epochs = 1, verbose = 0)
#' str(cuda_graph_stats(model))
#' @export
cuda_graph_stats <- function(model) {
  if (!inherits(model, "mirrored_model")) {
    abort_value("{.arg model} of {.fn cuda_graph_stats} must be a model, not {describe(model)}.")
  }
  if (!model$is_built()) {
    return(list(enabled = cuda_graphs_option(), replays = 0, captures = 0, eager_steps = 0,
                capture_failed = FALSE))
  }
  with_core(cpp_model_cuda_graph_stats(model$ptr()))
}

# options(mirrored.cuda_graphs): TRUE (default) or FALSE.
cuda_graphs_option <- function() {
  v <- getOption("mirrored.cuda_graphs", TRUE)
  if (!is.logical(v) || length(v) != 1 || is.na(v)) {
    abort_value("{.code options(mirrored.cuda_graphs)} must be TRUE or FALSE, not {describe(v)}.")
  }
  v
}

# Called by fit() before its first step.
apply_cuda_graphs_option <- function(model) {
  with_core(cpp_model_set_cuda_graphs(model$ptr(), cuda_graphs_option()))
}
