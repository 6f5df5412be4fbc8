# The mirrored side of bench/mixed_precision: the vignette's MLP (bench/mlp_cpu:
# 784-256-256-10, relu, Adam, sparse CE from logits, batch 64, unscaled 0..255
# inputs) or keras3's MNIST convnet (bench/cnn_cpu: batch 128, inputs 0..1,
# softmax, categorical CE) for 2 epochs on the 10,000 bundled training digits,
# under the dtype policy --policy (float32, mixed_bfloat16, mixed_float16),
# then the accuracy on the 10,000 test digits. --device gpu:0 runs it on a GPU.
# Prints one JSON line (run.py reads it; any note compile() gives about the
# policy goes in "note"). Extra arguments (--seed N) are accepted.
args <- commandArgs(TRUE)
arg_value <- function(flag, default) {
  if (length(i <- which(args == flag)) && length(args) > i) args[i + 1] else default
}
seed <- as.integer(arg_value("--seed", "1"))
model_kind <- arg_value("--model", "mlp")
policy <- arg_value("--policy", "float32")
device <- arg_value("--device", "cpu:0")
suppressPackageStartupMessages(library(mirrored, lib.loc = c(file.path(getwd(), ".lib"), .libPaths())))

set_random_seed(seed)
m <- dataset_mnist_sample()
note <- character()
strategy <- mirrored_strategy(device)
with(strategy$scope(), {
  config_set_dtype_policy(policy)
  if (model_kind == "mlp") {
    x <- array_reshape(m$train$x, c(-1, 784))
    y <- m$train$y
    x_test <- array_reshape(m$test$x, c(-1, 784))
    y_test <- m$test$y
    batch <- 64
    inputs <- keras_input(shape = 784)
    # Keras' mixed precision guide keeps the last layer (the logits) float32.
    outputs <- inputs |> layer_dense(units = 256, activation = "relu") |>
      layer_dense(units = 256, activation = "relu") |> layer_dense(units = 10, dtype = "float32")
    model <- keras_model(inputs, outputs)
    loss <- loss_sparse_categorical_crossentropy(from_logits = TRUE)
    metric <- metric_sparse_categorical_accuracy()
  } else {
    x <- array_reshape(m$train$x / 255, c(-1, 28, 28, 1))
    y <- to_categorical(m$train$y, 10)
    x_test <- array_reshape(m$test$x / 255, c(-1, 28, 28, 1))
    y_test <- to_categorical(m$test$y, 10)
    batch <- 128
    model <- keras_model_sequential(input_shape = c(28, 28, 1)) |>
      layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = "relu") |>
      layer_max_pooling_2d(pool_size = c(2, 2)) |>
      layer_conv_2d(filters = 64, kernel_size = c(3, 3), activation = "relu") |>
      layer_max_pooling_2d(pool_size = c(2, 2)) |>
      layer_flatten() |>
      layer_dropout(rate = 0.5) |>
      layer_dense(units = 10, activation = "softmax", dtype = "float32")
    loss <- "categorical_crossentropy"
    metric <- "accuracy"
  }
  config_set_dtype_policy("float32")
  withCallingHandlers(
    model |> compile(optimizer = optimizer_adam(), loss = loss, metrics = list(metric)),
    message = function(e) {
      # The message as text: without cli's bullet and line breaks.
      note <<- c(note, trimws(gsub("\\s+", " ", sub("^\\S+ ", "", cli::ansi_strip(conditionMessage(e))))))
      invokeRestart("muffleMessage")
    })
})
epoch_s <- numeric()
t0 <- NULL
timer <- callback_lambda(
  on_epoch_begin = function(epoch, logs) t0 <<- proc.time()[["elapsed"]],
  on_epoch_end = function(epoch, logs) epoch_s <<- c(epoch_s, proc.time()[["elapsed"]] - t0))
h <- model |> fit(x, y, batch_size = batch, epochs = 2, callbacks = list(timer), verbose = 0)
steps <- h$params$steps
test <- evaluate(model, x_test, y_test, batch_size = 256, verbose = 0)
acc_name <- setdiff(names(h$metrics), "loss")[1]
info <- mirrored:::cpp_build_info()
rec <- list(peer = "mirrored", version = format(utils::packageVersion("mirrored")), blas = info$cpu_gemm,
            threads = parallel::detectCores(), ftz = TRUE, model = model_kind, policy = policy,
            epoch_s = epoch_s, ms_per_step_epoch1 = 1000 * epoch_s[1] / steps,
            ms_per_step_epoch2 = 1000 * epoch_s[2] / steps, final_loss = h$metrics$loss[2],
            final_acc = h$metrics[[acc_name]][2], test_acc = test[[acc_name]],
            note = paste(note, collapse = " "))
cat(rawToChar(mirrored:::json_bytes(rec)), "\n", sep = "")
