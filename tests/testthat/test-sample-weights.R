# sample_weight and class_weight in fit() and evaluate(): Keras 3's
# "sum_over_batch_size" (sum(w * loss) / rows), on arrays and datasets, on
# any number of replicas, against Keras 3 fixtures
# (tools/make-keras-fixtures-weights.py) and plain R computations.

weights_fixture <- function(name) {
  d <- utils::read.csv(test_path("fixtures", "weights", paste0(name, ".csv")))
  get <- function(key) {
    s <- d[d$name == key, ]
    if (!nrow(s)) return(NULL)
    m <- matrix(0, max(s$row) + 1, max(s$col) + 1)
    m[cbind(s$row + 1, s$col + 1)] <- s$value
    # Kernels (the even weight arrays) stay matrices, even of one column.
    if (ncol(m) == 1 && !grepl("^(init|final)_[02]$", key)) as.vector(m) else m
  }
  keys <- unique(d$name)
  stats::setNames(lapply(keys, get), keys)
}

# The fixtures' model: 5 -> dense(4, tanh) -> dense(units, activation).
fixture_model <- function(f, units, activation = NULL, loss, optimizer) {
  model <- keras_model_sequential(input_shape = 5) |>
    layer_dense(4, activation = "tanh") |>
    layer_dense(units, activation = activation)
  model |> compile(optimizer = optimizer, loss = loss)
  set_weights(model, list(f$init_0, f$init_1, f$init_2, f$init_3))
  model
}

expect_fixture <- function(model, f, history) {
  got <- get_weights(model)
  want <- list(f$final_0, f$final_1, f$final_2, f$final_3)
  for (k in seq_along(want)) {
    expect_lt(max(abs(as.vector(got[[k]]) - as.vector(want[[k]]))), 1e-5)
  }
  expect_lt(max(abs(history$metrics$loss - f$loss)), 1e-5)
  ev <- evaluate(model, f$x, f$y, sample_weight = f$eval_sample_weight, batch_size = 8, verbose = 0)
  expect_lt(abs(ev$loss - f$eval_loss), 1e-5)
}

test_that("fit() with sample_weight matches Keras 3 (SGD, sparse CE; Adam, MSE; zero and negative weights)", {
  f <- weights_fixture("sw_sgd_sparse")
  expect_true(any(f$sample_weight == 0) && any(f$sample_weight < 0))
  m <- fixture_model(f, 3, loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                     optimizer = optimizer_sgd(0.1))
  h <- fit(m, f$x, f$y, sample_weight = f$sample_weight, batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_fixture(m, f, h)

  f <- weights_fixture("sw_adam_mse")
  m <- fixture_model(f, 2, loss = "mse", optimizer = optimizer_adam(0.01))
  h <- fit(m, f$x, f$y, sample_weight = f$sample_weight, batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_fixture(m, f, h)
})

test_that("fit() with class_weight matches Keras 3 (sparse labels, one-hot argmax, binary rounding)", {
  cw <- function(f) {
    tab <- f$class_weight
    stats::setNames(as.list(tab), seq_along(tab) - 1)[tab != 1]
  }
  f <- weights_fixture("cw_sgd_sparse")
  expect_equal(cw(f), list("0" = 0.5, "2" = 3))
  m <- fixture_model(f, 3, loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                     optimizer = optimizer_sgd(0.1))
  h <- fit(m, f$x, f$y, class_weight = cw(f), batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_fixture(m, f, h)

  f <- weights_fixture("cw_adam_onehot")
  m <- fixture_model(f, 3, loss = loss_categorical_crossentropy(from_logits = TRUE),
                     optimizer = optimizer_adam(0.01))
  h <- fit(m, f$x, f$y, class_weight = cw(f), batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_fixture(m, f, h)

  f <- weights_fixture("cw_sgd_binary")
  m <- fixture_model(f, 1, activation = "sigmoid", loss = "binary_crossentropy", optimizer = optimizer_sgd(0.2))
  h <- fit(m, f$x, matrix(f$y), class_weight = list("0" = 1, "1" = 4), batch_size = 8, epochs = 3,
           shuffle = FALSE, verbose = 0)
  expect_fixture(m, f, h)
})

# A small classifier from fixed weights, for comparisons between runs.
sw_data <- function() {
  f <- weights_fixture("sw_sgd_sparse")
  list(f = f, x = f$x, y = f$y, n = nrow(f$x))
}
sw_model <- function(d, lr = 0.1) {
  fixture_model(d$f, 3, loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                optimizer = optimizer_sgd(lr))
}
max_diff <- function(a, b) max(mapply(function(u, v) max(abs(u - v)), a, b))

test_that("a sample_weight of 2 with SGD equals twice the learning rate", {
  d <- sw_data()
  a <- sw_model(d, 0.05)
  fit(a, d$x, d$y, sample_weight = rep(2, d$n), batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  b <- sw_model(d, 0.1)
  fit(b, d$x, d$y, batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_lt(max_diff(get_weights(a), get_weights(b)), 1e-6)
  moved <- max_diff(get_weights(b), list(d$f$init_0, d$f$init_1, d$f$init_2, d$f$init_3))
  expect_gt(moved, 1e-2)
})

test_that("class_weight equals the matching sample_weight, on arrays and datasets", {
  d <- sw_data()
  cw <- list("0" = 0.5, "2" = 3)
  sw <- c(0.5, 1, 3)[d$y + 1]
  a <- sw_model(d)
  ha <- fit(a, d$x, d$y, class_weight = cw, batch_size = 8, epochs = 2, shuffle = FALSE, verbose = 0)
  b <- sw_model(d)
  hb <- fit(b, d$x, d$y, sample_weight = sw, batch_size = 8, epochs = 2, shuffle = FALSE, verbose = 0)
  expect_equal(get_weights(a), get_weights(b), tolerance = 1e-7)
  expect_equal(ha$metrics$loss, hb$metrics$loss, tolerance = 1e-7)
  # An unnamed vector gives classes 0, 1, 2 in order.
  c2 <- sw_model(d)
  fit(c2, d$x, d$y, class_weight = c(0.5, 1, 3), batch_size = 8, epochs = 2, shuffle = FALSE, verbose = 0)
  expect_equal(get_weights(c2), get_weights(b), tolerance = 1e-7)
  # A dataset with class_weight, and one carrying the weights.
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(8)
  e <- sw_model(d)
  fit(e, ds, class_weight = cw, epochs = 2, verbose = 0)
  expect_equal(get_weights(e), get_weights(b), tolerance = 1e-7)
  g <- sw_model(d)
  hg <- fit(g, tensor_slices_dataset(list(d$x, d$y, sw)) |> dataset_batch(8), epochs = 2, verbose = 0)
  expect_equal(get_weights(g), get_weights(b), tolerance = 1e-7)
  expect_equal(hg$metrics$loss, hb$metrics$loss, tolerance = 1e-7)
})

test_that("the same sample weights give the same weights on 1, 2 and 3 replicas", {
  d <- sw_data()
  sw <- d$f$sample_weight
  run <- function(devices) {
    strategy <- suppressMessages(mirrored_strategy(devices = devices))
    with(strategy$scope(), m <- sw_model(d))
    # 22 rows in batches of 8: uneven slices, and a last batch of 6.
    h <- fit(m, d$x, d$y, sample_weight = sw, batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
    list(w = get_weights(m), loss = h$metrics$loss,
         ev = evaluate(m, d$x, d$y, sample_weight = sw, batch_size = 5, verbose = 0)$loss)
  }
  one <- run("/cpu:0")
  for (devices in list(c("/cpu:0", "/cpu:1"), c("/cpu:0", "/cpu:1", "/cpu:2"))) {
    got <- run(devices)
    expect_lt(max_diff(got$w, one$w), 1e-6)
    expect_lt(max(abs(got$loss - one$loss)), 1e-6)
    expect_lt(abs(got$ev - one$ev), 1e-6)
  }
  # And they match Keras 3 (one device).
  expect_lt(max(abs(one$loss - d$f$loss)), 1e-5)
})

# Sparse categorical cross-entropy from logits, per sample, in double.
sparse_ce <- function(logits, y) {
  m <- apply(logits, 1, max)
  lse <- m + log(rowSums(exp(logits - m)))
  lse - logits[cbind(seq_along(y), y + 1)]
}

test_that("evaluate() with sample_weight is sum(w * loss) / samples, as a plain R computation", {
  d <- sw_data()
  m <- sw_model(d)
  w <- seq(0, 1.2, length.out = d$n)
  l <- sparse_ce(predict(m, d$x, verbose = 0), d$y)
  want <- sum(w * l) / d$n
  for (bs in c(4L, 7L, 32L)) {
    expect_equal(evaluate(m, d$x, d$y, sample_weight = w, batch_size = bs, verbose = 0)$loss, want,
                 tolerance = 1e-6)
  }
  # Not the weighted mean (Keras divides by the samples, not the weights).
  expect_gt(abs(want - sum(w * l) / sum(w)), 1e-3)
  # An n x 1 array and a one-element list are the same vector.
  expect_equal(evaluate(m, d$x, d$y, sample_weight = matrix(w), verbose = 0)$loss, want, tolerance = 1e-6)
  # A dataset of (x, y, w).
  ds <- tensor_slices_dataset(list(d$x, d$y, w)) |> dataset_batch(6)
  expect_equal(evaluate(m, ds, verbose = 0)$loss, want, tolerance = 1e-6)
})

test_that("validation data carries its sample weights (list(x, y, w), validation_split, datasets)", {
  d <- sw_data()
  w <- seq(0.1, 2, length.out = d$n)
  m <- sw_model(d)
  h <- fit(m, d$x[1:14, ], d$y[1:14], epochs = 1, shuffle = FALSE, verbose = 0, batch_size = 8,
           validation_data = list(d$x[15:22, ], d$y[15:22], w[15:22]))
  ev <- evaluate(m, d$x[15:22, ], d$y[15:22], sample_weight = w[15:22], verbose = 0)$loss
  expect_equal(h$metrics$val_loss, ev, tolerance = 1e-6)
  # validation_split holds out the last samples' weights with them.
  m2 <- sw_model(d)
  h2 <- fit(m2, d$x, d$y, sample_weight = w, validation_split = 0.25, epochs = 1, shuffle = FALSE,
            verbose = 0, batch_size = 8)
  k <- floor(d$n * 0.75)
  held <- (k + 1):d$n
  expect_equal(h2$metrics$val_loss,
               evaluate(m2, d$x[held, ], d$y[held], sample_weight = w[held], verbose = 0)$loss, tolerance = 1e-6)
  # class_weight does not apply to validation (Keras 3).
  m3 <- sw_model(d)
  h3 <- fit(m3, d$x, d$y, class_weight = list("0" = 5), validation_split = 0.25, epochs = 1,
            shuffle = FALSE, verbose = 0, batch_size = 8)
  expect_equal(h3$metrics$val_loss, evaluate(m3, d$x[held, ], d$y[held], verbose = 0)$loss, tolerance = 1e-6)
  # A validation dataset of (x, y, w).
  m4 <- sw_model(d)
  vds <- tensor_slices_dataset(list(d$x[15:22, ], d$y[15:22], w[15:22])) |> dataset_batch(3)
  h4 <- fit(m4, d$x[1:14, ], d$y[1:14], epochs = 1, shuffle = FALSE, verbose = 0, batch_size = 8,
            validation_data = vds)
  expect_equal(h4$metrics$val_loss,
               evaluate(m4, d$x[15:22, ], d$y[15:22], sample_weight = w[15:22], verbose = 0)$loss, tolerance = 1e-6)
})

test_that("a model of several outputs takes one sample_weight per output or one for all", {
  set_random_seed(3)
  inp <- keras_input(shape = 3)
  model <- keras_model(inp, list(a = layer_dense(inp, 2, name = "a"), b = layer_dense(inp, 1, name = "b")))
  model |> compile(optimizer = optimizer_sgd(0.05), loss = list(a = "mse", b = "mse"), loss_weights = list(a = 1, b = 0.5))
  x <- matrix(seq(-1, 1, length.out = 30), 10)
  ya <- matrix(seq(0, 1, length.out = 20), 10)
  yb <- matrix(seq(1, 0, length.out = 10), 10)
  wa <- seq(0, 2, length.out = 10)
  wb <- rev(wa)
  p <- predict(model, x, verbose = 0)
  la <- rowMeans((p$a - ya)^2)
  lb <- (p$b - yb)[, 1]^2
  ev <- evaluate(model, x, list(ya, yb), sample_weight = list(wa, wb), batch_size = 4, verbose = 0)
  expect_equal(ev$a_loss, sum(wa * la) / 10, tolerance = 1e-6)
  expect_equal(ev$b_loss, sum(wb * lb) / 10, tolerance = 1e-6)
  expect_equal(ev$loss, sum(wa * la) / 10 + 0.5 * sum(wb * lb) / 10, tolerance = 1e-6)
  named <- evaluate(model, x, list(ya, yb), sample_weight = list(b = wb, a = wa), verbose = 0)
  expect_equal(named$loss, ev$loss, tolerance = 1e-6)
  shared <- evaluate(model, x, list(ya, yb), sample_weight = wa, verbose = 0)
  expect_equal(shared$b_loss, sum(wa * lb) / 10, tolerance = 1e-6)
  # Datasets: one weight array per output, or one for all.
  ds <- tensor_slices_dataset(list(x, list(ya, yb), list(wa, wb))) |> dataset_batch(4)
  expect_equal(evaluate(model, ds, verbose = 0)$loss, ev$loss, tolerance = 1e-6)
  ds1 <- tensor_slices_dataset(list(x, list(ya, yb), wa)) |> dataset_batch(4)
  expect_equal(evaluate(model, ds1, verbose = 0)$b_loss, shared$b_loss, tolerance = 1e-6)
  ds_flat <- tensor_slices_dataset(list(x, ya, yb, wa, wb)) |> dataset_batch(4)
  expect_equal(evaluate(model, ds_flat, verbose = 0)$loss, ev$loss, tolerance = 1e-6)
  expect_error(fit(model, x, list(ya, yb), class_weight = list("0" = 2), verbose = 0),
               class = "mirrored_value_error", regexp = "single output")
  expect_error(evaluate(model, x, list(ya, yb), sample_weight = list(wa), verbose = 0),
               class = "mirrored_value_error", regexp = "one entry per model output")
})

test_that("bad sample_weight and class_weight are classed errors naming the argument", {
  d <- sw_data()
  m <- sw_model(d)
  fit1 <- function(...) fit(m, d$x, d$y, verbose = 0, ...)
  expect_error(fit1(sample_weight = rep(1, 5)), class = "mirrored_value_error",
               regexp = "`sample_weight` must have one weight per sample \\(22\\), not 5")
  for (bad in list(NA, NaN, Inf, -Inf)) {
    w <- rep(1, d$n)
    w[7] <- bad
    expect_error(fit1(sample_weight = w), class = "mirrored_value_error",
                 regexp = "`sample_weight` must hold finite weights; row 7")
    expect_error(evaluate(m, d$x, d$y, sample_weight = w, verbose = 0), class = "mirrored_value_error",
                 regexp = "`sample_weight`.*row 7")
  }
  expect_error(fit1(sample_weight = letters[1:22]), class = "mirrored_value_error", regexp = "sample_weight")
  expect_error(fit1(sample_weight = matrix(1, 22, 2)), class = "mirrored_shape_error", regexp = "one weight per sample")
  expect_error(fit(m, d$x[1:8, ], d$y[1:8], validation_data = list(d$x, d$y, 1:3), verbose = 0),
               class = "mirrored_value_error", regexp = "validation_data\\[\\[3\\]\\]")
  expect_error(fit1(class_weight = list("0" = 1, "3" = 2)), class = "mirrored_value_error",
               regexp = "names class \"3\".*classes are 0..2")
  expect_error(fit1(class_weight = list(a = 1)), class = "mirrored_value_error", regexp = "0-based class indices")
  expect_error(fit1(class_weight = list("-1" = 1)), class = "mirrored_value_error", regexp = "0-based class indices")
  expect_error(fit1(class_weight = list("1" = NaN)), class = "mirrored_value_error", regexp = "finite weights; class 1")
  expect_error(fit1(class_weight = list("1" = 1:2)), class = "mirrored_value_error", regexp = "single numbers")
  expect_error(fit1(class_weight = c("1" = 1, "1" = 2)), class = "mirrored_value_error", regexp = "more than once")
  expect_error(fit1(class_weight = "balanced"), class = "mirrored_value_error", regexp = "class_weight")
  expect_error(fit1(class_weight = list("0" = 1), sample_weight = rep(1, d$n)), class = "mirrored_value_error",
               regexp = "can not be used at the same time")
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(8)
  expect_error(fit(m, ds, sample_weight = rep(1, d$n), verbose = 0), class = "mirrored_value_error",
               regexp = "`sample_weight` must be `NULL` when `x` is a dataset")
  expect_error(evaluate(m, ds, sample_weight = rep(1, d$n), verbose = 0), class = "mirrored_value_error",
               regexp = "sample_weight")
  dsw <- tensor_slices_dataset(list(d$x, d$y, rep(1, d$n))) |> dataset_batch(8)
  expect_error(fit(m, dsw, class_weight = list("0" = 2), verbose = 0), class = "mirrored_value_error",
               regexp = "can not be used at the same time")
  dsw2 <- tensor_slices_dataset(list(d$x, d$y, matrix(1, d$n, 2))) |> dataset_batch(8)
  expect_error(fit(m, dsw2, verbose = 0), class = "mirrored_shape_error", regexp = "one value per sample")
  # The weights of a failed call changed nothing.
  expect_equal(lapply(get_weights(m), as.vector), lapply(list(d$f$init_0, d$f$init_1, d$f$init_2, d$f$init_3), as.vector),
               tolerance = 1e-7)
})
