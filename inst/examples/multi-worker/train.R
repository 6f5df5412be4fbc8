# The training script of vignette("multi-worker"): every worker of the job runs
# it. Arguments: the directory to write to, the number of epochs.

library(mirrored)
args <- commandArgs(trailingOnly = TRUE)
out_dir <- args[1]
epochs <- as.integer(args[2])

strategy <- multi_worker_mirrored_strategy(timeout = 60)
print(strategy)

c(c(x, y), .) %<-% dataset_mnist_sample()
x <- array_reshape(x[1:600, , ], c(-1, 784)) / 255
y <- y[1:600]

set_random_seed(1)
with(strategy$scope(), {
  model <- keras_model_sequential(input_shape = 784) |>
    layer_dense(64, activation = "relu") |>
    layer_dropout(0.2) |>
    layer_dense(10)
  model |> compile(optimizer = "adam", metrics = "accuracy",
                   loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
})

checkpoint <- callback_model_checkpoint(file.path(out_dir, "model.keras"))
model |> fit(x, y, batch_size = 64, epochs = epochs, verbose = 2,
             callbacks = list(checkpoint))

saveRDS(get_weights(model),
        file.path(out_dir, sprintf("weights-%d.rds", strategy$cluster_resolver$task_id)))
