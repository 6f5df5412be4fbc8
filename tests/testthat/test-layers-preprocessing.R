# layer_layer_normalization(), layer_normalization() + adapt(),
# layer_rescaling() and layer_embedding() through the R API: constructor
# errors, values against R's own arithmetic, adapt() on arrays and datasets,
# and training on 1 and 3 CPU replicas.

seq_model <- function(input_shape, ...) {
  m <- keras_model_sequential(input_shape = input_shape)
  for (l in list(...)) m$add(l)
  m
}

test_that("constructor arguments are checked with classed errors naming them", {
  expect_error(layer_layer_normalization(epsilon = 0), class = "mirrored_value_error", regexp = "epsilon")
  expect_error(layer_layer_normalization(axis = 1.5), class = "mirrored_value_error", regexp = "axis")
  expect_error(layer_layer_normalization(axis = c(-1, -3)), class = "mirrored_not_yet_error", regexp = "axis")
  expect_error(layer_layer_normalization(gamma_regularizer = "l5"), class = "mirrored_value_error",
               regexp = "gamma_regularizer")
  expect_error(layer_layer_normalization(center = NA), class = "mirrored_value_error", regexp = "center")
  expect_error(layer_layer_normalization(foo = 1), class = "mirrored_value_error", regexp = "foo")
  expect_error(layer_normalization(mean = 1), class = "mirrored_value_error", regexp = "variance")
  expect_error(layer_normalization(mean = 1:2, variance = 1), class = "mirrored_value_error", regexp = "same length")
  expect_error(layer_normalization(mean = 0, variance = -1), class = "mirrored_value_error", regexp = "variance")
  expect_error(layer_normalization(axis = c(1, 2)), class = "mirrored_not_yet_error", regexp = "axis")
  expect_error(layer_normalization(invert = "yes"), class = "mirrored_value_error", regexp = "invert")
  expect_error(layer_rescaling(), regexp = "scale")
  expect_error(layer_rescaling(scale = "a"), class = "mirrored_value_error", regexp = "scale")
  expect_error(layer_rescaling(scale = c(1, 2)), class = "mirrored_not_yet_error", regexp = "scale")
  expect_error(layer_embedding(input_dim = 0, output_dim = 2), class = "mirrored_value_error", regexp = "input_dim")
  expect_error(layer_embedding(input_dim = 5, output_dim = 2.5), class = "mirrored_value_error", regexp = "output_dim")
  expect_error(layer_embedding(input_dim = 5, output_dim = 2, mask_zero = TRUE),
               class = "mirrored_not_yet_error", regexp = "mask_zero")
  expect_error(layer_embedding(input_dim = 5, output_dim = 2, embeddings_constraint = "nonneg"),
               class = "mirrored_value_error", regexp = "embeddings_constraint")
  expect_error(layer_embedding(input_dim = 5, output_dim = 2, activity_regularizer = "l5"),
               class = "mirrored_value_error", regexp = "activity_regularizer")
  expect_error(layer_embedding(input_dim = 5, output_dim = 2, embeddings_initializer = "nope"),
               class = "mirrored_value_error", regexp = "embeddings_initializer")
  expect_warning(layer_embedding(input_dim = 5, output_dim = 2, input_length = 3),
                 class = "mirrored_deprecated_warning")
  expect_error(adapt(layer_dense(units = 2), matrix(1, 2, 2)), class = "mirrored_value_error", regexp = "Normalization|normalization")
  expect_error(adapt(layer_normalization(mean = 0, variance = 1), matrix(1, 2, 2)),
               class = "mirrored_value_error", regexp = "mean")
  expect_error(adapt(layer_normalization(), "a"), class = "mirrored_value_error", regexp = "data")
  expect_error(adapt(layer_normalization(), matrix(1, 2, 2), batch_size = 0), class = "mirrored_value_error",
               regexp = "batch_size")
})

test_that("configs are Keras' (keys and values)", {
  ln <- layer_layer_normalization(axis = c(-2, -1), epsilon = 1e-5)
  expect_named(ln$config, c("name", "trainable", "dtype", "axis", "epsilon", "center", "scale",
                            "rms_scaling", "beta_initializer", "gamma_initializer", "beta_regularizer",
                            "gamma_regularizer", "beta_constraint", "gamma_constraint"))
  expect_identical(ln$config$axis, list(-2L, -1L))
  n <- layer_normalization()
  expect_identical(n$config$axis, list(-1L))
  expect_null(n$config$mean)
  expect_identical(layer_normalization(axis = NULL, mean = 2, variance = 3)$config$mean, 2)
  r <- layer_rescaling(scale = 0.5, offset = 1)
  expect_identical(r$config[c("scale", "offset")], list(scale = 0.5, offset = 1))
  e <- layer_embedding(input_dim = 7, output_dim = 2)
  expect_identical(e$config$embeddings_initializer$class_name, "RandomUniform")
  expect_identical(e$config$embeddings_initializer$config$minval, -0.05)
  expect_identical(e$config$mask_zero, FALSE)
})

test_that("adapt() on arrays gives R's mean and population variance; the model starts with them", {
  set.seed(3)
  x <- array(rnorm(40 * 2 * 3, mean = 5, sd = 3), c(40, 2, 3))
  flat <- matrix(x, ncol = 3)  # rows: every (sample, position); columns: the last axis
  mu <- colMeans(flat)
  v <- colMeans(sweep(flat, 2, mu)^2)
  for (bs in list(NULL, 7)) {
    norm <- layer_normalization()
    expect_invisible(adapt(norm, x, batch_size = bs))
    model <- seq_model(c(2, 3), norm)
    w <- get_weights(model)
    expect_length(w, 3)  # mean, variance, count
    expect_equal(as.vector(w[[1]]), mu, tolerance = 1e-6)
    expect_equal(as.vector(w[[2]]), v, tolerance = 1e-6)
    expect_equal(as.vector(w[[3]]), 0)
    out <- predict(model, x, verbose = 0)
    want <- (x - rep(mu, each = 80)) / rep(sqrt(v), each = 80)
    expect_equal(out, want, tolerance = 1e-5, ignore_attr = TRUE)
  }
  # A data frame, in batches of 3 rows: the same moments as the matrix.
  d <- layer_normalization()
  adapt(d, as.data.frame(flat), batch_size = 3)
  wd <- get_weights(seq_model(3, d))
  expect_equal(as.vector(wd[[1]]), mu, tolerance = 1e-6)
  expect_equal(as.vector(wd[[2]]), v, tolerance = 1e-6)
  # axis = NULL: one mean and variance over all values.
  s <- layer_normalization(axis = NULL)
  adapt(s, c(1, 2, 3, 4, 5))
  m <- seq_model(1, s)
  expect_equal(unlist(get_weights(m)[1:2]), c(3, 2))
  expect_equal(as.vector(predict(m, matrix(c(1, 2, 3)), verbose = 0)), c(-sqrt(2), -sqrt(0.5), 0),
               tolerance = 1e-6)
})

test_that("adapt() over a dataset streams batches and matches the whole-array moments", {
  set.seed(4)
  x <- matrix(rnorm(53 * 4, mean = 100, sd = 0.01), 53)  # large mean, small spread
  y <- rnorm(53)
  mu <- colMeans(x)
  v <- colMeans(sweep(x, 2, mu)^2)
  norm <- layer_normalization()
  adapt(norm, tensor_slices_dataset(list(x, y)) |> dataset_batch(8))  # (x, y): x is used
  w <- get_weights(seq_model(4, norm))
  expect_equal(as.vector(w[[1]]), mu, tolerance = 1e-7)
  expect_equal(as.vector(w[[2]]), v, tolerance = 1e-4)
  # steps: only the first two batches (16 rows).
  part <- layer_normalization()
  adapt(part, tensor_slices_dataset(x) |> dataset_batch(8), steps = 2)
  w2 <- get_weights(seq_model(4, part))
  expect_equal(as.vector(w2[[1]]), colMeans(x[1:16, ]), tolerance = 1e-7)
  expect_error(adapt(layer_normalization(), tensor_slices_dataset(x) |> dataset_batch(8) |> dataset_repeat()),
               class = "mirrored_value_error", regexp = "steps")
})

test_that("adapt() after the model is built updates the model; invert undoes normalization", {
  x <- matrix(c(0, 2, 0, 2, 7, 9, 7, 9, 4, 6, 4, 6), nrow = 4)
  norm <- layer_normalization()
  model <- seq_model(3, norm)
  expect_equal(predict(model, x, verbose = 0), x, ignore_attr = TRUE)  # mean 0, variance 1
  adapt(norm, x)
  expect_equal(predict(model, x, verbose = 0), matrix(c(-1, 1, -1, 1), 4, 3), ignore_attr = TRUE,
               tolerance = 1e-6)
  inv <- layer_normalization(invert = TRUE)
  adapt(inv, x)
  back <- predict(seq_model(3, inv), matrix(c(-1, 1, -1, 1), 4, 3), verbose = 0)
  expect_equal(back, x, ignore_attr = TRUE, tolerance = 1e-6)
  # Keras' docs: adapted to x, invert maps (1, 2, 3) to mean + x * sd.
  expect_equal(as.vector(predict(seq_model(3, inv), matrix(c(1, 2, 3), 1), verbose = 0)), c(2, 10, 8),
               tolerance = 1e-6)
  # Given values, no weights.
  given <- seq_model(3, layer_normalization(mean = c(1, 8, 5), variance = c(1, 4, 1)))
  expect_length(get_weights(given), 0)
  expect_equal(predict(given, x, verbose = 0), sweep(sweep(x, 2, c(1, 8, 5)), 2, c(1, 2, 1), "/"),
               ignore_attr = TRUE, tolerance = 1e-6)
  # A model giving the layer another number of features is a shape error.
  expect_error(adapt(norm, matrix(1:8, 4)), class = "mirrored_shape_error", regexp = "feature")
  # ... and changes nothing.
  expect_equal(predict(model, x, verbose = 0), matrix(c(-1, 1, -1, 1), 4, 3), ignore_attr = TRUE,
               tolerance = 1e-6)
})

test_that("layer_rescaling() and layer_embedding() compute the right values", {
  r <- seq_model(4, layer_rescaling(scale = 1 / 127.5, offset = -1))
  expect_equal(as.vector(predict(r, matrix(c(0, 51, 127.5, 255), 1), verbose = 0)), c(-1, -0.6, 0, 1),
               tolerance = 1e-6)
  set_random_seed(2)
  e <- seq_model(5, layer_embedding(input_dim = 6, output_dim = 3))
  table <- get_weights(e)[[1]]
  expect_equal(dim(table), c(6, 3))
  expect_true(all(abs(table) <= 0.05) && length(unique(as.vector(table))) == 18)
  idx <- matrix(c(0, 5, 2, 2, 1, 3, 3, 4, 0, 5), 2, byrow = TRUE)
  out <- predict(e, idx, verbose = 0)
  expect_equal(dim(out), c(2, 5, 3))
  for (i in 1:2) for (j in 1:5) expect_identical(out[i, j, ], table[idx[i, j] + 1, ])
  for (bad in c(6, -1, 2.5)) {
    expect_error(predict(e, matrix(c(0, 1, bad, 1, 1), 1), verbose = 0), class = "mirrored_value_error",
                 regexp = "embedding index")
  }
})

# Two models, each trained on `n_replicas` CPU replicas with batches 10, 10
# and 3 (the last leaves 3 replicas one row each, and a 4th would get none):
# indices -> Embedding -> LayerNormalization -> Flatten -> Dense, and
# features -> Normalization (adapted) -> Rescaling -> Dense ->
# LayerNormalization (rms_scaling) -> Dense.
train_preprocessing <- function(n_replicas, x, y, embedding) {
  set_random_seed(11)
  strategy <- suppressMessages(mirrored_strategy(paste0("/cpu:", seq_len(n_replicas) - 1)))
  norm <- layer_normalization()
  if (!embedding) adapt(norm, x)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = ncol(x))
    layers <- if (embedding) {
      list(layer_embedding(input_dim = 9, output_dim = 3), layer_layer_normalization(),
           layer_flatten(), layer_dense(units = 3))
    } else {
      list(norm, layer_rescaling(scale = 0.5, offset = 0.1), layer_dense(units = 5),
           layer_layer_normalization(rms_scaling = TRUE), layer_dense(units = 3))
    }
    for (l in layers) model$add(l)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.02),
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  initial <- get_weights(model)
  fit(model, x, y, batch_size = 10, epochs = 3, shuffle = FALSE, verbose = 0)
  list(model = model, initial = initial)
}

rel_diff <- function(w, w1) {
  sqrt(sum(unlist(Map(function(a, b) sum((a - b)^2), w, w1))) / sum(unlist(lapply(w1, function(a) sum(a^2)))))
}

test_that("models with these layers train to the same weights on 1 and 3 CPU replicas", {
  set.seed(9)
  idx <- matrix(sample(0:8, 23 * 4, replace = TRUE), 23)
  feats <- matrix(rnorm(23 * 3, 4, 2), 23)
  y <- sample(0:2, 23, replace = TRUE)
  for (embedding in c(TRUE, FALSE)) {
    x <- if (embedding) idx else feats
    r1 <- train_preprocessing(1, x, y, embedding)
    w1 <- get_weights(r1$model)
    if (embedding) expect_gt(rel_diff(w1[1], r1$initial[1]), 0.05)  # the embedding table trained
    m3 <- train_preprocessing(3, x, y, embedding)$model
    w3 <- get_weights(m3)
    expect_lt(rel_diff(w3, w1), 1e-5)
    for (k in 1:2) expect_identical(mirrored:::replica_weights(m3, k), w3)
  }
  # The features model's weights: normalization (mean, variance, count),
  # dense (2), LN rms (gamma), dense (2). Training leaves the adapted
  # statistics as adapt() computed them.
  expect_length(w3, 8)
  expect_equal(as.vector(w3[[1]]), colMeans(feats), tolerance = 1e-6)
  expect_equal(as.vector(w3[[2]]), colMeans(sweep(feats, 2, colMeans(feats))^2), tolerance = 1e-6)
})
