# A model saved under N replicas loads under any other count and continues
# training as if it had not stopped (up to float reassociation across counts).
test_that("save/load across replica counts 1 -> 4 -> 2 -> 1 continues training", {
  set.seed(3)
  x <- matrix(rnorm(50 * 6), 50)
  y <- sample(0:2, 50, replace = TRUE)
  strategies <- lapply(c(1, 4, 2, 1), function(n) suppressMessages(mirrored_strategy(paste0("/cpu:", seq_len(n) - 1))))
  make <- function() {
    inputs <- keras_input(shape = 6)
    outputs <- inputs |> layer_dense(units = 8, activation = "tanh") |> layer_dropout(rate = 0.2) |>
      layer_dense(units = 3)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.02), metrics = "accuracy",
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    model
  }
  # Uninterrupted: 4 epochs on one replica.
  set_random_seed(9)
  reference <- make()
  fit(reference, x, y, batch_size = 7, epochs = 4, verbose = 0)
  # Interrupted: one epoch under each replica count, saved and reloaded in between.
  set_random_seed(9)
  path <- tempfile(fileext = ".keras")
  with(strategies[[1]]$scope(), model <- make())
  fit(model, x, y, batch_size = 7, epochs = 1, verbose = 0)
  save_model(model, path)
  for (k in 2:4) {
    before <- get_weights(model)
    p_before <- predict(model, x, verbose = 0)
    model <- with(strategies[[k]]$scope(), load_model(path))
    expect_equal(model$strategy$num_replicas_in_sync, strategies[[k]]$num_replicas_in_sync)
    expect_identical(get_weights(model), before)
    expect_equal(predict(model, x, verbose = 0), p_before, tolerance = 1e-6)
    expect_equal(model$optimizer$iterations, (k - 1) * 8)
    n <- strategies[[k]]$num_replicas_in_sync
    for (r in seq_len(n - 1)) expect_identical(mirrored:::replica_weights(model, r), before)
    fit(model, x, y, batch_size = 7, epochs = k, initial_epoch = k, verbose = 0)
    save_model(model, path, overwrite = TRUE)
  }
  w <- unlist(get_weights(model))
  w_ref <- unlist(get_weights(reference))
  expect_lt(sqrt(sum((w - w_ref)^2) / sum(w_ref^2)), 1e-5)
})
