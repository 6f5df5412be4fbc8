# The mirrored side of bench/mlp_cpu: the vignette's model (784-256-256-10,
# relu, Adam, sparse CE from logits, batch 64, unscaled 0..255 inputs) for 2
# epochs on the 10,000 bundled MNIST training digits. Prints one JSON line
# (run.py reads it). Extra arguments (run.py adds --seed N) are accepted.
args <- commandArgs(TRUE)
# --custom-loss: the same loss written with op_* (traced into the core's graph).
custom_loss <- "--custom-loss" %in% args
seed <- if (length(i <- which(args == "--seed")) && length(args) > i) as.integer(args[i + 1]) else 1L
# --cpu-threads N: options(mirrored.cpu_threads = N) (bench/contention); 0, the
# default, lets mirrored choose.
cpu_threads <- if (length(i <- which(args == "--cpu-threads")) && length(args) > i) as.integer(args[i + 1]) else 0L
options(mirrored.cpu_threads = cpu_threads)
suppressPackageStartupMessages(library(mirrored, lib.loc = c(file.path(getwd(), ".lib"), .libPaths())))

set_random_seed(seed)
m <- dataset_mnist_sample()
x <- array_reshape(m$train$x, c(-1, 784))
y <- m$train$y
inputs <- keras_input(shape = 784)
outputs <- inputs |> layer_dense(units = 256, activation = "relu") |>
  layer_dense(units = 256, activation = "relu") |> layer_dense(units = 10)
model <- keras_model(inputs, outputs)
loss <- if (custom_loss) {
  function(y_true, y_pred) {
    class <- op_expand_dims(op_cast(y_true, "int32"), -1)
    -op_squeeze(op_take_along_axis(op_log_softmax(y_pred), class, axis = -1, zero_indexed = TRUE), -1)
  }
} else {
  loss_sparse_categorical_crossentropy(from_logits = TRUE)
}
model |> compile(optimizer = optimizer_adam(), metrics = list(metric_sparse_categorical_accuracy()), loss = loss)
epoch_s <- numeric()
t0 <- NULL
timer <- callback_lambda(
  on_epoch_begin = function(epoch, logs) t0 <<- proc.time()[["elapsed"]],
  on_epoch_end = function(epoch, logs) epoch_s <<- c(epoch_s, proc.time()[["elapsed"]] - t0))
monitor <- callback_device_monitor()
h <- model |> fit(x, y, batch_size = 64, epochs = 2, callbacks = list(timer, monitor), verbose = 0)
last <- monitor$data[nrow(monitor$data), ]
steps <- h$params$steps
info <- mirrored:::cpp_build_info()
json <- sprintf(paste0('{"peer": "', if (custom_loss) "mirrored-custom-loss" else "mirrored", '", "version": "%s", "blas": "%s", "threads": %d, "ftz": true, ',
                       '"epoch_s": [%.4f, %.4f], "ms_per_step_epoch1": %.4f, "ms_per_step_epoch2": %.4f, ',
                       '"final_loss": %.4f, "final_acc": %.4f, "team_threads": %d, "team_active": %d}'),
                format(utils::packageVersion("mirrored")), info$cpu_gemm, parallel::detectCores(),
                epoch_s[1], epoch_s[2], 1000 * epoch_s[1] / steps, 1000 * epoch_s[2] / steps,
                h$metrics$loss[2], h$metrics$sparse_categorical_accuracy[2], last$threads,
                last$active_threads)
cat(json, "\n", sep = "")
