# Callbacks driven by a fake model and a fake fit() loop that follows the
# protocol of callback_list() (1-based epochs, stop after an epoch when
# model$stop_training is set). No C++ is needed.

fake_model <- function(weights = list(kernel = 0)) {
  m <- new.env()
  m$name <- "fake"
  m$stop_training <- FALSE
  m$w <- weights
  m$get_weights <- function() m$w
  m$set_weights <- function(w) {
    m$w <- w
    invisible(NULL)
  }
  m$optimizer <- new.env()
  m$optimizer$learning_rate <- 0.01
  m
}

# Runs the epochs whose logs are given; `weights[[e]]` (if any) are the
# model's weights at the end of epoch e. Returns the epochs run and the
# history object.
fake_fit <- function(model, callbacks, epoch_logs, weights = NULL, verbose = 0,
                     steps = 10L, initial_epoch = 1L) {
  epochs <- length(epoch_logs)
  history <- callback_history()
  cbl <- callback_list(c(callbacks, list(history)), model,
                       list(verbose = verbose, epochs = epochs, steps = steps))
  model$stop_training <- FALSE
  cbl$on_train_begin()
  ran <- integer()
  last <- NULL
  for (e in seq(initial_epoch, epochs)) {
    cbl$on_epoch_begin(e)
    if (cbl$wants_batch_events("train")) {
      for (b in seq_len(2)) {
        cbl$on_train_batch_begin(b)
        cbl$on_train_batch_end(b, list(loss = epoch_logs[[e]]$loss))
      }
    }
    if (!is.null(weights)) model$w <- weights[[e]]
    last <- cbl$on_epoch_end(e, epoch_logs[[e]])
    ran <- c(ran, e)
    if (isTRUE(model$stop_training)) break
  }
  cbl$on_train_end(last)
  list(epochs = ran, history = history$history(), last_logs = last)
}

loss_logs <- function(values, key = "loss") {
  lapply(values, function(v) stats::setNames(list(v), key))
}

# ---- Callback() and callback_lambda() -------------------------------------------

test_that("callback_lambda passes 1-based epoch and batch numbers", {
  epochs <- integer()
  batches <- integer()
  cb <- callback_lambda(
    on_epoch_begin = function(epoch, logs) epochs <<- c(epochs, epoch),
    on_train_batch_end = function(batch, logs) batches <<- c(batches, batch)
  )
  fake_fit(fake_model(), list(cb), loss_logs(c(1, 2, 3)))
  expect_equal(epochs, 1:3)
  expect_equal(batches, rep(1:2, 3))
})

test_that("a named list returned by a callback is merged into the logs", {
  cb <- callback_lambda(on_epoch_end = function(epoch, logs) {
    list(double_loss = 2 * logs$loss, epoch_seen = epoch)
  })
  seen_by_next <- NULL
  spy <- callback_lambda(on_epoch_end = function(epoch, logs) seen_by_next <<- logs)
  res <- fake_fit(fake_model(), list(cb, spy), loss_logs(c(0.5, 0.25)))
  expect_equal(seen_by_next, list(loss = 0.25, double_loss = 0.5, epoch_seen = 2L))
  expect_equal(res$history$metrics$double_loss, c(1, 0.5))
  expect_equal(res$last_logs$epoch_seen, 2L)
  # non-list return values are ignored
  quiet <- callback_lambda(on_epoch_end = function(epoch, logs) 42)
  res <- fake_fit(fake_model(), list(quiet), loss_logs(1))
  expect_equal(names(res$history$metrics), "loss")
})

test_that("callback_lambda keeps the functions' environments and takes other methods in ...", {
  counter <- 0
  make <- function() {
    local_state <- 10
    callback_lambda(on_train_end = function(logs) counter <<- counter + local_state,
                    on_test_begin = function(logs) counter <<- counter + 1)
  }
  cb <- make()
  cbl <- callback_list(cb, fake_model(), list())
  cbl$on_train_end()
  cbl$on_test_begin()
  expect_equal(counter, 11)
  expect_error(callback_lambda(on_epoch_end = 1), class = "mirrored_value_error")
  expect_error(callback_lambda(on_something = function(logs) NULL),
               class = "mirrored_value_error")
  expect_error(callback_lambda(function(logs) NULL, function(logs) NULL,
                               function(logs) NULL, function(logs) NULL,
                               function(logs) NULL, function(logs) NULL,
                               function(logs) NULL),
               class = "mirrored_value_error")
})

test_that("Callback() makes a class whose methods see self, model and params", {
  Recorder <- Callback("Recorder",
    on_train_begin = function(logs = NULL) {
      self$seen <- c(self$seen, paste0("begin:", self$params$epochs, ":", self$model$name))
    },
    on_epoch_end = function(epoch, logs = NULL) {
      self$seen <- c(self$seen, paste0("epoch", epoch))
      if (epoch == 2) self$model$stop_training <- TRUE
    },
    public = list(seen = character())
  )
  expect_s3_class(Recorder, "mirrored_callback_generator")
  rec <- Recorder()
  expect_true(inherits(rec, "Callback"))
  expect_true(inherits(rec, "Recorder"))
  res <- fake_fit(fake_model(), list(rec), loss_logs(c(3, 2, 1)))
  expect_equal(rec$seen, c("begin:3:fake", "epoch1", "epoch2"))
  expect_equal(res$epochs, 1:2)
  expect_true(inherits(Recorder$new(), "Recorder"))
})

test_that("Callback() supports initialize, private members and inheritance", {
  Base <- Callback("Base",
    initialize = function(step) private$step <- step,
    on_epoch_end = function(epoch, logs = NULL) list(scaled = epoch * private$step),
    private = list(step = NULL)
  )
  Child <- Callback("Child",
    on_epoch_end = function(epoch, logs = NULL) {
      out <- super$on_epoch_end(epoch, logs)
      out$child <- TRUE
      out
    },
    inherit = Base
  )
  res <- fake_fit(fake_model(), list(Child(step = 10)), loss_logs(c(1, 1)))
  expect_equal(res$history$metrics$scaled, c(10, 20))
  expect_equal(res$history$metrics$child, c(1, 1))
  expect_error(Callback("Bad", inherit = R6::R6Class("X")), class = "mirrored_value_error")
  expect_error(Callback(c("a", "b")), class = "mirrored_value_error")
  expect_error(Callback("Bad", on_epoch_end = "nope"), class = "mirrored_value_error")
  expect_error(Callback("Bad", public = list(on_train_end = 3)), class = "mirrored_value_error")
})

test_that("callback_list validates callbacks and reports wanted batch events", {
  expect_error(callback_list(list(1), NULL, list()), class = "mirrored_value_error")
  expect_error(callback_list("x", NULL, list()), class = "mirrored_value_error")
  none <- callback_list(list(callback_lambda(on_epoch_end = function(e, l) NULL)), NULL, list())
  expect_false(none$wants_batch_events("train"))
  train <- callback_list(callback_lambda(on_train_batch_begin = function(b, l) NULL), NULL, list())
  expect_true(train$wants_batch_events("train"))
  expect_false(train$wants_batch_events("test"))
  Old <- Callback("Old", on_batch_end = function(batch, logs = NULL) self$n <- batch,
                  public = list(n = 0))
  old <- Old()
  alias <- callback_list(list(old), NULL, list())
  expect_true(alias$wants_batch_events())
  alias$on_train_batch_end(4, list())
  expect_equal(old$n, 4L)
  test <- callback_list(callback_lambda(on_test_batch_end = function(b, l) NULL), NULL, list())
  expect_true(test$wants_batch_events("test"))
  expect_true(is.list(callback_list(NULL, NULL, list())$callbacks))
})

# ---- callback_early_stopping() -----------------------------------------------------

test_that("early stopping waits `patience` epochs without improvement", {
  cb <- callback_early_stopping(monitor = "loss", patience = 2, verbose = 1)
  out <- capture.output(res <- fake_fit(fake_model(), list(cb), loss_logs(c(1, 0.9, 0.95, 0.96, 0.5))))
  expect_equal(res$epochs, 1:4)
  expect_equal(out, "Epoch 4: early stopping")
  expect_equal(cb$stopped_epoch, 3L) # 0-based, like Keras
  cb0 <- callback_early_stopping(monitor = "loss")
  expect_equal(fake_fit(fake_model(), list(cb0), loss_logs(c(1, 0.9, 0.95, 0.5)))$epochs, 1:3)
})

test_that("min_delta sets the smallest change that counts as improvement", {
  logs <- loss_logs(c(1, 0.9, 0.85, 0.5))
  strict <- callback_early_stopping(monitor = "loss", min_delta = 0.2, patience = 1)
  expect_equal(fake_fit(fake_model(), list(strict), logs)$epochs, 1:2)
  loose <- callback_early_stopping(monitor = "loss", min_delta = 0, patience = 1)
  expect_equal(fake_fit(fake_model(), list(loose), logs)$epochs, 1:4)
  # negative min_delta means the same as positive (Keras takes abs())
  neg <- callback_early_stopping(monitor = "loss", min_delta = -0.2, patience = 1)
  expect_equal(neg$min_delta, 0.2)
})

test_that("restore_best_weights puts back the weights of the best epoch", {
  model <- fake_model()
  cb <- callback_early_stopping(patience = 2, restore_best_weights = TRUE, verbose = 1)
  out <- capture.output(res <- fake_fit(
    model, list(cb), loss_logs(c(0.5, 0.3, 0.4, 0.45, 0.6), "val_loss"),
    weights = lapply(1:5, function(e) list(kernel = e))
  ))
  expect_equal(res$epochs, 1:4)
  expect_equal(model$w, list(kernel = 2))
  expect_equal(out, c("Epoch 4: early stopping",
                      "Restoring model weights from the end of the best epoch: 2."))
  # without the option the last weights stay
  model2 <- fake_model()
  cb2 <- callback_early_stopping(patience = 2)
  fake_fit(model2, list(cb2), loss_logs(c(0.5, 0.3, 0.4, 0.45, 0.6), "val_loss"),
           weights = lapply(1:5, function(e) list(kernel = e)))
  expect_equal(model2$w, list(kernel = 4))
})

test_that("mode auto maximises accuracy-like metrics and minimises losses", {
  acc <- loss_logs(c(0.5, 0.6, 0.55, 0.58), "val_accuracy")
  auto <- callback_early_stopping(monitor = "val_accuracy", patience = 1)
  expect_equal(fake_fit(fake_model(), list(auto), acc)$epochs, 1:3)
  as_min <- callback_early_stopping(monitor = "val_accuracy", patience = 1, mode = "min")
  expect_equal(fake_fit(fake_model(), list(as_min), acc)$epochs, 1:2)
  as_max <- callback_early_stopping(monitor = "val_mse_custom", patience = 1, mode = "max")
  expect_equal(fake_fit(fake_model(), list(as_max), loss_logs(c(1, 2, 1), "val_mse_custom"))$epochs, 1:3)
  expect_equal(metric_direction("val_sparse_categorical_accuracy"), "up")
  expect_equal(metric_direction("auc"), "up")
  expect_equal(metric_direction("val_loss"), "down")
  expect_equal(metric_direction("mean_squared_error"), "down")
  expect_null(metric_direction("foo"))
  unknown <- callback_early_stopping(monitor = "foo")
  expect_error(fake_fit(fake_model(), list(unknown), loss_logs(1, "foo")),
               class = "mirrored_value_error")
})

test_that("baseline: wait only resets on epochs that beat the baseline", {
  logs <- loss_logs(c(0.9, 0.8, 0.85, 0.85, 0.85))
  with_base <- callback_early_stopping(monitor = "loss", patience = 2, baseline = 0.5)
  expect_equal(fake_fit(fake_model(), list(with_base), logs)$epochs, 1:3)
  without <- callback_early_stopping(monitor = "loss", patience = 2)
  expect_equal(fake_fit(fake_model(), list(without), logs)$epochs, 1:4)
})

test_that("start_from_epoch skips the first epochs", {
  logs <- loss_logs(c(1, 2, 3, 4, 5))
  late <- callback_early_stopping(monitor = "loss", start_from_epoch = 2)
  expect_equal(fake_fit(fake_model(), list(late), logs)$epochs, 1:4)
  early <- callback_early_stopping(monitor = "loss")
  expect_equal(fake_fit(fake_model(), list(early), logs)$epochs, 1:2)
})

test_that("a missing monitored key warns like Keras and never stops", {
  cb <- callback_early_stopping(monitor = "val_loss")
  expect_warning(
    fake_fit(fake_model(), list(cb), loss_logs(1)),
    "Early stopping conditioned on metric `val_loss` which is not available. Available metrics are: loss",
    class = "mirrored_callback_warning"
  )
  n_warnings <- 0
  res <- withCallingHandlers(
    fake_fit(fake_model(), list(cb), loss_logs(c(1, 2, 3))),
    mirrored_callback_warning = function(w) {
      n_warnings <<- n_warnings + 1
      invokeRestart("muffleWarning")
    }
  )
  expect_equal(n_warnings, 3)
  expect_equal(res$epochs, 1:3)
})

test_that("early stopping arguments are validated", {
  expect_error(callback_early_stopping(monitor = 1), class = "mirrored_value_error")
  expect_error(callback_early_stopping(patience = -1), class = "mirrored_value_error")
  expect_error(callback_early_stopping(patience = 1.5), class = "mirrored_value_error")
  expect_error(callback_early_stopping(mode = "maximum"), class = "mirrored_value_error")
  expect_error(callback_early_stopping(baseline = "a"), class = "mirrored_value_error")
  expect_error(callback_early_stopping(restore_best_weights = NA), class = "mirrored_value_error")
  expect_error(callback_early_stopping(start_from_epoch = -2), class = "mirrored_value_error")
  expect_error(callback_early_stopping(patience = -1), "patience")
})

# ---- callback_csv_logger() ------------------------------------------------------------

test_that("the CSV logger writes Keras' header and rows", {
  path <- tempfile(fileext = ".csv")
  cb <- callback_csv_logger(path)
  logs <- list(
    list(loss = 0.5, sparse_categorical_accuracy = 0.25),
    list(loss = 0.30592820048332214, sparse_categorical_accuracy = 0.9,
         val_loss = 1e-05, val_sparse_categorical_accuracy = 1),
    list(loss = 0.1, sparse_categorical_accuracy = 1 / 3)
  )
  fake_fit(fake_model(), list(cb), logs)
  content <- rawToChar(readBin(path, "raw", file.size(path)))
  expect_equal(content, paste0(
    "epoch,loss,sparse_categorical_accuracy,val_loss,val_sparse_categorical_accuracy\r\n",
    "0,0.5,0.25,NA,NA\r\n",
    "1,0.30592820048332214,0.9,1e-05,1.0\r\n",
    "2,0.1,0.3333333333333333,NA,NA\r\n"
  ))
  df <- utils::read.csv(path)
  expect_equal(df$epoch, 0:2)
  expect_equal(df$loss, c(0.5, 0.30592820048332214, 0.1))
})

test_that("the CSV logger sorts keys, keeps val_ keys, appends and uses the separator", {
  path <- tempfile(fileext = ".csv")
  logs <- list(list(val_b = 2, a = 1, val_a = 3, b = -4))
  fake_fit(fake_model(), list(callback_csv_logger(path, separator = ";")), logs)
  expect_equal(readLines(path), c("epoch;a;b;val_a;val_b", "0;1.0;-4.0;3.0;2.0"))
  fake_fit(fake_model(), list(callback_csv_logger(path, separator = ";", append = TRUE)),
           list(list(a = 5, b = 6, val_a = 7, val_b = 8)))
  expect_equal(readLines(path), c("epoch;a;b;val_a;val_b", "0;1.0;-4.0;3.0;2.0",
                                  "0;5.0;6.0;7.0;8.0"))
  # overwrite when append = FALSE
  fake_fit(fake_model(), list(callback_csv_logger(path)), list(list(a = 1e20, val_a = NaN)))
  expect_equal(readLines(path), c("epoch,a,val_a", "0,1e+20,nan"))
  expect_error(callback_csv_logger(NULL), class = "mirrored_value_error")
  expect_error(callback_csv_logger(path, separator = ",,"), class = "mirrored_value_error")
  expect_error(callback_csv_logger(path, append = "yes"), class = "mirrored_value_error")
})

test_that("numbers are written as Python's str(float)", {
  expect_equal(py_float_str(0.1), "0.1")
  expect_equal(py_float_str(123), "123.0")
  expect_equal(py_float_str(1e16), "1e+16")
  expect_equal(py_float_str(1e15), "1000000000000000.0")
  expect_equal(py_float_str(0.0001), "0.0001")
  expect_equal(py_float_str(2.5e-7), "2.5e-07")
  expect_equal(py_float_str(-1.5), "-1.5")
  expect_equal(py_float_str(0), "0.0")
  expect_equal(py_float_str(as_float32(0.001)), "0.0010000000474974513")
  expect_equal(py_float_str(Inf), "inf")
})

# ---- callback_reduce_lr_on_plateau() -----------------------------------------------------

test_that("the learning rate is reduced by `factor` after `patience`, down to min_lr", {
  model <- fake_model()
  cb <- callback_reduce_lr_on_plateau(monitor = "loss", factor = 0.5, patience = 1,
                                      min_lr = 0.002, verbose = 1)
  out <- capture.output(res <- fake_fit(model, list(cb), loss_logs(rep(1, 5))))
  # learning_rate in the logs is the rate used during the epoch
  expect_equal(res$history$metrics$learning_rate, c(0.01, 0.01, 0.005, 0.0025, 0.002))
  expect_equal(model$optimizer$learning_rate, 0.002)
  expect_equal(out, c("", "Epoch 2: ReduceLROnPlateau reducing learning rate to 0.005.",
                      "", "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.0025.",
                      "", "Epoch 4: ReduceLROnPlateau reducing learning rate to 0.002."))
})

test_that("cooldown pauses counting after a reduction; improvements reset the wait", {
  model <- fake_model()
  cb <- callback_reduce_lr_on_plateau(monitor = "loss", factor = 0.5, patience = 1,
                                      cooldown = 2)
  res <- fake_fit(model, list(cb), loss_logs(rep(1, 5)))
  expect_equal(res$history$metrics$learning_rate, c(0.01, 0.01, 0.005, 0.005, 0.0025))
  model2 <- fake_model()
  improving <- callback_reduce_lr_on_plateau(monitor = "loss", patience = 1)
  fake_fit(model2, list(improving), loss_logs(c(1, 0.9, 0.8, 0.7)))
  expect_equal(model2$optimizer$learning_rate, 0.01)
  # "acc" in the name: maximised under mode auto
  model3 <- fake_model()
  acc <- callback_reduce_lr_on_plateau(monitor = "val_acc", patience = 1, factor = 0.1)
  fake_fit(model3, list(acc), loss_logs(c(0.5, 0.6, 0.7), "val_acc"))
  expect_equal(model3$optimizer$learning_rate, 0.01)
})

test_that("reduce_lr warns on a missing monitor and validates arguments", {
  cb <- callback_reduce_lr_on_plateau()
  expect_warning(fake_fit(fake_model(), list(cb), loss_logs(1)),
                 "Learning rate reduction is conditioned on metric `val_loss`",
                 class = "mirrored_callback_warning")
  expect_error(callback_reduce_lr_on_plateau(factor = 1), class = "mirrored_value_error")
  expect_error(callback_reduce_lr_on_plateau(factor = 1), "factor")
  expect_error(callback_reduce_lr_on_plateau(patience = "a"), class = "mirrored_value_error")
  expect_error(callback_reduce_lr_on_plateau(cooldown = -1), class = "mirrored_value_error")
  expect_error(callback_reduce_lr_on_plateau(min_lr = -1), class = "mirrored_value_error")
  expect_error(callback_reduce_lr_on_plateau(mode = "up"), class = "mirrored_value_error")
})

test_that("Callback() takes keras3 guides' forms: super$initialize(), new fields, a trailing comma", {
  Stopper <- new_callback_class("Stopper",
    initialize = function(patience = 0) {
      super$initialize()
      self$patience <- patience
    },
    on_train_begin = function(logs = NULL) {
      self$wait <- 0
      self$best <- Inf
    },
    on_epoch_end = function(epoch, logs = NULL) {
      self$wait <- self$wait + 1
    },
  )
  cb <- Stopper(patience = 2)
  expect_identical(cb$patience, 2)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = "mse")
  fit(model, matrix(runif(8), 4), runif(4), epochs = 3, verbose = 0, callbacks = list(cb))
  expect_identical(cb$wait, 3)
  expect_identical(cb$best, Inf)
})
