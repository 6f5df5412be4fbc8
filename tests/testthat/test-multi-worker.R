# Multi-worker jobs of 2 and 3 R processes on loopback: the same numbers as
# one process with one replica on the same global batch, the chief alone
# writing checkpoints, bad clusters failing on every worker before any step.

# Runs `code` with the environment variables `vars` set ("" unsets them).
with_env <- function(vars, code) {
  old <- Sys.getenv(names(vars), unset = NA, names = TRUE)
  on.exit({
    for (n in names(old)) if (is.na(old[[n]])) Sys.unsetenv(n) else do.call(Sys.setenv, as.list(old[n]))
  }, add = TRUE)
  for (n in names(vars)) if (nzchar(vars[[n]])) do.call(Sys.setenv, as.list(vars[n])) else Sys.unsetenv(n)
  force(code)
}

test_that("multi_worker_mirrored_strategy() checks its arguments and the cluster before any step", {
  expect_error(multi_worker_mirrored_strategy(communication = "mpi"), class = "mirrored_value_error")
  expect_error(multi_worker_mirrored_strategy(timeout = -1), class = "mirrored_value_error")
  expect_error(multi_worker_mirrored_strategy(cluster = 42), class = "mirrored_value_error")
  expect_error(multi_worker_mirrored_strategy(cluster = "{\"cluster\": "), "not valid JSON",
               class = "mirrored_value_error")
  bad_index <- list(cluster = list(worker = c("127.0.0.1:1", "127.0.0.1:2")),
                    task = list(type = "worker", index = 2))
  expect_error(multi_worker_mirrored_strategy(cluster = bad_index), "outside",
               class = "mirrored_value_error")
  with_env(c(TF_CONFIG = "{not json"), {
    expect_error(multi_worker_mirrored_strategy(), "TF_CONFIG", class = "mirrored_value_error")
  })
  # No cluster anywhere: a worker alone, like mirrored_strategy().
  with_env(c(TF_CONFIG = "", SLURM_PROCID = "", SLURM_NTASKS = "", WORLD_SIZE = "",
                       OMPI_COMM_WORLD_SIZE = "", PMI_SIZE = "", KERAS_DISTRIBUTION_JOB_ADDRESSES = ""), {
    s <- suppressMessages(multi_worker_mirrored_strategy(devices = c("/cpu:0", "/cpu:1")))
    expect_equal(s$num_replicas_in_sync, 2L)
    expect_equal(s$cluster_resolver$task_type, "worker")
    expect_true(s$cluster_resolver$is_chief)
    expect_match(capture.output(print(s))[1], "1 worker")
    s2 <- suppressMessages(tf$distribute$MultiWorkerMirroredStrategy(
      communication_options = tf$distribute$experimental$CommunicationOptions(
        implementation = tf$distribute$experimental$CommunicationImplementation$RING)))
    expect_s3_class(s2, "multi_worker_mirrored_strategy")
  })
})

# One training run: the same code in a worker process and in this process
# (where no cluster is set, so the strategy is a worker alone).
train_body <- function(p, index) {
  devices <- p$devices[[index + 1L]]
  strategy <- multi_worker_mirrored_strategy(devices = devices, timeout = p$timeout)
  set.seed(11)
  x <- matrix(rnorm(p$rows * 6), p$rows)
  y <- sample(0:2, p$rows, replace = TRUE)
  set_random_seed(5)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 6) |>
      layer_dense(12, activation = "relu") |>
      layer_dropout(0.2) |>
      layer_dense(3, activation = "softmax")
    model |> compile(optimizer = optimizer_adam(0.02), loss = "sparse_categorical_crossentropy",
                     metrics = "accuracy")
  })
  cbs <- list()
  if (!is.null(p$checkpoint)) {
    dir <- file.path(p$checkpoint, sprintf("worker_%d", index))
    cbs <- list(callback_model_checkpoint(file.path(dir, "ckpt-{epoch}.weights.h5"), save_weights_only = TRUE,
                                          monitor = "loss"),
                callback_model_checkpoint(file.path(dir, "best.keras"), save_best_only = TRUE, monitor = "loss"))
  }
  h <- model |> fit(x, y, batch_size = p$batch, epochs = p$epochs, verbose = 0, shuffle = TRUE, callbacks = cbs)
  list(weights = get_weights(model), loss = h$metrics$loss, accuracy = h$metrics$accuracy,
       replicas = strategy$num_replicas_in_sync,
       task = c(strategy$cluster_resolver$task_type, strategy$cluster_resolver$task_id),
       printed = capture.output(print(strategy)),
       eval = evaluate(model, x, y, batch_size = p$batch, verbose = 0),
       pred = predict(model, x[1:5, , drop = FALSE], verbose = 0))
}

reference_run <- function(p) {
  p$devices <- list("/cpu:0")
  suppressMessages(train_body(p, 0L))
}

test_that("2 workers of 1 CPU replica (TF_CONFIG) train as one replica on the global batch", {
  skip_if_no_workers()
  p <- list(devices = list("/cpu:0", "/cpu:0"), rows = 50, batch = 16, epochs = 2, timeout = 60)
  res <- run_workers(train_body, p, 2)
  expect_all_ok(res)
  ref <- reference_run(p)
  for (r in res) {
    expect_lt(rel_diff(r$value$weights, ref$weights), 1e-5)
    expect_equal(r$value$replicas, 2L)
    expect_equal(r$value$loss, ref$loss, tolerance = 1e-5)
    expect_equal(r$value$accuracy, ref$accuracy, tolerance = 1e-6)
    expect_equal(unlist(r$value$eval), unlist(ref$eval), tolerance = 1e-5)
    expect_equal(r$value$pred, ref$pred, tolerance = 1e-5)
  }
  # Every worker ends with bit-identical weights.
  expect_identical(res[[1]]$value$weights, res[[2]]$value$weights)
  expect_equal(res[[1]]$value$task, c("worker", "0"))
  expect_equal(res[[2]]$value$task, c("worker", "1"))
  expect_match(res[[1]]$value$printed[1], "2 replicas on 2 workers \\(cluster from TF_CONFIG\\)")
  expect_true(any(grepl("Gloo", res[[1]]$value$printed)))
})

test_that("3 workers launched as srun launches them, with 1 or 2 replicas each, match one replica", {
  skip_if_no_workers()
  p <- list(devices = list(c("/cpu:0", "/cpu:1"), "/cpu:0", c("/cpu:0", "/cpu:1")),
            rows = 47, batch = 10, epochs = 2, timeout = 60)
  res <- run_workers(train_body, p, 3, launch = "slurm")
  expect_all_ok(res)
  ref <- reference_run(p)
  for (r in res) {
    expect_lt(rel_diff(r$value$weights, ref$weights), 1e-5)
    expect_equal(r$value$replicas, 5L)
    expect_equal(r$value$loss, ref$loss, tolerance = 1e-5)
  }
  expect_identical(res[[1]]$value$weights, res[[3]]$value$weights)
  expect_match(res[[2]]$value$printed[1], "5 replicas on 3 workers \\(cluster from Slurm\\)")
})

test_that("the chief alone writes the checkpoint files", {
  skip_if_no_workers()
  dir <- tempfile("ckpt")
  p <- list(devices = list("/cpu:0", "/cpu:0"), rows = 40, batch = 8, epochs = 2, timeout = 60,
            checkpoint = dir)
  res <- run_workers(train_body, p, 2)
  expect_all_ok(res)
  expect_setequal(list.files(file.path(dir, "worker_0")), c("ckpt-1.weights.h5", "ckpt-2.weights.h5", "best.keras"))
  expect_false(dir.exists(file.path(dir, "worker_1")))
  # The chief's last checkpoint holds the job's final weights.
  ref <- reference_run(modifyList(p, list(checkpoint = NULL)))
  m <- keras_model_sequential(input_shape = 6) |>
    layer_dense(12, activation = "relu") |> layer_dropout(0.2) |> layer_dense(3, activation = "softmax")
  load_model_weights(m, file.path(dir, "worker_0", "ckpt-2.weights.h5"))
  expect_lt(rel_diff(get_weights(m), ref$weights), 1e-5)
  # A multi-worker checkpoint loads on one machine, in a process alone.
  loaded <- load_model(file.path(dir, "worker_0", "best.keras"))
  expect_equal(length(get_weights(loaded)), length(ref$weights))
  expect_true(all(is.finite(unlist(get_weights(loaded)))))
})

bad_body <- function(p, index) {
  strategy <- multi_worker_mirrored_strategy(devices = "/cpu:0", timeout = p$timeout)
  units <- if (index == 0) 4 else p$other_units
  activation <- if (index == 0) NULL else p$other_activation
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 3) |> layer_dense(units, activation = activation)
    model |> compile(optimizer = "sgd", loss = "mse")
  })
  get_weights(model)
}

test_that("workers whose models differ stop with a classed error on every worker", {
  skip_if_no_workers()
  res <- run_workers(bad_body, list(timeout = 30, other_units = 5), 2)
  for (r in res) {
    expect(!isTRUE(r$ok), worker_report(res))
    expect_true("mirrored_value_error" %in% r$class)
    expect_match(r$message, "different models")
    expect_match(r$message, "worker 1")
  }
  # The same shapes but another activation: a different model too.
  res <- run_workers(bad_body, list(timeout = 30, other_units = 4, other_activation = "relu"), 2)
  for (r in res) {
    expect(!isTRUE(r$ok), worker_report(res))
    expect_true("mirrored_value_error" %in% r$class)
  }
})

test_that("two workers with the same task index stop with a classed error on every worker", {
  skip_if_no_workers()
  # A cluster of 3 workers, but processes with indices 0, 1 and 1 again.
  job <- start_workers(bad_body, list(timeout = 30, other_units = 4), 3, indices = c(0L, 1L, 1L))
  res <- finish_workers(job, 60)
  for (r in res) {
    expect(!isTRUE(r$ok), worker_report(res))
    expect_true("mirrored_value_error" %in% r$class)
    expect_match(r$message, "same task index")
  }
})

test_that("a worker that starts alone names the workers it waits for", {
  skip_if_no_workers()
  res <- run_workers(bad_body, list(timeout = 3, other_units = 4), 1,
                     launch = "tf_config")
  expect(isTRUE(res[[1]]$ok), worker_report(res))
  # One process of a 1-worker cluster joins at once; a 2-worker cluster
  # whose second worker never comes:
  job <- start_workers(bad_body, list(timeout = 3, other_units = 4), 2, indices = 0L)
  res <- finish_workers(job, 60)
  expect(!isTRUE(res[[1]]$ok), worker_report(res))
  expect_true("mirrored_timeout_error" %in% res[[1]]$class)
  expect_match(res[[1]]$message, "worker 1 \\(127.0.0.1:[0-9]+\\)")
})

# The epoch a backup's metadata file records ({"epoch": E, "batch": B}).
jsonlite_free_epoch <- function(path) {
  as.integer(sub('.*"epoch": *([0-9]+).*', "\\1", paste(readLines(path, warn = FALSE), collapse = "")))
}

test_that("kill -9 of one worker mid-epoch stops every other with a classed error within 10 s", {
  skip_if_no_workers()
  dir <- tempfile("kill")
  dir.create(dir)
  job <- start_workers(long_body, list(timeout = 60, dir = dir, epochs = 1000, mark_epoch = 1), 3)
  expect_true(wait_for_file(file.path(dir, "epoch1_2")))
  Sys.sleep(0.2)
  job$procs[[3]]$kill()  # SIGKILL
  killed <- Sys.time()
  res <- finish_workers(job, 40)
  for (k in 1:2) expect_worker_error(res, k, "worker 2\\s+\\(127.0.0.1:[0-9]+\\) died", killed, 10)
})

test_that("a stopped (SIGSTOP) worker makes the others fail within the deadline, naming it", {
  skip_if_no_workers()
  dir <- tempfile("stop")
  dir.create(dir)
  deadline <- 8
  job <- start_workers(long_body, list(timeout = deadline, dir = dir, epochs = 1000, mark_epoch = 1), 2)
  expect_true(wait_for_file(file.path(dir, "epoch1_1")))
  job$procs[[2]]$suspend()  # SIGSTOP
  stopped <- Sys.time()
  on.exit(job$procs[[2]]$kill(), add = TRUE)
  survivor <- job
  survivor$procs <- job$procs[1]
  res <- finish_workers(survivor, 60)
  r <- res[[1]]
  expect(!isTRUE(r$ok), worker_report(res))
  expect_true(any(c("mirrored_worker_error", "mirrored_timeout_error") %in% r$class))
  expect_match(r$message, "worker 1\\s+\\(127.0.0.1:[0-9]+\\)")
  expect_lt(as.numeric(difftime(r$time, stopped, units = "secs")), deadline + 5)
})

test_that("a job killed mid-training and restarted with backup-and-restore reaches the uninterrupted weights", {
  skip_if_no_workers()
  dir <- tempfile("resume")
  dir.create(dir)
  # Enough epochs that the kill after epoch 2 lands long before the end.
  p <- list(timeout = 30, dir = dir, epochs = 40, mark_epoch = 2)
  whole <- run_workers(long_body, p, 2)
  expect_all_ok(whole)
  backup <- file.path(dir, "backup")
  p$backup <- backup
  p$dir <- file.path(dir, "first")
  dir.create(p$dir)
  job <- start_workers(long_body, p, 2)
  expect_true(wait_for_file(file.path(p$dir, "epoch2_1")))
  job$procs[[2]]$kill()
  first <- finish_workers(job, 40)
  expect(!isTRUE(first[[1]]$ok), worker_report(first))
  expect_true(file.exists(file.path(backup, "latest.weights.h5")))
  expect_true(file.exists(file.path(backup, "worker_1", "latest.weights.h5")))
  # Worker 1 one backup behind the chief, as when it dies between the chief's
  # backup and its own (unless the kill already landed there): the job
  # resumes from the previous backup, which every worker keeps.
  meta <- function(d) jsonlite_free_epoch(file.path(d, "training_metadata.json"))
  w1 <- file.path(backup, "worker_1")
  if (meta(backup) == meta(w1)) {
    for (f in c("latest.weights.h5", "training_metadata.json")) {
      expect_true(file.copy(file.path(w1, paste0(f, ".bkp")), file.path(w1, f), overwrite = TRUE))
      unlink(file.path(w1, paste0(f, ".bkp")))
    }
  }
  expect_equal(meta(w1), meta(backup) - 1)
  # And the chief killed between writing its weights and its metadata: its
  # metadata says the previous epoch, its weights the last one. Positions are
  # read from the weights files, so the job still resumes from one position.
  expect_true(file.copy(file.path(backup, "training_metadata.json.bkp"),
                        file.path(backup, "training_metadata.json"), overwrite = TRUE))
  p$dir <- file.path(dir, "second")
  dir.create(p$dir)
  again <- run_workers(long_body, p, 2)
  expect_all_ok(again)
  for (r in again) expect_lt(rel_diff(r$value, whole[[1]]$value), 1e-5)
  expect_identical(again[[1]]$value, again[[2]]$value)
  # The job ended: every worker deleted its copy, and backup_dir is gone.
  expect_false(dir.exists(backup))
})

shard_body <- function(p, index) {
  strategy <- multi_worker_mirrored_strategy(devices = p$devices[[index + 1L]], timeout = p$timeout)
  set.seed(21)
  x <- matrix(rnorm(p$rows * 5), p$rows)
  y <- matrix(rnorm(p$rows * 2), p$rows)
  set_random_seed(4)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 5) |> layer_dense(7, activation = "tanh") |> layer_dense(2)
    model |> compile(optimizer = optimizer_sgd(0.05), loss = "mse", metrics = "mae")
  })
  ds <- tensor_slices_dataset(list(x, y))
  if (p$shard) {
    ds <- ds |> dataset_shard(2, index)
    if (!is.null(p$take)) ds <- ds |> dataset_take(p$take[[index + 1L]])
  }
  h <- model |> fit(ds |> dataset_batch(p$batch), epochs = p$epochs, verbose = 0)
  list(weights = get_weights(model), loss = h$metrics$loss, iterations = model$optimizer$iterations)
}

test_that("workers batching their own shards train as one replica on the concatenated batch", {
  skip_if_no_workers()
  p <- list(devices = list("/cpu:0", c("/cpu:0", "/cpu:1")), rows = 41, batch = 8, epochs = 2,
            timeout = 60, shard = TRUE)
  res <- run_workers(shard_body, p, 2)
  expect_all_ok(res)
  ref <- suppressMessages(shard_body(modifyList(p, list(shard = FALSE, batch = 16, devices = list("/cpu:0"))), 0L))
  for (r in res) {
    expect_lt(rel_diff(r$value$weights, ref$weights), 1e-5)
    expect_equal(r$value$loss, ref$loss, tolerance = 1e-5)
  }
  expect_identical(res[[1]]$value$weights, res[[2]]$value$weights)
})

test_that("shards of different lengths end the epoch together", {
  skip_if_no_workers()
  # Worker 0: 20 rows (3 batches of 8, 8, 4); worker 1: 9 rows (2 batches).
  p <- list(devices = list("/cpu:0", "/cpu:0"), rows = 40, batch = 8, epochs = 2, timeout = 30,
            shard = TRUE, take = list(20, 9))
  res <- run_workers(shard_body, p, 2, timeout = 90)
  expect_all_ok(res)
  expect_identical(res[[1]]$value$weights, res[[2]]$value$weights)
  for (r in res) {
    expect_equal(as.numeric(r$value$iterations), 6)  # 3 steps per epoch on both
    expect_true(all(is.finite(r$value$loss)))
  }
})

test_that("Ctrl-C stops a worker that waits for the others", {
  skip_if_no_workers()
  # Worker 1 of 2 starts alone and waits (up to 60 s) for the chief.
  job <- start_workers(bad_body, list(timeout = 60, other_units = 4), 2, indices = 1L)
  Sys.sleep(2)
  job$procs[[1]]$interrupt()
  sent <- Sys.time()
  res <- finish_workers(job, 30)
  expect(!isTRUE(res[[1]]$ok), worker_report(res))
  expect_true("mirrored_interrupted_error" %in% res[[1]]$class, info = paste(res[[1]]$message, collapse = " "))
  expect_lt(as.numeric(difftime(res[[1]]$time, sent, units = "secs")), 5)
})

test_that("Ctrl-C in one worker's fit() stops the others at once, naming it", {
  skip_if_no_workers()
  dir <- tempfile("quit")
  dir.create(dir)
  # Worker 1 catches its interrupt and stays alive 12 s: worker 0 must not
  # wait for its exit, nor for the 60 s deadline.
  job <- start_workers(long_body, list(dir = dir, timeout = 60, epochs = 400, mark_epoch = 1, linger = 12), 2)
  expect_true(wait_for_file(file.path(dir, "epoch1_1")))
  job$procs[[2]]$interrupt()
  sent <- Sys.time()
  res <- finish_workers(job, 60)
  expect_worker_error(res, 1, "worker 1 .*was interrupted \\(Ctrl-C\\) during fit\\(\\)", sent, 8)
  expect(identical(res[[2]]$value, "interrupted"), worker_report(res))
})

test_that("with 4 workers, a worker that dies is reported by the ones not next to it in the ring too", {
  skip_if_no_workers()
  dir <- tempfile("kill4")
  dir.create(dir)
  job <- start_workers(long_body, list(timeout = 60, dir = dir, epochs = 1000, mark_epoch = 1), 4)
  expect_true(wait_for_file(file.path(dir, "epoch1_2")))
  Sys.sleep(0.2)
  job$procs[[3]]$kill()  # worker 2: workers 1 and 3 are its ring neighbours, worker 0 is not
  killed <- Sys.time()
  res <- finish_workers(job, 60)
  for (k in c(1, 2, 4)) expect_worker_error(res, k, "worker 2\\s+\\(127.0.0.1:[0-9]+\\) died", killed, 10)
})
