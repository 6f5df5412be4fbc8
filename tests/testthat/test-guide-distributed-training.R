# keras3's guide "Multi-GPU distributed training with TensorFlow"
# (vignettes-src/distributed_training_with_tensorflow.Rmd), its R chunks as
# written, with mirrored loaded instead of keras3. mirrored's `tf` holds the
# strategies (`tf$distribute$MirroredStrategy()`), and np_array and
# tensor_slices_dataset() are its own, so the guide's
# `library(tensorflow)` / `library(tfdatasets)` lines are dropped.
# No network: dataset_mnist() reads 2,000 training and 1,000 test digits
# of real MNIST (written from the digits mirrored ships); the guide's 10,000
# validation rows become 1,000.

guide_get_compiled_model <- function() {
  inputs <- keras_input(shape = 784)
  outputs <- inputs |>
    layer_dense(units = 256, activation = "relu") |>
    layer_dense(units = 256, activation = "relu") |>
    layer_dense(units = 10)
  model <- keras_model(inputs, outputs)
  model |> compile(
    optimizer = optimizer_adam(),
    loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
    metrics = list(metric_sparse_categorical_accuracy())
  )
  model
}

guide_get_dataset <- function(batch_size = 64) {

  c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist()
  x_train <- array_reshape(x_train, c(-1, 784)) / 255
  x_test <- array_reshape(x_test, c(-1, 784)) / 255

  # Reserve 10,000 samples for validation.  (1,000 here)
  val_i <- sample.int(nrow(x_train), 1000)
  x_val <- x_train[val_i,]
  y_val <- y_train[val_i]
  x_train = x_train[-val_i,]
  y_train = y_train[-val_i]

  y_train <- array_reshape(y_train, c(-1, 1))
  y_val <- array_reshape(y_val, c(-1, 1))
  y_test <- array_reshape(y_test, c(-1, 1))

  # Prepare the training dataset.
  train_dataset <- list(x_train, y_train) |>
    lapply(np_array, "float32") |>
    tensor_slices_dataset() |>
    dataset_batch(batch_size)

  # Prepare the validation dataset.
  val_dataset <- list(x_val, y_val) |>
    lapply(np_array, "float32") |>
    tensor_slices_dataset() |>
    dataset_batch(batch_size)

  # Prepare the test dataset.
  test_dataset <- list(x_test, y_test) |>
    lapply(np_array, "float32") |>
    tensor_slices_dataset() |>
    dataset_batch(batch_size)

  list(train_dataset, val_dataset, test_dataset)
}

test_that("Single-host, multi-device synchronous training: the end-to-end example", {
  local_guide_mnist()
  get_compiled_model <- guide_get_compiled_model
  get_dataset <- guide_get_dataset
  set.seed(1)

  # Create a MirroredStrategy.
  out <- capture.output(type = "message", {
    strategy <- tf$distribute$MirroredStrategy()
  })
  out <- capture.output(cat(sprintf('Number of devices: %d\n', strategy$num_replicas_in_sync)))
  # no GPU here: one CPU replica
  expected <- max(1L, cuda_device_count())
  expect_equal(out, sprintf("Number of devices: %d", expected))

  # Open a strategy scope.
  out <- capture.output(with(strategy$scope(), {
    # Everything that creates variables should be under the strategy scope.
    # In general this is only model construction & `compile()`.
    model <- get_compiled_model()

    c(train_dataset, val_dataset, test_dataset) %<-% get_dataset()

    # Train the model on all available devices.
    model |> fit(train_dataset, epochs = 2, validation_data = val_dataset)

    # Test the model on all available devices.
    model |> evaluate(test_dataset)

  }))
  expect_true(exists("model", inherits = FALSE))
  expect_true(exists("test_dataset", inherits = FALSE))
  expect_equal(model$distribute_strategy$num_replicas_in_sync %||% strategy$num_replicas_in_sync,
               strategy$num_replicas_in_sync)
  res <- model |> evaluate(test_dataset, verbose = 0)
  expect_named(res, c("loss", "sparse_categorical_accuracy"))
  # 1,000 training digits, 2 epochs
  expect_gt(res$sparse_categorical_accuracy, 0.7)
})

test_that("The same example on mirrored_strategy() with two CPU replicas equals one replica", {
  local_guide_mnist()
  get_compiled_model <- guide_get_compiled_model
  get_dataset <- guide_get_dataset
  set.seed(1)
  c(train_dataset, val_dataset, test_dataset) %<-% get_dataset()

  strategy <- mirrored_strategy(c("/cpu:0", "/cpu:1"))
  expect_equal(strategy$num_replicas_in_sync, 2L)
  set_random_seed(7)
  with(strategy$scope(), {
    model <- get_compiled_model()
    history <- model |> fit(train_dataset, epochs = 1, validation_data = val_dataset,
                            verbose = 0)
  })
  set_random_seed(7)
  model1 <- get_compiled_model()
  history1 <- model1 |> fit(train_dataset, epochs = 1, validation_data = val_dataset,
                            verbose = 0)
  w2 <- get_weights(model)
  w1 <- get_weights(model1)
  expect_equal(w2, w1, tolerance = 1e-4)
  expect_equal(history$metrics$loss, history1$metrics$loss, tolerance = 1e-4)
  expect_equal(evaluate(model, test_dataset, verbose = 0)$loss,
               evaluate(model1, test_dataset, verbose = 0)$loss, tolerance = 1e-4)
})

test_that("Using callbacks to ensure fault tolerance: checkpoint each epoch, then restore and resume", {
  local_guide_mnist()
  withr::local_dir(withr::local_tempdir())
  get_compiled_model <- guide_get_compiled_model
  set.seed(1)
  c(train_dataset, val_dataset, test_dataset) %<-% guide_get_dataset()

  # Prepare a directory to store all the checkpoints.
  checkpoint_dir <- "./ckpt"
  if (!dir.exists(checkpoint_dir)) {
    dir.create(checkpoint_dir)
  }

  restored <- character()
  make_or_restore_model <- function() {
    # Either restore the latest model, or create a fresh one
    # if there is no checkpoint available.
    checkpoints <- list.files(checkpoint_dir, pattern = "ckpt-.*\\.keras",
                              full.names = TRUE)

    if (length(checkpoints) > 0) {
      checkpoint_epochs <- as.integer(sub("ckpt-([0-9]+)\\.keras", "\\1",
                                          basename(checkpoints)))
      latest_checkpoint <- checkpoints[which.max(checkpoint_epochs)]
      restored <<- c(restored, latest_checkpoint)   # (the test's record)
      load_model(latest_checkpoint)
    } else {
      get_compiled_model()
    }
  }



  run_training <- function(epochs = 1) {
    # Create a MirroredStrategy.
    strategy <- tf$distribute$MirroredStrategy()

    # Open a strategy scope and create/restore the model
    with(strategy$scope(), {
      model <- make_or_restore_model()

      callbacks <- list(
        # This callback saves a SavedModel every epoch
        # We include the current epoch in the folder name.
        callback_model_checkpoint(
          filepath = paste0(checkpoint_dir, "/ckpt-{epoch}.keras"),
          save_freq = "epoch"
        ))

      model |> fit(
        train_dataset,
        epochs = epochs,
        callbacks = callbacks,
        validation_data = val_dataset,
        verbose = 2
      )
    })
  }

  # Running the first time creates the model
  out1 <- capture.output(h1 <- run_training(epochs = 1))
  expect_true(file.exists("ckpt/ckpt-1.keras"))
  expect_length(restored, 0)
  expect_true(all(c("loss", "val_loss", "sparse_categorical_accuracy") %in% names(h1$metrics)))

  # Calling the same function again will resume from where we left off
  out2 <- capture.output(h2 <- run_training(epochs = 1))
  expect_equal(restored, "./ckpt/ckpt-1.keras")
  # the restored model (weights and optimizer state) continues to learn
  expect_lt(h2$metrics$loss, h1$metrics$loss)
  expect_lt(h2$metrics$val_loss, h1$metrics$val_loss)
})

test_that("tf$data performance tips: dataset_cache() and dataset_prefetch() keep fit() results", {
  local_guide_mnist()
  set.seed(1)
  c(train_dataset, val_dataset, test_dataset) %<-% guide_get_dataset()
  cached <- train_dataset |> dataset_cache() |> dataset_prefetch(tf$data$AUTOTUNE)
  set_random_seed(3)
  m1 <- guide_get_compiled_model()
  h1 <- m1 |> fit(cached, epochs = 2, verbose = 0)
  set_random_seed(3)
  m2 <- guide_get_compiled_model()
  h2 <- m2 |> fit(train_dataset, epochs = 2, verbose = 0)
  expect_equal(h1$metrics$loss, h2$metrics$loss, tolerance = 1e-6)
})
