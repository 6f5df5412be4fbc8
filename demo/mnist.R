# The end-to-end example of the multi-GPU vignette, on the MNIST digits that
# ship with mirrored (10,000 training digits, 2,000 of them held out for
# validation, and the 10,000-digit test set), with Keras-style logs.
# Run with `make demo`, or demo("mnist", package = "mirrored").
library(mirrored)

cat("mirrored", format(utils::packageVersion("mirrored")), "-",
    if (built_with_cuda()) "built with CUDA" else "CPU-only build",
    if (built_with_nccl()) "and NCCL" else "", "\n")
print(list_devices())
cat("\n")

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

get_data <- function() {
  c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist_sample()
  x_train <- array_reshape(x_train, c(-1, 784))
  x_test <- array_reshape(x_test, c(-1, 784))
  # Reserve 2,000 samples for validation (the vignette takes 10,000 of 60,000).
  val_i <- sample.int(nrow(x_train), 2000)
  list(x_train = x_train[-val_i, ], y_train = y_train[-val_i],
       x_val = x_train[val_i, ], y_val = y_train[val_i], x_test = x_test, y_test = y_test)
}

set_random_seed(1)
# All GPUs when there are any, else two CPU replicas named explicitly.
strategy <- if (cuda_device_count() > 0) tf$distribute$MirroredStrategy() else
  mirrored_strategy(c("/cpu:0", "/cpu:1"))
cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync))

with(strategy$scope(), {
  model <- get_compiled_model()
  d <- get_data()
  history <- model |> fit(d$x_train, d$y_train, batch_size = 64, epochs = 2,
                          validation_data = list(d$x_val, d$y_val), verbose = 2)
  result <- model |> evaluate(d$x_test, d$y_test, batch_size = 64, verbose = 2)
})
summary(model)
print(history)
cat("\n")
print(result)
