# The end-to-end example of the multi-GPU vignette, on the MNIST digits that
# ship with mirrored (10,000 training digits, 2,000 of them held out for
# validation, and the 10,000-digit test set): Keras-style logs, a checkpoint
# per epoch, and the training curves as a PNG.
# Run with `make demo`, or demo("mnist", package = "mirrored").
library(mirrored)

out_dir <- Sys.getenv("MIRRORED_DEMO_DIR", file.path(getwd(), "demo-output"))
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

cat("mirrored", format(utils::packageVersion("mirrored")), "-",
    if (built_with_cuda()) "built with CUDA" else "CPU-only build",
    if (built_with_nccl()) "and NCCL" else "", "\n\nDevices:\n")
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

get_dataset <- function(batch_size = 64) {
  c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist_sample()
  x_train <- array_reshape(x_train, c(-1, 784))
  x_test <- array_reshape(x_test, c(-1, 784))
  # Reserve 2,000 samples for validation (the vignette takes 10,000 of 60,000).
  val_i <- sample.int(nrow(x_train), 2000)
  x_val <- x_train[val_i, ]
  y_val <- y_train[val_i]
  x_train <- x_train[-val_i, ]
  y_train <- y_train[-val_i]
  train_dataset <- list(x_train, y_train) |> tensor_slices_dataset() |> dataset_batch(batch_size)
  val_dataset <- list(x_val, y_val) |> tensor_slices_dataset() |> dataset_batch(batch_size)
  test_dataset <- list(x_test, y_test) |> tensor_slices_dataset() |> dataset_batch(batch_size)
  list(train_dataset, val_dataset, test_dataset)
}

set_random_seed(1)
# All GPUs when there are any, else two CPU replicas named explicitly.
strategy <- if (cuda_device_count() > 0) tf$distribute$MirroredStrategy() else
  mirrored_strategy(c("/cpu:0", "/cpu:1"))
cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync))
print(strategy)

checkpoints <- callback_model_checkpoint(filepath = file.path(out_dir, "ckpt-{epoch}.keras"),
                                         save_freq = "epoch")
with(strategy$scope(), {
  model <- get_compiled_model()
  c(train_dataset, val_dataset, test_dataset) %<-% get_dataset()
  history <- model |> fit(train_dataset, epochs = 2, validation_data = val_dataset,
                          callbacks = list(checkpoints), verbose = 2)
  result <- model |> evaluate(test_dataset, verbose = 2)
})
print(result)

cat("\nCheckpoints written:\n")
files <- list.files(out_dir, pattern = "\\.keras$", full.names = TRUE)
print(data.frame(file = basename(files), bytes = file.size(files)))

png_path <- file.path(out_dir, "training-curves.png")
grDevices::png(png_path, width = 900, height = 600, res = 110)
print(plot(history))
invisible(grDevices::dev.off())
cat("Training curves:", png_path, "\n")
