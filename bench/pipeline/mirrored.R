# bench/pipeline, mirrored's side: prints JSON lines (one per measurement).
# Run from the repository root with the package installed in ./.lib:
#   R_LIBS=.lib Rscript bench/pipeline/mirrored.R [epochs]
suppressMessages(library(mirrored))
args <- commandArgs(TRUE)
epochs <- if (length(args)) as.integer(args[1]) else 5L
emit <- function(...) cat(sprintf('{%s}\n', paste(sprintf('"%s": %s', names(list(...)),
  vapply(list(...), function(v) if (is.character(v)) sprintf('"%s"', v) else format(v, digits = 6), "")), collapse = ", ")))
drain <- function(ds, step) mirrored:::cpp_dataset_drain(ds$ptr, step)
delay <- mirrored:::dataset_delay

# 1. Overlap with a consumer of known cost: input D s/batch (a sleeping
#    built-in stage), consumer C s/step (sleeps on the consuming thread).
D <- 0.015
C <- 0.025
nb <- 40
base <- tensor_slices_dataset(list(matrix(0, nb * 8, 4), seq_len(nb * 8))) |> dataset_batch(8)
slow <- delay(base, D)
invisible(drain(slow |> dataset_prefetch(), 0))  # warm up
t_in <- drain(slow, 0)[["seconds"]]
t_cmp <- drain(base, C)[["seconds"]]
t_seq <- drain(slow, C)[["seconds"]]
t_pf <- drain(slow |> dataset_prefetch(), C)[["seconds"]]
emit(kind = "overlap", batches = nb, input_s = t_in, compute_s = t_cmp, no_prefetch_s = t_seq, prefetch_s = t_pf)

# 2. The same inside fit(): an MLP step of measured cost fed by a slow input.
mn <- dataset_mnist_sample()
x <- array_reshape(mn$train$x, c(-1, 784))
y <- mn$train$y
set_random_seed(1)
model <- keras_model_sequential(input_shape = 784) |>
  layer_dense(units = 1024, activation = "relu") |> layer_dense(units = 1024, activation = "relu") |>
  layer_dense(units = 10)
model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
fast <- tensor_slices_dataset(list(x, y)) |> dataset_batch(64) |> dataset_rescale(1 / 255) |> dataset_cache()
fit(model, fast, epochs = 1, verbose = 0)  # warm up, fills the cache
med3 <- function(f) median(vapply(1:3, function(i) system.time(f())[["elapsed"]], 0))
t_fit_cmp <- med3(function() fit(model, fast, epochs = 1, verbose = 0))
steps <- length(fast)
Df <- t_fit_cmp / steps  # input as slow as a step
slow_fit <- delay(fast, Df)
t_fit_in <- median(replicate(3, drain(slow_fit, 0)[["seconds"]]))
t_fit_seq <- med3(function() fit(model, slow_fit, epochs = 1, verbose = 0))
slow_pf <- slow_fit |> dataset_prefetch()
t_fit_pf <- med3(function() fit(model, slow_pf, epochs = 1, verbose = 0))
emit(kind = "fit", batches = steps, input_s = t_fit_in, compute_s = t_fit_cmp, no_prefetch_s = t_fit_seq,
     prefetch_s = t_fit_pf)

# 3. Raw throughput, batch-64 MNIST (the 10,000 bundled training digits):
#    slices -> shuffle(10000) -> batch(64) -> x / 255 -> prefetch.
xi <- array_reshape(mn$train$x, c(-1, 784))
pipe <- tensor_slices_dataset(list(xi, mn$train$y)) |> dataset_shuffle(10000, seed = 1) |>
  dataset_batch(64) |> dataset_rescale(1 / 255) |> dataset_prefetch()
plain <- tensor_slices_dataset(list(xi, mn$train$y)) |> dataset_batch(64) |> dataset_rescale(1 / 255) |>
  dataset_prefetch()
# 4. The same digits stored as 10 .npz parts, read from the files every pass
#    (npz_dataset() of several files: one part in memory at a time).
parts_dir <- tempfile("parts")
dir.create(parts_dir)
parts <- file.path(parts_dir, sprintf("part-%02d.npz", 0:9))
for (i in 0:9) {
  rows <- i * 1000 + seq_len(1000)
  write_npz(list(x = array(as.raw(xi[rows, ]), c(1000, 784)), y = as.raw(mn$train$y[rows])), parts[i + 1])
}
from_files <- npz_dataset(parts, c("x", "y")) |> dataset_batch(64) |> dataset_rescale(1 / 255) |>
  dataset_prefetch()
for (what in c("shuffle", "plain", "parts")) {
  ds <- switch(what, shuffle = pipe, plain = plain, parts = from_files)
  invisible(drain(ds, 0))
  n <- 0; s <- 0
  for (e in seq_len(epochs)) { r <- drain(ds, 0); n <- n + r[["elements"]]; s <- s + r[["seconds"]] }
  emit(kind = "throughput", pipeline = what, batches = n, seconds = s, batches_per_s = n / s)
}
