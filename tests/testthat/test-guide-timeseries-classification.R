# keras3's example "Timeseries classification from scratch"
# (vignettes-src/examples/timeseries/timeseries_classification_from_scratch.Rmd),
# its R chunks as written, with mirrored loaded instead of keras3.
# No network: the FordA TSV files are replaced by generated TSV files of the
# same layout (an integer label -1/1, then 500 z-normalized doubles), read by
# the guide's own get_data(). Fewer rows and 3 epochs instead of 500.

# Two-class series: class 1 a noisy sine of period 25, class -1 of period 50,
# each row z-normalized as FordA's.
write_forda_like <- function(path, n, seed) {
  set.seed(seed)
  y <- sample(c(-1L, 1L), n, replace = TRUE)
  t <- seq_len(500)
  x <- t(vapply(y, function(cl) {
    s <- sin(2 * pi * t / ifelse(cl == 1L, 25, 50) + runif(1, 0, 2 * pi)) + rnorm(500, sd = 0.5)
    (s - mean(s)) / sd(s)
  }, numeric(500)))
  utils::write.table(data.frame(y, x), path, sep = "\t", row.names = FALSE,
                     col.names = FALSE)
  path
}

guide_forda <- function(env = parent.frame()) {
  dir <- withr::local_tempdir(.local_envir = env)
  write_forda_like(file.path(dir, "FordA_TRAIN.tsv"), 96, 1)
  write_forda_like(file.path(dir, "FordA_TEST.tsv"), 64, 2)
  paste0(dir, "/")
}

# The guide's "Read the TSV data" chunk, with root_url a local directory.
guide_get_data <- function(path) {
  if(path |> startsWith("https://"))
    path <- get_file(origin = path)  # cache file locally

  data <- readr::read_tsv(
    path, col_names = FALSE,
    # Each row is: one integer (the label),
    # followed by 500 doubles (the timeseries)
    col_types = paste0("i", strrep("d", 500))
  )

  y <- as.matrix(data[[1]])
  x <- as.matrix(data[,-1])
  dimnames(x) <- dimnames(y) <- NULL

  list(x, y)
}

# Everything up to "Build a model", as the guide runs it.
guide_prepared_data <- function(env = parent.frame()) {
  get_data <- guide_get_data
  root_url <- guide_forda(env)
  c(x_train, y_train) %<-% get_data(paste0(root_url, "FordA_TRAIN.tsv"))
  c(x_test, y_test) %<-% get_data(paste0(root_url, "FordA_TEST.tsv"))
  dim(x_train) <- c(dim(x_train), 1)
  dim(x_test) <- c(dim(x_test), 1)
  num_classes <- length(unique(y_train))
  # listarrays is not installed; the guide's commented alternative:
  idx <- sample.int(nrow(x_train))
  x_train %<>% .[idx,, ,drop = FALSE]
  y_train %<>% .[idx,  ,drop = FALSE]
  y_train[y_train == -1L] <- 0L
  y_test[y_test == -1L] <- 0L
  list(x_train = x_train, y_train = y_train, x_test = x_test, y_test = y_test,
       num_classes = num_classes)
}

make_model_chunk <- function(num_classes) {
  make_model <- function(input_shape) {
    inputs <- keras_input(input_shape)

    outputs <- inputs |>
      # conv1
      layer_conv_1d(filters = 64, kernel_size = 3, padding = "same") |>
      layer_batch_normalization() |>
      layer_activation_relu() |>
      # conv2
      layer_conv_1d(filters = 64, kernel_size = 3, padding = "same") |>
      layer_batch_normalization() |>
      layer_activation_relu() |>
      # conv3
      layer_conv_1d(filters = 64, kernel_size = 3, padding = "same") |>
      layer_batch_normalization() |>
      layer_activation_relu() |>
      # pooling
      layer_global_average_pooling_1d() |>
      # final output
      layer_dense(num_classes, activation = "softmax")

    keras_model(inputs, outputs)
  }
  make_model
}

test_that("Load the data: get_data() reads the TSV files as in the guide", {
  get_data <- guide_get_data
  root_url <- guide_forda()
  c(x_train, y_train) %<-% get_data(paste0(root_url, "FordA_TRAIN.tsv"))
  c(x_test, y_test) %<-% get_data(paste0(root_url, "FordA_TEST.tsv"))

  # The guide calls keras3:::named_list(); mirrored exports a not-yet stub.
  expect_error(named_list(
    x_train, y_train,
    x_test, y_test
  ), class = "mirrored_not_yet_error")
  out <- capture.output(str(list(
    x_train = x_train, y_train = y_train,
    x_test = x_test, y_test = y_test
  )))
  expect_match(out[1], "List of 4")
  expect_equal(dim(x_train), c(96L, 500L))
  expect_equal(dim(y_train), c(96L, 1L))
  expect_equal(dim(x_test), c(64L, 500L))
  expect_true(is.integer(y_train))
  expect_setequal(unique(as.vector(y_train)), c(-1L, 1L))

  # Visualize the data
  png(withr::local_tempfile(fileext = ".png"))
  plot(NULL, main = "Timeseries Data",
       xlab = "Timepoints",  ylab = "Values",
       xlim = c(1, ncol(x_test)),
       ylim = range(x_test))
  grid()
  lines(x_test[match(-1, y_test), ], col = "blue")
  lines(x_test[match( 1, y_test), ], col = "red")
  legend("topright", legend=c("label -1", "label 1"), col=c("blue", "red"), lty=1)
  dev.off()
})

test_that("Standardize the data: reshape, count classes, shuffle with %<>%, relabel", {
  d <- guide_prepared_data()
  expect_equal(dim(d$x_train), c(96L, 500L, 1L))
  expect_equal(dim(d$x_test), c(64L, 500L, 1L))
  expect_equal(d$num_classes, 2L)
  expect_setequal(unique(as.vector(d$y_train)), c(0L, 1L))
  expect_setequal(unique(as.vector(d$y_test)), c(0L, 1L))
})

test_that("Build a model: the FCN prints and plots with shapes", {
  d <- guide_prepared_data()
  make_model <- make_model_chunk(d$num_classes)
  x_train <- d$x_train
  model <- make_model(input_shape = dim(x_train)[-1])

  out <- capture.output(print(model))
  expect_true(any(grepl("conv1d", out)))
  expect_true(any(grepl("global_average_pooling1d", out)))
  expect_true(any(grepl("(None, 500, 64)", out, fixed = TRUE)))
  # 3 conv (64*3*1+64, 64*3*64+64 x2), 3 BN (4*64), dense 64*2+2
  expect_equal(count_params(model),
               (64*3 + 64) + 2 * (64*3*64 + 64) + 3 * 4 * 64 + (64*2 + 2))

  f <- withr::local_tempfile(fileext = ".png")
  plot(model, show_shapes = TRUE, to_file = f)
  expect_true(file.exists(f))
  expect_gt(file.size(f), 1000)
})

test_that("Train the model with checkpoint, LR plateau and early stopping callbacks; evaluate the best model", {
  withr::local_dir(withr::local_tempdir())
  d <- guide_prepared_data()
  make_model <- make_model_chunk(d$num_classes)
  x_train <- d$x_train; y_train <- d$y_train
  x_test <- d$x_test; y_test <- d$y_test
  model <- make_model(input_shape = dim(x_train)[-1])

  epochs <- 3    # 500 in the guide
  batch_size <- 32

  callbacks <- c(
    callback_model_checkpoint(
      "best_model.keras", save_best_only = TRUE,
      monitor = "val_loss"
    ),
    callback_reduce_lr_on_plateau(
      monitor = "val_loss", factor = 0.5,
      patience = 20, min_lr = 0.0001
    ),
    callback_early_stopping(
      monitor = "val_loss", patience = 50,
      verbose = 1
    )
  )

  model |> compile(
    optimizer = "adam",
    loss = "sparse_categorical_crossentropy",
    metrics = "sparse_categorical_accuracy"
  )

  out <- capture.output(
    history <- model |> fit(
      x_train, y_train,
      batch_size = batch_size,
      epochs = epochs,
      callbacks = callbacks,
      validation_split = 0.2
    )
  )
  expect_setequal(names(history$metrics),
                  c("loss", "sparse_categorical_accuracy", "val_loss",
                    "val_sparse_categorical_accuracy", "learning_rate"))
  expect_length(history$metrics$loss, 3)
  expect_lt(history$metrics$loss[3], history$metrics$loss[1])
  expect_true(file.exists("best_model.keras"))

  # Evaluate model on test data
  model <- load_model("best_model.keras")

  results <- model |> evaluate(x_test, y_test)
  out <- capture.output(str(results))
  expect_named(results, c("loss", "sparse_categorical_accuracy"))
  expect_match(out[1], "List of 2")
  out <- capture.output(cat(
    "Test accuracy: ", results$sparse_categorical_accuracy, "\n",
    "Test loss: ", results$loss, "\n",
    sep = ""
  ))
  expect_match(out[1], "^Test accuracy: [0-9.]+$")
  expect_true(is.finite(results$loss))

  # Plot the model's training history
  png(withr::local_tempfile(fileext = ".png"))
  print(plot(history))
  p <- suppressMessages(plot(history, metric = "sparse_categorical_accuracy") +
    # scale x axis to actual number of epochs run before early stopping
    ggplot2::xlim(0, length(history$metrics$loss)))
  expect_s3_class(p, "ggplot")
  print(p)
  dev.off()
})
