# save_model()/load_model(), weights files, get_config()/from_config(), and
# continuing training after a load exactly as if it had not stopped.

tmp_file <- function(ext) tempfile(fileext = ext)

saving_data <- function(n = 96, p = 4, classes = 3) {
  set.seed(11)
  x <- matrix(runif(n * p), ncol = p)
  y <- as.integer(x[, 1] > x[, 2]) + as.integer(x[, 3] > 0.5)
  list(x = x, y = y, y_onehot = diag(classes)[y + 1, ], y_bin = matrix(as.numeric(x[, 1] > 0.5), ncol = 1),
       y_reg = cbind(x[, 1] + x[, 2], x[, 3] - x[, 4], x[, 1] * x[, 4]))
}

# A model with every layer class; `seq` for a Sequential model.
saving_model <- function(seq = FALSE, out = 3, out_act = NULL, seed = 5) {
  set.seed(seed)
  if (seq) {
    keras_model_sequential(input_shape = c(2, 2), name = "seqmodel") |>
      layer_flatten() |>
      layer_dense(8, activation = "relu", kernel_initializer = initializer_he_normal(3)) |>
      layer_dropout(0.25) |>
      layer_activation("tanh") |>
      layer_dense(out, activation = out_act, use_bias = TRUE)
  } else {
    inp <- keras_input(shape = 4, name = "features")
    h <- inp |> layer_dense(8, activation = "relu") |> layer_dropout(0.25) |>
      layer_activation("sigmoid") |> layer_dense(6, use_bias = FALSE,
                                                 kernel_initializer = initializer_random_normal(0, 0.3, 1))
    keras_model(inp, h |> layer_dense(out, activation = out_act))
  }
}

input_for <- function(model, x) if (inherits(model, "mirrored_sequential")) array(x, c(nrow(x), 2, 2)) else x

test_that("a saved model loads with the same predictions, config and optimizer state", {
  d <- saving_data()
  for (seq in c(FALSE, TRUE)) {
    m <- saving_model(seq)
    m |> compile(optimizer = optimizer_adam(0.01, amsgrad = TRUE),
                 loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                 metrics = list("accuracy", metric_sparse_categorical_accuracy()))
    x <- input_for(m, d$x)
    fit(m, x, d$y, epochs = 2, batch_size = 16, verbose = 0)
    path <- tmp_file(".keras")
    save_model(m, path)
    m2 <- load_model(path)
    expect_s3_class(m2, if (seq) "mirrored_sequential" else "mirrored_functional")
    expect_identical(predict(m2, x, verbose = 0), predict(m, x, verbose = 0))
    expect_identical(get_weights(m2), get_weights(m))
    expect_equal(m2$optimizer$iterations, m$optimizer$iterations)
    expect_equal(m2$optimizer$iterations, 12)
    expect_identical(get_config(m2), get_config(m))
    expect_identical(evaluate(m2, x, d$y, verbose = 0), evaluate(m, x, d$y, verbose = 0))
    # A raw vector round trip.
    raw <- save_model(m)
    expect_type(raw, "raw")
    expect_identical(get_weights(load_model(raw)), get_weights(m))
  }
})

test_that("the archive has Keras' members, JSON and layout", {
  m <- saving_model()
  m |> compile(optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = "accuracy")
  path <- tmp_file(".keras")
  save_model(m, path)
  z <- utils::unzip(path, list = TRUE)
  expect_equal(z$Name, c("metadata.json", "config.json", "model.weights.h5", "mirrored.json"))
  expect_error(save_model(m, path), class = "mirrored_io_error", regexp = "already exists")
  expect_error(save_model(m, sub("keras$", "h5", path)), class = "mirrored_not_supported_error", regexp = "keras")
  expect_error(save_model(m, sub("keras$", "json", path)), class = "mirrored_value_error", regexp = "keras")
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cfg <- mirrored:::parse_json_bytes(readBin(file.path(dir, "config.json"), "raw", 1e6), "c")
  expect_equal(cfg$class_name, "Functional")
  expect_equal(cfg$module, "keras.src.models.functional")
  expect_equal(cfg$config$input_layers, list("features", 0L, 0L))
  expect_equal(vapply(cfg$config$layers, function(l) l$class_name, ""),
               c("InputLayer", "Dense", "Dropout", "Activation", "Dense", "Dense"))
  expect_equal(cfg$config$layers[[2]]$inbound_nodes[[1]]$args[[1]]$config$keras_history, list("features", 0L, 0L))
  expect_equal(cfg$compile_config$optimizer$config$learning_rate, 0.0010000000474974513)
  expect_equal(cfg$compile_config$loss, "sparse_categorical_crossentropy")
  expect_equal(cfg$compile_config$metrics, list("accuracy"))
  meta <- mirrored:::parse_json_bytes(readBin(file.path(dir, "metadata.json"), "raw", 1e6), "m")
  expect_match(meta$keras_version, "^3\\.[0-9]+\\.[0-9]+$")
  expect_match(meta$date_saved, "^[0-9]{4}-[0-9]{2}-[0-9]{2}@[0-9]{2}:[0-9]{2}:[0-9]{2}$")
  # Unzipped directories load too.
  m2 <- load_model(dir)
  expect_identical(get_weights(m2), get_weights(m))
})

test_that("weights files round trip, and other architectures are refused", {
  m <- saving_model()
  m |> compile(optimizer = optimizer_rmsprop(momentum = 0.5, centered = TRUE), loss = "sparse_categorical_crossentropy")
  d <- saving_data()
  fit(m, d$x, d$y, epochs = 1, verbose = 0)
  path <- tmp_file(".weights.h5")
  save_model_weights(m, path)
  m2 <- saving_model(seed = 9)
  m2 |> compile(optimizer = optimizer_rmsprop(momentum = 0.5, centered = TRUE), loss = "sparse_categorical_crossentropy")
  expect_false(identical(get_weights(m2), get_weights(m)))
  load_model_weights(m2, path)
  expect_identical(get_weights(m2), get_weights(m))
  expect_equal(m2$optimizer$iterations, m$optimizer$iterations)
  expect_error(save_model_weights(m, sub("\\.weights\\.h5$", ".h5", path)), class = "mirrored_value_error")
  # Another architecture: an error naming the file and the dataset; the
  # model is unchanged.
  other <- keras_model_sequential(input_shape = 4) |> layer_dense(5) |> layer_dense(3)
  before <- get_weights(other)
  expect_error(load_model_weights(other, path), class = "mirrored_io_error", regexp = "weights.h5")
  expect_identical(get_weights(other), before)
  # load_model_weights() also reads a .keras archive.
  kp <- tmp_file(".keras")
  save_model(m, kp)
  m3 <- saving_model(seed = 4)
  load_model_weights(m3, kp)
  expect_identical(get_weights(m3), get_weights(m))
})

test_that("get_config()/from_config() rebuild models and layers", {
  m <- saving_model(seq = TRUE)
  cfg <- get_config(m)
  expect_equal(attr(cfg, "__class__"), "Sequential")
  m2 <- from_config(cfg)
  expect_equal(get_config(m2), cfg)
  expect_equal(m2$output_shape, m$output_shape)
  l <- layer_dense(units = 3, activation = "relu", name = "d7")
  lc <- get_config(l)
  expect_equal(lc$units, 3L)
  l2 <- from_config(lc)
  expect_equal(l2$config$units, 3L)
  expect_equal(l2$name, "d7")
  expect_error(get_config(1), class = "mirrored_value_error")
})

# Every optimizer, loss and metric: save after 2 epochs, load, train 2 more:
# bit-identical to 4 uninterrupted epochs.
continue_case <- function(opt, loss, metrics, target, out_act = NULL, seq = FALSE, batch = 16) {
  d <- saving_data()
  y <- d[[target]]
  make <- function() {
    m <- saving_model(seq, out = ncol(as.matrix(if (target == "y") d$y_onehot else y)), out_act = out_act)
    m |> compile(optimizer = opt(), loss = loss, metrics = metrics)
    m
  }
  x <- input_for(make(), d$x)
  set.seed(100)
  a <- make()
  fit(a, x, y, epochs = 4, batch_size = batch, verbose = 0)
  set.seed(100)
  b <- make()
  fit(b, x, y, epochs = 2, batch_size = batch, verbose = 0)
  path <- tmp_file(".keras")
  save_model(b, path)
  set.seed(12345) # a different R RNG state: the file carries the data order
  c <- load_model(path)
  h <- fit(c, x, y, epochs = 4, initial_epoch = 3, batch_size = batch, verbose = 0)
  expect_identical(get_weights(c), get_weights(a))
  expect_equal(c$optimizer$iterations, a$optimizer$iterations)
  expect_identical(evaluate(c, x, y, verbose = 0), evaluate(a, x, y, verbose = 0))
}

test_that("fit() after load_model() continues exactly: every optimizer", {
  opts <- list(function() optimizer_sgd(0.05), function() optimizer_sgd(0.05, momentum = 0.9),
               function() optimizer_sgd(0.05, momentum = 0.9, nesterov = TRUE),
               function() optimizer_adam(0.01), function() optimizer_adam(0.01, amsgrad = TRUE),
               function() optimizer_adam_w(0.01), function() optimizer_adam_w(0.01, amsgrad = TRUE),
               function() optimizer_rmsprop(0.01), function() optimizer_rmsprop(0.01, centered = TRUE),
               function() optimizer_rmsprop(0.01, momentum = 0.5),
               function() optimizer_rmsprop(0.01, momentum = 0.5, centered = TRUE))
  for (o in opts) continue_case(o, loss_sparse_categorical_crossentropy(from_logits = TRUE), "accuracy", "y")
})

test_that("fit() after load_model() continues exactly: every loss and metric", {
  adam <- function() optimizer_adam(0.01)
  continue_case(adam, "sparse_categorical_crossentropy", list(metric_sparse_categorical_accuracy()), "y",
                out_act = "softmax")
  continue_case(adam, loss_categorical_crossentropy(from_logits = TRUE),
                list("accuracy", metric_categorical_accuracy(name = "cacc")), "y_onehot", seq = TRUE)
  continue_case(adam, "categorical_crossentropy", list(metric_categorical_accuracy()), "y_onehot",
                out_act = "softmax")
  continue_case(adam, loss_binary_crossentropy(from_logits = TRUE),
                list("accuracy", metric_binary_accuracy(threshold = 0.4)), "y_bin")
  continue_case(adam, "binary_crossentropy", list(metric_binary_accuracy()), "y_bin", out_act = "sigmoid")
  continue_case(adam, "mse", list("mae", metric_mean_absolute_error(name = "m2")), "y_reg", seq = TRUE)
  continue_case(adam, loss_mean_squared_error(), NULL, "y_reg")
})

test_that("a mid-epoch checkpoint resumes at the next batch", {
  d <- saving_data()
  make <- function() {
    m <- saving_model()
    m |> compile(optimizer = optimizer_adam(0.01), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    m
  }
  set.seed(3)
  a <- make()
  fit(a, d$x, d$y, epochs = 3, batch_size = 16, verbose = 0)
  set.seed(3)
  b <- make()
  dir <- tempfile()
  fit(b, d$x, d$y, epochs = 2, batch_size = 16, verbose = 0,
      callbacks = list(callback_model_checkpoint(file.path(dir, "e{epoch}-b{batch:02d}.keras"), save_freq = 4)))
  expect_equal(sort(list.files(dir)), c("e1-b04.keras", "e2-b02.keras", "e2-b06.keras"))
  set.seed(999)
  c <- load_model(file.path(dir, "e2-b02.keras"))
  expect_equal(c$optimizer$iterations, 8)
  fit(c, d$x, d$y, epochs = 3, initial_epoch = 2, batch_size = 16, verbose = 0)
  expect_identical(get_weights(c), get_weights(a))
})

test_that("hostile and wrong files are classed errors naming the file", {
  m <- saving_model()
  m |> compile(optimizer = "adam", loss = "sparse_categorical_crossentropy")
  dir <- tempfile()
  dir.create(dir)
  good <- file.path(dir, "good.keras")
  save_model(m, good)
  bytes <- readBin(good, "raw", file.size(good))
  # missing file, directory, wrong extension
  expect_error(load_model(file.path(dir, "nope.keras")), class = "mirrored_io_error", regexp = "nope.keras")
  expect_error(load_model(dir), class = "mirrored_io_error", regexp = "directory")
  expect_error(load_model_weights(m, dir), class = "mirrored_io_error", regexp = "directory")
  txt <- file.path(dir, "x.txt")
  writeLines("hi", txt)
  expect_error(load_model(txt), class = "mirrored_io_error", regexp = "not supported")
  # truncated and corrupted archives
  cut <- file.path(dir, "cut.keras")
  writeBin(bytes[seq_len(length(bytes) %/% 2)], cut)
  expect_error(load_model(cut), class = "mirrored_io_error", regexp = "cut.keras")
  bad <- bytes
  mid <- length(bad) %/% 2
  bad[mid:(mid + 50)] <- as.raw(0x55)
  corrupt <- file.path(dir, "corrupt.keras")
  writeBin(bad, corrupt)
  expect_error(load_model(corrupt), class = "mirrored_io_error", regexp = "corrupt.keras")
  # a member name that climbs out of the directory
  evil <- mirrored:::cpp_zip_write(c("config.json", "model.weights.h5", "aaaaaaaaa"),
                                   list(charToRaw("{}"), as.raw(1:4), charToRaw("x")), c(0, 0, 0), "e")
  raw_chr <- rawToChar(evil[evil != as.raw(0)])
  hits <- which(vapply(seq_len(length(evil) - 8), function(i) all(evil[i:(i + 8)] == charToRaw("aaaaaaaaa")), NA))
  for (h in hits) evil[h:(h + 8)] <- charToRaw("../../etc")
  ep <- file.path(dir, "evil.keras")
  writeBin(evil, ep)
  expect_error(load_model(ep), class = "mirrored_io_error", regexp = "climbs out")
  expect_false(file.exists(file.path(dirname(dir), "etc")))
  # an unknown layer class in config.json
  cfg <- mirrored:::model_keras_config(m)
  cfg$config$layers[[2]]$class_name <- "Conv3DTranspose"
  members <- list(metadata.json = charToRaw("{}"), config.json = mirrored:::json_bytes(cfg),
                  model.weights.h5 = mirrored:::weights_bytes(m, "w"))
  up <- file.path(dir, "unknown.keras")
  writeBin(mirrored:::cpp_zip_write(names(members), unname(members), c(0, 0, 0), "u"), up)
  expect_error(load_model(up), class = "mirrored_io_error", regexp = "Conv3DTranspose")
  # invalid JSON
  members$config.json <- charToRaw("{\"class_name\": ")
  jp <- file.path(dir, "json.keras")
  writeBin(mirrored:::cpp_zip_write(names(members), unname(members), c(0, 0, 0), "j"), jp)
  expect_error(load_model(jp), class = "mirrored_io_error", regexp = "config.json")
  # an HDF5 member that is not HDF5
  members$config.json <- mirrored:::json_bytes(mirrored:::model_keras_config(m))
  members$model.weights.h5 <- charToRaw(strrep("garbage", 20))
  hp <- file.path(dir, "h5.keras")
  writeBin(mirrored:::cpp_zip_write(names(members), unname(members), c(0, 0, 0), "h"), hp)
  expect_error(load_model(hp), class = "mirrored_io_error", regexp = "model.weights.h5")
  # a directory where the file should go; a read-only destination: the
  # existing checkpoint stays intact
  dir.create(file.path(dir, "taken.keras"))
  expect_error(save_model(m, file.path(dir, "taken.keras")), class = "mirrored_io_error", regexp = "directory")
  if (Sys.info()[["effective_user"]] != "root") {
    Sys.chmod(dir, "0555")
    on.exit(Sys.chmod(dir, "0755"), add = TRUE)
    expect_error(save_model(m, good, overwrite = TRUE), class = "mirrored_io_error", regexp = "good.keras")
    Sys.chmod(dir, "0755")
  }
  ro <- file.path(dir, "ro")
  dir.create(ro)
  expect_error(save_model(m, file.path(ro, "sub", "x.keras")), class = "mirrored_io_error", regexp = "x.keras")
  expect_identical(readBin(good, "raw", file.size(good) + 10), bytes)
  expect_false(any(grepl("\\.tmp-", list.files(dir, all.files = TRUE))))
  expect_identical(get_weights(load_model(good)), get_weights(m))
})

test_that("Keras-written files load (fixtures from tools/make-keras-fixtures.py)", {
  fx <- test_path("fixtures", "keras")
  skip_if_not(dir.exists(fx), "no Keras fixtures")
  for (name in c("functional_adam", "sequential_rmsprop", "functional_sgd")) {
    m <- load_model(file.path(fx, paste0(name, ".keras")))
    x <- as.matrix(utils::read.csv(file.path(fx, paste0(name, "_x.csv")), header = FALSE))
    want <- as.matrix(utils::read.csv(file.path(fx, paste0(name, "_y.csv")), header = FALSE))
    if (inherits(m, "mirrored_sequential") && length(m$input_shape) > 1) {
      x <- array_reshape(x, c(nrow(x), m$input_shape))
    }
    got <- predict(m, x, verbose = 0)
    expect_equal(unname(got), unname(want), tolerance = 1e-5)
    expect_true(m$optimizer$iterations > 0)
  }
})
