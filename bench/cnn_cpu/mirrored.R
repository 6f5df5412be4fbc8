# The mirrored side of bench/cnn_cpu: keras3's MNIST convnet (two Conv2D/MaxPooling2D
# blocks, dropout 0.5, softmax, categorical cross-entropy, Adam), batch 128, 2 epochs on
# the 10,000 bundled training digits scaled to 0..1, one CPU replica with 2 threads.
# `--device gpu:0` runs it on a GPU instead (bench/cnn_gpu). Prints one JSON line (run.py
# reads it). Extra arguments (--seed N) are accepted.
args <- commandArgs(TRUE)
arg_value <- function(flag, default) {
  if (length(i <- which(args == flag)) && length(args) > i) args[i + 1] else default
}
seed <- as.integer(arg_value("--seed", "1"))
device <- arg_value("--device", "cpu:0")
suppressPackageStartupMessages(library(mirrored, lib.loc = c(file.path(getwd(), ".lib"), .libPaths())))

set_random_seed(seed)
m <- dataset_mnist_sample()
x <- array_reshape(m$train$x / 255, c(-1, 28, 28, 1))
y <- to_categorical(m$train$y, 10)
strategy <- mirrored_strategy(device)
with(strategy$scope(), {
  model <- keras_model_sequential(input_shape = c(28, 28, 1)) |>
    layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_conv_2d(filters = 64, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_flatten() |>
    layer_dropout(rate = 0.5) |>
    layer_dense(units = 10, activation = "softmax")
  model |> compile(loss = "categorical_crossentropy", optimizer = optimizer_adam(), metrics = "accuracy")
})
epoch_s <- numeric()
t0 <- NULL
timer <- callback_lambda(
  on_epoch_begin = function(epoch, logs) t0 <<- proc.time()[["elapsed"]],
  on_epoch_end = function(epoch, logs) epoch_s <<- c(epoch_s, proc.time()[["elapsed"]] - t0))
h <- model |> fit(x, y, batch_size = 128, epochs = 2, callbacks = list(timer), verbose = 0)
steps <- h$params$steps
info <- mirrored:::cpp_build_info()
math <- paste0(info$cpu_gemm, if (isTRUE(info$dnnl)) paste0("; convolutions: oneDNN ", info$dnnl_version))
cat(sprintf(paste0('{"peer": "mirrored", "version": "%s", "blas": "%s", "threads": %d, "ftz": true, ',
                   '"epoch_s": [%.4f, %.4f], "ms_per_step_epoch1": %.4f, "ms_per_step_epoch2": %.4f, ',
                   '"final_loss": %.4f, "final_acc": %.4f}\n'),
            format(utils::packageVersion("mirrored")), math, parallel::detectCores(),
            epoch_s[1], epoch_s[2], 1000 * epoch_s[1] / steps, 1000 * epoch_s[2] / steps,
            h$metrics$loss[2], h$metrics$accuracy[2]))
