# The overflow check of bench/mixed_precision: a "mixed_float16" MLP trained
# with optimizer_loss_scale(initial_scale = --scale, dynamic_growth_steps = 10)
# on 1, 2 and 4 CPU replicas, the last replica seeing an injected non-finite
# gradient after the all-reduce of step --at (the core's test hook): the skip
# is decided on the all-reduced flag, so every replica count must skip that
# step (no update, the scale halves) and end with the same scale and (up to
# float reassociation) the same weights, every replica of a run holding
# identical weights. Prints one JSON line per replica count: the steps skipped
# (1-based), the scale after each of the first steps, the final scale, the
# largest weight difference from the 1-replica run and between its replicas.
args <- commandArgs(TRUE)
arg_value <- function(flag, default) {
  if (length(i <- which(args == flag)) && length(args) > i) args[i + 1] else default
}
scale0 <- as.numeric(arg_value("--scale", "32768"))
at <- as.integer(arg_value("--at", "5"))
steps <- as.integer(arg_value("--steps", "40"))
suppressPackageStartupMessages(library(mirrored, lib.loc = c(file.path(getwd(), ".lib"), .libPaths())))

m <- dataset_mnist_sample()
rows <- seq_len(64 * steps)
x <- array_reshape(m$train$x[rows, , ], c(-1, 784)) / 255
y <- m$train$y[rows]
run <- function(replicas) {
  set_random_seed(3)
  strategy <- suppressMessages(mirrored_strategy(paste0("/cpu:", seq_len(replicas) - 1L)))
  with(strategy$scope(), {
    config_set_dtype_policy("mixed_float16")
    inputs <- keras_input(shape = 784)
    outputs <- inputs |> layer_dense(units = 128, activation = "relu") |>
      layer_dense(units = 10, dtype = "float32")
    model <- keras_model(inputs, outputs)
    config_set_dtype_policy("float32")
    suppressMessages(model |> compile(
      optimizer = optimizer_loss_scale(optimizer_adam(), initial_scale = scale0, dynamic_growth_steps = 10),
      loss = loss_sparse_categorical_crossentropy(from_logits = TRUE)))
  })
  mirrored:::inject_nonfinite_gradient(model, replicas - 1L, at)
  scales <- numeric()
  skipped <- integer()
  seen <- 0
  cb <- callback_lambda(on_train_batch_end = function(batch, logs) {
    s <- mirrored:::loss_scale_state(model$optimizer)
    scales <<- c(scales, s$scale)
    if (s$skipped > seen) skipped <<- c(skipped, length(scales))
    seen <<- s$skipped
  })
  fit(model, x, y, batch_size = 64, epochs = 1, shuffle = FALSE, callbacks = list(cb), verbose = 0)
  ranks <- lapply(seq_len(replicas) - 1L, function(r) mirrored:::replica_weights(model, r))
  spread <- max(vapply(ranks, function(w) max(mapply(function(a, b) max(abs(a - b)), w, ranks[[1]])), 0))
  list(replicas = replicas, skipped = skipped, scales = scales, weights = get_weights(model),
       spread = spread)
}
runs <- lapply(c(1L, 2L, 4L), run)
for (r in runs) {
  diff <- max(mapply(function(a, b) max(abs(a - b)), r$weights, runs[[1]]$weights))
  rec <- list(check = "overflow", replicas = r$replicas, initial_scale = scale0,
              skipped_steps = as.list(r$skipped), first_scales = as.list(utils::head(r$scales, 12)),
              final_scale = utils::tail(r$scales, 1), max_weight_diff_vs_1 = diff,
              max_weight_diff_between_replicas = r$spread, injected_at = at,
              injected_replica = r$replicas - 1L)
  cat(rawToChar(mirrored:::json_bytes(rec)), "\n", sep = "")
}
