quiet_strategy <- function(...) suppressMessages(mirrored_strategy(...))

build_and_train <- function(strategy, x, y, epochs = 3, batch_size = 10, seed = 21, rows_log = NULL) {
  set_random_seed(seed)
  with(strategy$scope(), {
    inputs <- keras_input(shape = ncol(x))
    outputs <- inputs |> layer_dense(units = 16, activation = "relu") |> layer_dropout(rate = 0.25) |>
      layer_dense(units = 4)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.01), metrics = "accuracy",
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  cbs <- list()
  if (!is.null(rows_log)) {
    cbs <- list(callback_lambda(on_train_batch_end = function(batch, logs) {
      rows_log$rows[[length(rows_log$rows) + 1]] <- mirrored:::replica_info(model)$rows_last_step
    }))
  }
  history <- fit(model, x, y, batch_size = batch_size, epochs = epochs, callbacks = cbs, verbose = 0)
  list(model = model, history = history)
}

test_that("1, 2, 3 and 4 CPU replicas give the same weights, and replicas stay bit-identical", {
  set.seed(1)
  x <- matrix(rnorm(23 * 6), 23)   # batches of 10, 10 and 3: the last has fewer rows than 4 replicas
  y <- sample(0:3, 23, replace = TRUE)
  one <- build_and_train(quiet_strategy("/cpu:0"), x, y)
  w1 <- get_weights(one$model)
  for (n in 2:4) {
    log <- new.env()
    log$rows <- list()
    res <- build_and_train(quiet_strategy(paste0("/cpu:", seq_len(n) - 1)), x, y, rows_log = log)
    expect_equal(res$model$strategy$num_replicas_in_sync, n)
    w <- get_weights(res$model)
    rel <- sqrt(sum(unlist(Map(function(a, b) sum((a - b)^2), w, w1))) / sum(unlist(lapply(w1, function(a) sum(a^2)))))
    expect_lt(rel, 1e-5)
    # Logged metrics are the global ones.
    expect_equal(res$history$metrics$loss, one$history$metrics$loss, tolerance = 1e-5)
    expect_equal(res$history$metrics$accuracy, one$history$metrics$accuracy, tolerance = 1e-12)
    for (k in seq_len(n - 1)) expect_identical(mirrored:::replica_weights(res$model, k), w)
    # Rows each replica processed at every step: contiguous slices, first ones larger.
    expect_length(log$rows, 9)
    for (s in seq_along(log$rows)) {
      global <- if (s %% 3 == 0) 3 else 10
      expect_equal(log$rows[[s]], global %/% n + as.numeric(seq_len(n) - 1 < global %% n))
    }
    info <- mirrored:::replica_info(res$model)
    expect_equal(info$devices, paste0("cpu:", seq_len(n) - 1))
    expect_equal(anyDuplicated(info$threads), 0)
    expect_equal(anyDuplicated(info$param_buffers), 0)
  }
})

test_that("with(strategy$scope()) evaluates in the caller's environment and restores the scope", {
  s2 <- quiet_strategy(c("/cpu:0", "/cpu:1"))
  s3 <- quiet_strategy(c("cpu:0", "CPU:1", "/device:CPU:2"))
  expect_equal(get_strategy()$num_replicas_in_sync, 1)
  value <- with(s2$scope(), {
    inside <- get_strategy()$num_replicas_in_sync
    nested <- with(s3$scope(), get_strategy()$num_replicas_in_sync)
    after_nested <- get_strategy()$num_replicas_in_sync
    "block value"
  })
  expect_equal(value, "block value")
  expect_equal(c(inside, nested, after_nested), c(2, 3, 2))
  expect_error(with(s2$scope(), stop("boom")), "boom")
  expect_equal(get_strategy()$num_replicas_in_sync, 1)
  f <- function() {
    with(s2$scope(), m <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1))
    m
  }
  expect_equal(f()$strategy$num_replicas_in_sync, 2)
})

test_that("the vignette's lines run: tf$distribute$MirroredStrategy and Number of devices", {
  strategy <- suppressMessages(tf$distribute$MirroredStrategy(c("/cpu:0", "/cpu:1")))
  expect_output(cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync)), "Number of devices: 2")
  expect_message(default <- tf$distribute$MirroredStrategy(), "Using MirroredStrategy with devices")
  expect_equal(default$num_replicas_in_sync, max(1, cuda_device_count()))
  expect_output(print(strategy), "2 replicas")
  expect_s3_class(tf$distribute$NcclAllReduce(), "mirrored_cross_device_ops")
  s <- quiet_strategy(c("/cpu:0", "/cpu:1"), cross_device_ops = tf$distribute$HierarchicalCopyAllReduce())
  expect_equal(s$num_replicas_in_sync, 2)
  expect_true(all(c("name", "device_type") %in% names(list_devices())))
  expect_true("/device:CPU:0" %in% list_devices()$name)
})

test_that("bad devices and mixed strategies are classed errors", {
  expect_error(mirrored_strategy(c("/cpu:0", "cpu:0")), class = "mirrored_value_error", regexp = "more than once")
  expect_error(mirrored_strategy(character()), class = "mirrored_value_error", regexp = "devices")
  expect_error(mirrored_strategy("tpu:0"), class = "mirrored_value_error", regexp = "not a device name")
  expect_error(mirrored_strategy(c("/cpu:0", NA)), class = "mirrored_value_error")
  if (cuda_device_count() == 0) {
    expect_error(mirrored_strategy("/gpu:0"), class = "mirrored_device_error", regexp = "does not exist")
    expect_error(set_logical_devices("GPU", 2), class = "mirrored_error")
  }
  expect_error(mirrored_strategy(c("/cpu:0", "/cpu:1"), cross_device_ops = "nccl"), class = "mirrored_value_error",
               regexp = "GPU")
  expect_error(mirrored_strategy("/cpu:0", cross_device_ops = "magic"), class = "mirrored_value_error")
  a <- quiet_strategy(c("/cpu:0", "/cpu:1"))
  b <- quiet_strategy(c("/cpu:0", "/cpu:1", "/cpu:2"))
  with(a$scope(), model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1))
  expect_error(with(b$scope(), compile(model, optimizer = "sgd", loss = "mse")),
               class = "mirrored_value_error", regexp = "another strategy")
  with(a$scope(), compile(model, optimizer = "sgd", loss = "mse"))
  x <- matrix(runif(20), 10)
  expect_error(with(b$scope(), fit(model, x, matrix(runif(10)), verbose = 0)), class = "mirrored_value_error")
  expect_silent(fit(model, x, matrix(runif(10)), verbose = 0))
})

test_that("a failing or stalled replica is an error naming it and its step; no hang, no leaked thread", {
  gc()  # models of earlier tests release their threads first
  before <- thread_count()
  local({
    x <- matrix(runif(400), 100)
    y <- sample(0:1, 100, replace = TRUE)
    s <- quiet_strategy(c("/cpu:0", "/cpu:1", "/cpu:2"))
    with(s$scope(), {
      model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
      model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    })
    mirrored:::inject_replica_fault(model, 2, 4, "error")
    err <- expect_error(fit(model, x, y, batch_size = 10, verbose = 0), class = "mirrored_error")
    expect_match(conditionMessage(err), "replica 2 \\(cpu:2\\).*step 4.*injected failure")
    expect_equal(model$optimizer$iterations, 3)
    mirrored:::inject_replica_fault(model, 0, -1, "none")
    expect_silent(fit(model, x, y, batch_size = 10, verbose = 0))
    old <- options(mirrored.collective_timeout = 0.3)
    on.exit(options(old))
    with(s$scope(), {
      slow <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
      slow |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    })
    mirrored:::inject_replica_fault(slow, 1, 2, "stall", 1)
    t0 <- proc.time()[["elapsed"]]
    expect_error(fit(slow, x, y, batch_size = 10, verbose = 0), class = "mirrored_timeout_error",
                 regexp = "waiting for replica\\(s\\) 1")
    expect_lt(proc.time()[["elapsed"]] - t0, 5)
    rm(model, slow)
  })
  gc()
  expect_thread_count(before)
})

test_that("a global batch smaller than the number of replicas still trains correctly", {
  x <- matrix(rnorm(12), 6)
  y <- c(0, 1, 0, 1, 1, 0)
  one <- build_and_train(quiet_strategy("/cpu:0"), x, y, epochs = 2, batch_size = 2)
  four <- build_and_train(quiet_strategy(paste0("/cpu:", 0:3)), x, y, epochs = 2, batch_size = 2)
  w1 <- unlist(get_weights(one$model))
  w4 <- unlist(get_weights(four$model))
  expect_lt(sqrt(sum((w1 - w4)^2) / sum(w1^2)), 1e-5)
})

test_that("cross_device_ops selects the reduction: host staging gives the thread all-reduce's sums", {
  set.seed(3)
  x <- matrix(rnorm(23 * 6), 23)
  y <- sample(0:3, 23, replace = TRUE)
  threads <- build_and_train(quiet_strategy(c("/cpu:0", "/cpu:1")), x, y)
  staged_strategy <- quiet_strategy(c("/cpu:0", "/cpu:1"), cross_device_ops = tf$distribute$ReductionToOneDevice())
  expect_output(print(staged_strategy), "all-reduce: host-staged reduction")
  expect_output(print(quiet_strategy(c("/cpu:0", "/cpu:1"))), "all-reduce: thread all-reduce")
  staged <- build_and_train(staged_strategy, x, y)
  expect_identical(mirrored:::cpp_model_communicator(staged$model$ptr())[["name"]], "host-staged reduction")
  # Both sum each element in rank order, so the weights are bit-identical.
  expect_identical(get_weights(staged$model), get_weights(threads$model))
})

test_that("list_devices() describes GPUs and options(mirrored.allow_tf32) is checked", {
  d <- list_devices()
  expect_named(d, c("name", "device_type", "physical_device", "description", "memory_total", "memory_free"))
  expect_equal(nrow(list_devices("GPU")), cuda_device_count())
  if (cuda_device_count() > 0) expect_true(all(list_devices("GPU")$memory_total > 0))
  old <- options(mirrored.allow_tf32 = "yes")
  on.exit(options(old), add = TRUE)
  m <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1)
  expect_error(m$ptr(), class = "mirrored_value_error", regexp = "allow_tf32")
})

test_that("device names and cross_device_ops are decided by the core, displayed by R", {
  s <- quiet_strategy(c("CPU:1", "/job:localhost/replica:0/task:0/device:CPU:0"))
  expect_identical(s$devices, c("cpu:1", "cpu:0"))
  expect_identical(s$placement$display, c("/device:CPU:1", "/device:CPU:0"))
  expect_output(print(s), "/device:CPU:1, /device:CPU:0")
  expect_error(mirrored_strategy("/cpu:0", cross_device_ops = "nccl"), class = "mirrored_value_error",
               regexp = "GPU")
  expect_error(mirrored_strategy("/cpu:0", cross_device_ops = 3), class = "mirrored_value_error",
               regexp = "cross_device_ops")
  expect_identical(list_devices("CPU")$physical_device, NA_integer_)
})
