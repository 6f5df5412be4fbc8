# One run of the vignette MLP (784-256-256-10 with dropout, Adam, global batch
# 64, 6400 rows: 100 steps per epoch) in one configuration; prints ms/step of
# epochs 2-4. Usage: Rscript mirrored.R single|threads|workers
suppressPackageStartupMessages(library(mirrored))
args <- commandArgs(TRUE)
mode <- args[1]
step_ms <- function(devices, multi) {
  strategy <- if (multi) multi_worker_mirrored_strategy(devices = devices, timeout = 120) else
    mirrored_strategy(devices)
  set.seed(1)
  x <- matrix(runif(6400 * 784), 6400)
  y <- sample(0:9, 6400, replace = TRUE)
  set_random_seed(2)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 784) |> layer_dense(256, activation = "relu") |>
      layer_dropout(0.2) |> layer_dense(256, activation = "relu") |> layer_dense(10, activation = "softmax")
    model |> compile(optimizer = "adam", loss = "sparse_categorical_crossentropy")
  })
  model |> fit(x, y, batch_size = 64, epochs = 1, verbose = 0)
  t <- system.time(model |> fit(x, y, batch_size = 64, epochs = 3, verbose = 0))[["elapsed"]]
  1000 * t / 300
}
ms <- suppressMessages(switch(mode,
  single = step_ms("/cpu:0", FALSE),
  threads = step_ms(c("/cpu:0", "/cpu:1"), FALSE),
  workers = step_ms("/cpu:0", TRUE)))
cat(sprintf("%.4f\n", ms))
