# The history callback and the keras_training_history class.

record_history <- function(epoch_logs, epochs = length(epoch_logs), steps = 5L) {
  h <- callback_history()
  cbl <- callback_list(list(h), NULL, list(verbose = 2, epochs = epochs, steps = steps))
  cbl$on_train_begin()
  for (e in seq_along(epoch_logs)) {
    cbl$on_epoch_begin(e)
    cbl$on_epoch_end(e, epoch_logs[[e]])
  }
  cbl$on_train_end()
  h$history()
}

three_epochs <- function() {
  record_history(list(
    list(loss = 0.9, sparse_categorical_accuracy = 0.7, val_loss = 1.1,
         val_sparse_categorical_accuracy = 0.65),
    list(loss = 0.5, sparse_categorical_accuracy = 0.8, val_loss = 0.7,
         val_sparse_categorical_accuracy = 0.75),
    list(loss = 0.26161, sparse_categorical_accuracy = 0.92321, val_loss = 0.15099,
         val_sparse_categorical_accuracy = 0.95243)
  ))
}

test_that("the history records one value per epoch in log order", {
  h <- three_epochs()
  expect_s3_class(h, "keras_training_history")
  expect_equal(h$params, list(verbose = 2, epochs = 3L, steps = 5L))
  expect_equal(names(h$metrics), c("loss", "sparse_categorical_accuracy", "val_loss",
                                   "val_sparse_categorical_accuracy"))
  expect_equal(h$metrics$loss, c(0.9, 0.5, 0.26161))
})

test_that("keys missing in some epochs are recorded as NA at their epoch", {
  h <- record_history(list(list(loss = 1), list(loss = 0.5, val_loss = 0.7), list(loss = 0.2)))
  expect_equal(h$metrics$val_loss, c(NA, 0.7, NA))
  expect_equal(h$metrics$loss, c(1, 0.5, 0.2))
})

test_that("print shows the final epoch like keras3", {
  out <- capture.output(print(three_epochs()))
  expect_equal(out, c(
    "",
    "Final epoch (plot to see history):",
    "                           loss: 0.2616",
    "    sparse_categorical_accuracy: 0.9232",
    "                       val_loss: 0.151",
    "val_sparse_categorical_accuracy: 0.9524 "
  ))
  big <- record_history(list(list(loss = 12345.678)))
  expect_equal(capture.output(print(big))[[3]], "loss: 12,346 ")
  # after early stopping the last trained epoch is shown
  short <- record_history(list(list(loss = 1), list(loss = 0.5)), epochs = 10)
  expect_equal(capture.output(print(short))[[3]], "loss: 0.5 ")
})

test_that("as.data.frame gives epoch/value/metric/data, padded to the epochs asked", {
  df <- as.data.frame(three_epochs())
  expect_equal(names(df), c("epoch", "value", "metric", "data"))
  expect_equal(nrow(df), 12L)
  expect_equal(df$epoch, rep(1:3, 4))
  expect_equal(levels(df$metric), c("loss", "sparse_categorical_accuracy"))
  expect_equal(levels(df$data), c("training", "validation"))
  expect_equal(as.character(df$data), rep(c("training", "validation"), each = 6))
  expect_equal(df$value[df$metric == "loss" & df$data == "validation"], c(1.1, 0.7, 0.15099))
  stopped <- as.data.frame(record_history(list(list(loss = 1, val_loss = 2),
                                               list(loss = 0.5, val_loss = 1.5)),
                                          epochs = 4))
  expect_equal(nrow(stopped), 8L)
  expect_equal(stopped$value, c(1, 0.5, NA, NA, 2, 1.5, NA, NA))
})

test_that("plot works with ggplot2 and base graphics", {
  h <- three_epochs()
  path <- tempfile(fileext = ".png")
  grDevices::png(path)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_null(plot(h, method = "base"))
  expect_null(plot(h, metrics = "loss", method = "base", main = "x"))
  skip_if_not_installed("ggplot2")
  p <- plot(h, method = "ggplot2")
  expect_s3_class(p, "ggplot")
  expect_silent(print(p))
  geoms <- vapply(p$layers, function(l) class(l$geom)[[1]], "")
  expect_equal(geoms, "GeomPoint") # no smooth with fewer than 10 epochs
  long <- record_history(lapply(1:12, function(e) list(loss = 1 / e, val_loss = 1.2 / e)))
  p_long <- plot(long)
  expect_equal(vapply(p_long$layers, function(l) class(l$geom)[[1]], ""),
               c("GeomPoint", "GeomSmooth"))
  expect_silent(print(p_long))
  p_bw <- plot(long, smooth = FALSE, theme_bw = TRUE)
  expect_equal(length(p_bw$layers), 1L)
  expect_silent(print(p_bw))
  expect_error(plot(h, metrics = "nope"), class = "mirrored_value_error")
  expect_true(file.exists(path))
})
