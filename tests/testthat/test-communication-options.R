quiet_strategy <- function(...) suppressMessages(mirrored_strategy(...))

# A small MLP with a frozen middle layer and Adam, trained 2 epochs on
# batches of 10, 10 and 3 rows; returns the model.
train_buckets <- function(strategy, x, y, accumulate = NULL) {
  set_random_seed(5)
  with(strategy$scope(), {
    inputs <- keras_input(shape = ncol(x))
    outputs <- inputs |> layer_dense(units = 12, activation = "relu") |>
      layer_dense(units = 8, activation = "relu", trainable = FALSE) |>
      layer_dense(units = 8, activation = "tanh") |> layer_dense(units = 3)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.01, gradient_accumulation_steps = accumulate),
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  fit(model, x, y, batch_size = 10, epochs = 2, verbose = 0)
  model
}

test_that("gradient buckets of any size give bit-identical weights on 2 CPU replicas, launched in plan order", {
  set.seed(3)
  x <- matrix(rnorm(23 * 5), 23)
  y <- sample(0:2, 23, replace = TRUE)
  devices <- c("/cpu:0", "/cpu:1")
  for (accumulate in list(NULL, 2L)) {
    default <- train_buckets(quiet_strategy(devices), x, y, accumulate)
    small <- train_buckets(quiet_strategy(devices, communication_options = communication_options(bytes_per_pack = 4)),
                           x, y, accumulate)
    expect_identical(get_weights(small), get_weights(default))
    expect_identical(mirrored:::replica_weights(small, 1), get_weights(small))
    # The default (1 MiB first bucket) holds this whole model; 4 bytes give
    # one bucket per trainable variable (6: the frozen layer's are in none),
    # last layer first, launched in that order by both replicas.
    b0 <- mirrored:::gradient_buckets(default)
    expect_equal(nrow(b0$plan), 1)
    b <- mirrored:::gradient_buckets(small)
    expect_equal(nrow(b$plan), 6)
    expect_equal(b$plan$floats, c(3, 24, 8, 64, 12, 60))
    expect_equal(b$plan$ready_node, c(4, 4, 3, 3, 1, 1))
    # The single bucket's ranges also span the zero padding between variables.
    expect_gte(b0$plan$floats, sum(b$plan$floats))
    expect_equal(b$order, list(0:5, 0:5))
  }
})

test_that("communication_options() checks its arguments and maps onto the strategy", {
  o <- communication_options(bytes_per_pack = 1024, timeout_seconds = 2, implementation = "RING")
  expect_s3_class(o, "mirrored_communication_options")
  expect_equal(o$implementation, "ring")
  expect_output(print(o), "bytes_per_pack: 1024, timeout_seconds: 2, implementation: ring")
  expect_identical(tf$distribute$experimental$CommunicationOptions(bytes_per_pack = 1024, timeout_seconds = 2,
                                                                   implementation = tf$distribute$experimental$CommunicationImplementation$RING),
                   o)
  expect_error(communication_options(bytes_per_pack = -1), class = "mirrored_value_error",
               regexp = "bytes_per_pack.*non-negative")
  expect_error(communication_options(bytes_per_pack = 1.5), class = "mirrored_value_error")
  expect_error(communication_options(timeout_seconds = -1), class = "mirrored_value_error",
               regexp = "timeout_seconds")
  expect_error(communication_options(implementation = "gloo"), class = "mirrored_value_error",
               regexp = "implementation")
  expect_error(communication_options(pack = 3), "unused argument")
  expect_error(quiet_strategy(c("/cpu:0", "/cpu:1"), communication_options = list(bytes_per_pack = 1)),
               class = "mirrored_value_error", regexp = "communication_options")
  expect_error(quiet_strategy(c("/cpu:0", "/cpu:1"), communication_options = communication_options(implementation = "nccl")),
               class = "mirrored_error", regexp = "nccl|NCCL")
  s <- quiet_strategy(c("/cpu:0", "/cpu:1"), communication_options = communication_options(implementation = "ring"))
  expect_equal(s$cross_device_ops, "hierarchical_copy")
  expect_error(quiet_strategy(c("/cpu:0", "/cpu:1"), cross_device_ops = "nccl",
                              communication_options = communication_options(implementation = "ring")),
               class = "mirrored_error")
  expect_equal(quiet_strategy("/cpu:0")$communication_options$bytes_per_pack, 0)
})

test_that("timeout_seconds is the collectives' deadline", {
  x <- matrix(runif(80), 20)
  y <- sample(0:1, 20, replace = TRUE)
  s <- quiet_strategy(c("/cpu:0", "/cpu:1"), communication_options = communication_options(timeout_seconds = 0.3))
  with(s$scope(), {
    slow <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
    slow |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  # A 1 s stall passes under the default 300 s deadline; 0.3 s does not.
  mirrored:::inject_replica_fault(slow, 1, 1, "stall", 1)
  expect_error(fit(slow, x, y, batch_size = 10, verbose = 0), class = "mirrored_timeout_error",
               regexp = "waiting for replica\\(s\\) 1")
})
