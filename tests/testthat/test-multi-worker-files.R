# i16: a dataset stored as several files, sharded by file in a multi-worker
# job (tf.data's AUTO policy): each worker reads its own parts and batches
# its replicas' share of each global batch; the job trains as one replica on
# the global batches those shares make up.

files_body <- function(p, index) {
  strategy <- multi_worker_mirrored_strategy(devices = p$devices[[index + 1L]], timeout = p$timeout)
  set_random_seed(4)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 5) |> layer_dense(7, activation = "tanh") |> layer_dense(2)
    model |> compile(optimizer = optimizer_sgd(0.05), loss = "mse", metrics = "mae")
  })
  ds <- if (is.null(p$files)) tensor_slices_dataset(list(p$x, p$y)) else npz_dataset(p$files, c("x", "y"))
  ds <- ds |> dataset_batch(p$batch)
  h <- model |> fit(ds, epochs = p$epochs, verbose = 0)
  list(weights = get_weights(model), loss = h$metrics$loss, iterations = model$optimizer$iterations,
       eval = evaluate(model, ds, verbose = 0), params = h$params)
}

test_that("workers reading their own files of a dataset in parts train as one replica on the global batches", {
  skip_if_no_workers()
  # Worker 0 (1 replica) reads parts 1, 3, 5 and worker 1 (2 replicas)
  # parts 2, 4. Of a global batch of 16 over 3 replicas, worker 0 takes 6
  # rows and worker 1 10: worker 0 has 18 rows (3 batches of 6), worker 1
  # 33 (10, 10, 10, 3), so the job's epoch has 4 steps of 16, 16, 16 and 3
  # rows, the last one from worker 1 alone.
  sizes <- c(6, 14, 6, 19, 6)
  set.seed(21)
  x <- matrix(rnorm(sum(sizes) * 5), ncol = 5)
  y <- matrix(rnorm(sum(sizes) * 2), ncol = 2)
  dir <- tempfile("parts")
  dir.create(dir)
  part <- rep(seq_along(sizes), sizes)
  files <- vapply(seq_along(sizes), function(i) {
    f <- file.path(dir, sprintf("part-%d.npz", i))
    write_npz(list(x = x[part == i, , drop = FALSE], y = y[part == i, , drop = FALSE]), f)
    f
  }, character(1))
  p <- list(devices = list("/cpu:0", c("/cpu:0", "/cpu:1")), files = files, batch = 16, epochs = 2, timeout = 60)
  res <- run_workers(files_body, p, 2)
  expect_all_ok(res)
  # The reference: one replica on the same global batches, in order.
  w0 <- which(part %in% c(1, 3, 5))
  w1 <- which(part %in% c(2, 4))
  order <- c(w0[1:6], w1[1:10], w0[7:12], w1[11:20], w0[13:18], w1[21:30], w1[31:33])
  ref <- suppressMessages(files_body(list(devices = list("/cpu:0"), x = x[order, ], y = y[order, ], batch = 16,
                                          epochs = 2), 0L))
  for (r in res) {
    expect_lt(rel_diff(r$value$weights, ref$weights), 1e-5)
    expect_equal(r$value$loss, ref$loss, tolerance = 1e-5)
    expect_equal(as.numeric(r$value$iterations), 8)  # 4 steps per epoch on both workers
    expect_equal(r$value$params$steps, 4)
    # evaluate() covers every row once, over the workers' files.
    expect_equal(unlist(r$value$eval), unlist(ref$eval), tolerance = 1e-5)
  }
  expect_identical(res[[1]]$value$weights, res[[2]]$value$weights)
})

test_that("a dataset with fewer parts than workers is read whole by each and matches one replica", {
  skip_if_no_workers()
  set.seed(5)
  x <- matrix(rnorm(30 * 5), ncol = 5)
  y <- matrix(rnorm(30 * 2), ncol = 2)
  dir <- tempfile("parts")
  dir.create(dir)
  files <- file.path(dir, c("a.npz", "b.npz"))
  write_npz(list(x = x[1:12, ], y = y[1:12, ]), files[1])
  write_npz(list(x = x[13:30, ], y = y[13:30, ]), files[2])
  p <- list(devices = list("/cpu:0", "/cpu:0", "/cpu:0"), files = files, batch = 8, epochs = 2, timeout = 60)
  res <- run_workers(files_body, p, 3)
  expect_all_ok(res)
  ref <- suppressMessages(files_body(list(devices = list("/cpu:0"), x = x, y = y, batch = 8, epochs = 2), 0L))
  for (r in res) {
    expect_lt(rel_diff(r$value$weights, ref$weights), 1e-5)
    expect_equal(as.numeric(r$value$iterations), 8)
  }
})

weighted_body <- function(p, index) {
  strategy <- multi_worker_mirrored_strategy(devices = "/cpu:0", timeout = p$timeout)
  set_random_seed(8)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 4) |> layer_dense(3)
    model |> compile(optimizer = optimizer_sgd(0.1), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  ds <- tensor_slices_dataset(list(p$x, p$y))
  if (!is.null(p$shards)) ds <- ds |> dataset_shard(p$shards, index)
  model |> fit(ds |> dataset_batch(p$batch), epochs = 2, verbose = 0, class_weight = list("0" = 1, "1" = 3, "2" = 0.5))
  get_weights(model)
}

test_that("class_weight keeps a sharded dataset on the sharded path", {
  skip_if_no_workers()
  # Shard i of 2 holds the rows i, i + 2, ...: a step's global batch is
  # worker 0's 8 even rows then worker 1's 8 odd rows of a block of 16.
  set.seed(2)
  x <- matrix(rnorm(32 * 4), ncol = 4)
  y <- sample(0:2, 32, replace = TRUE)
  res <- run_workers(weighted_body, list(x = x, y = y, shards = 2, batch = 8, timeout = 60), 2)
  expect_all_ok(res)
  order <- c(seq(1, 16, 2), seq(2, 16, 2), seq(17, 32, 2), seq(18, 32, 2))
  ref <- suppressMessages(weighted_body(list(x = x[order, ], y = y[order], batch = 16), 0L))
  for (r in res) expect_lt(rel_diff(r$value, ref), 1e-5)
})
