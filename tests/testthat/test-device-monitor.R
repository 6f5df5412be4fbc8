# callback_device_monitor() and fit(verbose = 2)'s summary: the core's step
# clock partitions each step's wall time into compute, all-reduce, input and
# host time (src/mr/train/step_clock.h, tested in C++ on hand-made
# timelines); here the R side on a short fit of the vignette's MLP.

monitored_fit <- function(devices, epochs = 2, verbose = 0) {
  d <- mnist_scaled()
  set_random_seed(1)
  strategy <- suppressMessages(mirrored_strategy(devices))
  model <- with(strategy$scope(), {
    m <- mlp()
    m |> compile(optimizer = "adam",
                 loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                 metrics = "sparse_categorical_accuracy")
    m
  })
  mon <- callback_device_monitor()
  out <- capture.output(
    model |> fit(d$x_train[1:640, ], d$y_train[1:640], batch_size = 64, epochs = epochs,
                 validation_data = list(d$x_test[1:128, ], d$y_test[1:128]),
                 callbacks = list(mon), verbose = verbose)
  )
  list(model = model, mon = mon, out = out)
}

expect_monitor_frame <- function(df, epochs, devices) {
  n <- length(devices)
  expect_s3_class(df, "data.frame")
  expect_named(df, c("epoch", "replica", "device", "steps", "step_ms", "compute_ms",
                     "allreduce_ms", "input_ms", "host_ms", "memory_mb", "peak_memory_mb",
                     "device_memory_mb", "gpu_util", "threads", "active_threads", "threads_why"))
  types <- vapply(df, typeof, "")
  expect_equal(unname(types), c("integer", "integer", "character", "integer", rep("double", 8),
                                rep("integer", 3), "character"))
  # A CPU replica's team: as many threads as the strategy says, all or some
  # of them working (fewer only with a reason).
  plan <- mirrored:::cpp_cpu_thread_plan(0L, n)
  expect_equal(df$threads, rep(plan$threads, epochs * n))
  expect_true(all(df$active_threads >= 1L & df$active_threads <= df$threads))
  expect_equal(df$threads_why == "", df$active_threads == df$threads)
  expect_equal(nrow(df), epochs * n)
  expect_equal(df$epoch, rep(seq_len(epochs), each = n))
  expect_equal(df$replica, rep(seq_len(n) - 1L, epochs))
  expect_equal(df$device, rep(sub("^/", "", devices), epochs))
  expect_equal(df$steps, rep(10L, epochs * n))  # 640 rows / 64
  # The parts partition the step's wall time (by construction, so to
  # rounding: far inside the 10% the issue asks for).
  parts <- df$compute_ms + df$allreduce_ms + df$input_ms + df$host_ms
  expect_equal(parts, df$step_ms, tolerance = 1e-9)
  expect_true(all(abs(parts - df$step_ms) <= 0.1 * df$step_ms))
  expect_true(all(df$compute_ms > 0 & df$input_ms > 0 & df$host_ms >= 0 & df$allreduce_ms >= 0))
  # Every replica's steps share the caller's step intervals.
  for (e in seq_len(epochs)) expect_equal(length(unique(df$step_ms[df$epoch == e])), 1L)
  # Host memory: at least the MLP's parameters, gradients and Adam's two
  # slots (4 x 269,322 floats), the peak at least what is in use; no GPU
  # figures on CPU replicas (and none from NVML, absent or not).
  expect_true(all(df$memory_mb >= 4 * 269322 * 4 / 1e6))
  expect_true(all(df$peak_memory_mb >= df$memory_mb))
  expect_true(all(is.na(df$device_memory_mb)))
  expect_true(all(is.na(df$gpu_util)))
}

test_that("callback_device_monitor() partitions each step on one CPU replica", {
  r <- monitored_fit("/cpu:0")
  df <- as.data.frame(r$mon)
  expect_identical(df, r$mon$data)
  expect_monitor_frame(df, 2, "/cpu:0")
  expect_equal(df$allreduce_ms, c(0, 0))  # nothing to reduce with one replica
})

test_that("callback_device_monitor() partitions each step on two CPU replicas", {
  r <- monitored_fit(c("/cpu:0", "/cpu:1"))
  df <- r$mon$data
  expect_monitor_frame(df, 2, c("/cpu:0", "/cpu:1"))
  expect_true(all(df$allreduce_ms > 0))
  # A second fit() starts a new record.
  d <- mnist_scaled()
  r$model |> fit(d$x_train[1:128, ], d$y_train[1:128], batch_size = 64, epochs = 1, verbose = 0,
                 callbacks = list(r$mon))
  expect_equal(r$mon$data$epoch, c(1L, 1L))
  expect_equal(r$mon$data$steps, c(2L, 2L))
})

test_that("fit(verbose = 2) ends with a one-line summary of the monitor's figures", {
  r <- monitored_fit(c("/cpu:0", "/cpu:1"), epochs = 2, verbose = 2)
  expect_length(r$out, 5)
  expect_equal(r$out[c(1, 3)], c("Epoch 1/2", "Epoch 2/2"))
  expect_match(r$out[5], "^time per step [0-9.]+ (us|ms|s): compute [0-9]+%, all-reduce [0-9]+%, input [0-9]+%, host [0-9]+%; peak memory [0-9.]+ (MB|GB) per replica$")
  # The shares are those of the monitor's data over both epochs and replicas.
  df <- r$mon$data
  wall <- sum(df$step_ms * df$steps)
  pct <- as.numeric(regmatches(r$out[5], gregexpr("[0-9]+(?=%)", r$out[5], perl = TRUE))[[1]])
  expected <- vapply(c("compute_ms", "allreduce_ms", "input_ms", "host_ms"),
                     function(k) 100 * sum(df[[k]] * df$steps) / wall, 0)
  expect_equal(pct, round(unname(expected)))
  expect_match(r$out[5], sprintf("peak memory %s MB", format(signif(max(df$peak_memory_mb), 3))), fixed = TRUE)
  # verbose = 0 and 1 print no summary.
  expect_false(any(grepl("time per step", monitored_fit("/cpu:0", epochs = 1)$out)))
})

test_that("the device monitor's plot and its errors", {
  mon <- callback_device_monitor()
  expect_equal(nrow(mon$data), 0L)
  expect_error(plot(mon), class = "mirrored_value_error", regexp = "no epochs to plot")
  r <- monitored_fit("/cpu:0", epochs = 1)
  path <- tempfile(fileext = ".pdf")
  grDevices::pdf(path)
  on.exit(unlink(path))
  expect_identical(plot(r$mon), r$mon)
  expect_error(plot(r$mon, 1), class = "mirrored_value_error", regexp = "takes no")
  grDevices::dev.off()
  expect_error(callback_device_monitor(1), "unused argument")
  expect_error(as.data.frame(r$mon, foo = 1), class = "mirrored_error")
})

test_that("callback_device_monitor() on a GPU reports device memory and utilisation", {
  if (cuda_device_count() == 0L) {
    if (identical(Sys.getenv("MIRRORED_TEST_CUDA"), "1")) fail("MIRRORED_TEST_CUDA=1 but no CUDA device")
    skip("needs a CUDA device")
  }
  r <- monitored_fit("/gpu:0", epochs = 1)
  df <- r$mon$data
  expect_equal(df$device, "gpu:0")
  expect_equal(df$steps, 10L)
  expect_equal(df$compute_ms + df$allreduce_ms + df$input_ms + df$host_ms, df$step_ms, tolerance = 1e-9)
  expect_true(df$memory_mb >= 4 * 269322 * 4 / 1e6)
  expect_true(df$peak_memory_mb >= df$memory_mb)
  expect_true(df$device_memory_mb >= df$memory_mb)
  # NVML comes with the driver; without it (or an unknown device) NA.
  expect_true(is.na(df$gpu_util) || (df$gpu_util >= 0L && df$gpu_util <= 100L))
})
