# callback_model_checkpoint() (file path templates, best-only, verbose
# messages) and callback_backup_and_restore() within one process.

test_that("file path templates follow Python's str.format", {
  f <- mirrored:::py_format
  int <- function(v) structure(as.integer(v), py_int = TRUE)
  expect_equal(f("ckpt-{epoch:02d}-{val_loss:.2f}.keras", list(epoch = int(3), val_loss = 0.12345)),
               "ckpt-03-0.12.keras")
  expect_equal(f("{epoch}-{batch:04d}", list(epoch = int(12), batch = int(7))), "12-0007")
  expect_equal(f("{loss}", list(loss = 0.1)), "0.1")
  expect_equal(f("{loss:.3e}|{acc:.1%}|{x:>8.3f}|{x:<7.1f}|{x:^9.2f}|{y:+d}", list(loss = 0.000123, acc = 0.9234, x = 3.14159, y = int(5))),
               "1.230e-04|92.3%|   3.142|3.1    |  3.14   |+5")
  expect_equal(f("{n:,d} {{literal}}", list(n = int(1234567))), "1,234,567 {literal}")
  expect_equal(f("{v:g} {w:.3g}", list(v = 0.0001, w = 123456)), "0.0001 1.23e+05")
  expect_error(f("{nope}", list()), class = "py_format_error")
  expect_error(f("{loss:d}", list(loss = 0.5)), class = "py_format_error")
  expect_error(mirrored:::checkpoint_path("{val_acc}.keras", 1, NULL, list(loss = 1)),
               class = "mirrored_value_error", regexp = "Failed to format")
})

checkpoint_model <- function() {
  set.seed(8)
  m <- keras_model_sequential(input_shape = 3) |> layer_dense(4, activation = "relu") |> layer_dense(2)
  m |> compile(optimizer = optimizer_sgd(0.1), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
               metrics = "accuracy")
  m
}

test_that("callback_model_checkpoint() saves every epoch, best only, or weights only", {
  set.seed(1)
  x <- matrix(runif(120), ncol = 3)
  y <- as.integer(x[, 1] > x[, 2])
  dir <- tempfile()
  m <- checkpoint_model()
  out <- capture.output(fit(m, x, y, epochs = 3, batch_size = 8, verbose = 0, validation_split = 0.25,
                            callbacks = list(callback_model_checkpoint(file.path(dir, "m-{epoch:02d}-{val_loss:.3f}.keras"),
                                                                       verbose = 1))))
  files <- sort(list.files(dir))
  expect_length(files, 3)
  expect_match(files, "^m-0[1-3]-[0-9]+\\.[0-9]{3}\\.keras$")
  expect_true(any(grepl("^Epoch 1: saving model to .*m-01-", out)))
  expect_identical(get_weights(load_model(file.path(dir, files[3]))), get_weights(m))
  # best only, with a threshold nothing beats: no file, "did not improve" messages
  dir2 <- tempfile()
  out <- capture.output(fit(checkpoint_model(), x, y, epochs = 2, batch_size = 8, verbose = 0, validation_split = 0.25,
                            callbacks = list(callback_model_checkpoint(file.path(dir2, "best.keras"), save_best_only = TRUE,
                                                                       initial_value_threshold = -1, verbose = 1))))
  expect_false(file.exists(file.path(dir2, "best.keras")))
  expect_true(any(grepl("^Epoch 2: val_loss did not improve from -1.00000$", out)))
  out <- capture.output(fit(checkpoint_model(), x, y, epochs = 2, batch_size = 8, verbose = 0, validation_split = 0.25,
                            callbacks = list(callback_model_checkpoint(file.path(dir2, "best.weights.h5"), monitor = "val_accuracy",
                                                                       save_best_only = TRUE, save_weights_only = TRUE, verbose = 1))))
  expect_true(file.exists(file.path(dir2, "best.weights.h5")))
  expect_true(any(grepl("^Epoch 1: val_accuracy improved from -inf to [0-9.]+, saving model to ", out)))
  expect_error(callback_model_checkpoint("x.h5"), class = "mirrored_value_error", regexp = ".keras")
  expect_error(callback_model_checkpoint("x.keras", save_weights_only = TRUE), class = "mirrored_value_error",
               regexp = "weights.h5")
  expect_error(callback_model_checkpoint("x.keras", save_freq = 0), class = "mirrored_value_error")
  expect_error(callback_model_checkpoint("x.keras", mode = "up"), class = "mirrored_value_error")
})

test_that("callback_backup_and_restore() resumes an interrupted fit() in the same session", {
  set.seed(1)
  x <- matrix(runif(150), ncol = 3)
  y <- as.integer(x[, 1] > x[, 2])
  set.seed(5)
  a <- checkpoint_model()
  fit(a, x, y, epochs = 4, batch_size = 8, verbose = 0)
  for (freq in list("epoch", 5L)) {
    dir <- tempfile()
    stopper <- callback_lambda(on_epoch_end = function(epoch, logs) if (epoch == 2) stop("simulated crash"))
    set.seed(5)
    b <- checkpoint_model()
    expect_error(fit(b, x, y, epochs = 4, batch_size = 8, verbose = 0,
                     callbacks = list(callback_backup_and_restore(dir, save_freq = freq), stopper)), "simulated crash")
    expect_true(file.exists(file.path(dir, "latest.weights.h5")))
    meta <- mirrored:::parse_json_bytes(readBin(file.path(dir, "training_metadata.json"), "raw", 1e4), "m")
    expect_true(meta$epoch %in% 1:2)
    set.seed(5)
    c <- checkpoint_model()
    h <- fit(c, x, y, epochs = 4, batch_size = 8, verbose = 0,
             callbacks = list(callback_backup_and_restore(dir, save_freq = freq, double_checkpoint = TRUE)))
    expect_identical(get_weights(c), get_weights(a))
    expect_false(dir.exists(dir))  # delete_checkpoint
  }
})
