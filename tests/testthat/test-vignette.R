# The vignette's code block (DESIGN.md §5), with arrays until datasets are used,
# on two CPU replicas: it runs and prints Keras' logs.
test_that("the vignette's code block runs on two CPU replicas and prints Keras' logs", {
  get_compiled_model <- function() {
    inputs <- keras_input(shape = 784)
    outputs <- inputs |>
      layer_dense(units = 256, activation = "relu") |>
      layer_dense(units = 256, activation = "relu") |>
      layer_dense(units = 10)
    model <- keras_model(inputs, outputs)
    model |> compile(
      optimizer = optimizer_adam(),
      loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
      metrics = list(metric_sparse_categorical_accuracy()),
      jit_compile = FALSE
    )
    model
  }
  get_dataset <- function() {
    c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist_sample()
    x_train <- array_reshape(x_train, c(-1, 784))[1:3000, ]
    y_train <- y_train[1:3000]
    x_test <- array_reshape(x_test, c(-1, 784))[1:1000, ]
    y_test <- y_test[1:1000]
    val_i <- sample.int(nrow(x_train), 600)
    list(list(x_train[-val_i, ], y_train[-val_i]), list(x_train[val_i, ], y_train[val_i]), list(x_test, y_test))
  }
  set_random_seed(1)
  out <- capture.output({
    strategy <- suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1")))
    cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync))
    result <- with(strategy$scope(), {
      model <- get_compiled_model()
      c(train, val, test) %<-% get_dataset()
      model |> fit(train[[1]], train[[2]], batch_size = 64, epochs = 2, validation_data = val, verbose = 2)
      model |> evaluate(test[[1]], test[[2]], batch_size = 64, verbose = 2)
    })
  })
  expect_equal(out[1], "Number of devices: 2")
  expect_equal(out[2], "Epoch 1/2")
  step_line <- "^38/38 - \\d+s - \\d+(us|ms|s)/step - loss: [0-9.]+ - sparse_categorical_accuracy: [0-9.]+ - val_loss: [0-9.]+ - val_sparse_categorical_accuracy: [0-9.]+$"
  expect_match(out[3], step_line)
  expect_equal(out[4], "Epoch 2/2")
  expect_match(out[5], step_line)
  # fit(verbose = 2) ends with where the steps' time went (R/device-monitor.R).
  expect_match(out[6], "^time per step [0-9.]+ (us|ms|s): compute [0-9]+%, all-reduce [0-9]+%, input [0-9]+%, host [0-9]+%; peak memory [0-9.]+ (MB|GB) per replica$")
  expect_match(out[7], "^16/16 - \\d+s - \\d+(us|ms|s)/step - loss: [0-9.]+ - sparse_categorical_accuracy: [0-9.]+$")
  expect_named(result, c("loss", "sparse_categorical_accuracy"))
  expect_gt(result$sparse_categorical_accuracy, 0.8)
  expect_equal(model$strategy$num_replicas_in_sync, 2)
  # The unmodified line takes the machine's default devices and says which.
  msg <- expect_message(default <- tf$distribute$MirroredStrategy(), "Using MirroredStrategy with devices")
  expect_equal(default$num_replicas_in_sync, max(1L, cuda_device_count()))
})
