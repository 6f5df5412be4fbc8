# Regularizers and constraints against Keras 3 (fixtures written by
# tools/make-keras-fixtures-regularizers.py): each model starts from the
# weights Keras saved untrained, trains on the same rows in the same order,
# and must log Keras' per-epoch losses and end on Keras' weights; the same
# training on 2 replicas must give the same numbers.

reg_fixture <- function(name) {
  dir <- test_path("fixtures", "regularizers")
  csv <- function(f) unname(as.matrix(utils::read.csv(file.path(dir, f), header = FALSE)))
  lines <- readLines(file.path(dir, paste0(name, "_weights.txt")))
  list(path = file.path(dir, paste0(name, ".keras")), x = csv(paste0(name, "_x.csv")),
       y = csv(paste0(name, "_y.csv")),
       loss = as.numeric(readLines(file.path(dir, paste0(name, "_loss.csv")))),
       weights = lapply(strsplit(lines, " "), as.numeric))
}

# The optimizer and batch size of each case (as in the fixture script).
reg_cases <- list(
  dense_penalties = list(opt = function() optimizer_sgd(0.1), batch = 5, xshape = 5),
  dense_orthogonal = list(opt = function() optimizer_adam(0.01), batch = 12, xshape = 5),
  dense_constraints = list(opt = function() optimizer_sgd(0.1, momentum = 0.9), batch = 5, xshape = 5),
  conv2d = list(opt = function() optimizer_adam(0.01), batch = 5, xshape = c(4, 4, 2)),
  embedding = list(opt = function() optimizer_sgd(0.2), batch = 5, xshape = 3)
)

# A weight flattened in row-major order, as numpy writes it.
row_major <- function(w) {
  d <- dim(w)
  if (is.null(d) || length(d) == 1) return(as.vector(w))
  as.vector(aperm(w, rev(seq_along(d))))
}

train_fixture <- function(name, devices) {
  f <- reg_fixture(name)
  case <- reg_cases[[name]]
  x <- f$x
  if (length(case$xshape) > 1) x <- array_reshape(x, c(nrow(x), case$xshape))
  strategy <- suppressMessages(mirrored_strategy(devices))
  with(strategy$scope(), {
    model <- load_model(f$path)
    compile(model, optimizer = case$opt(), loss = "mse")
  })
  h <- fit(model, x, f$y, batch_size = case$batch, epochs = 3, shuffle = FALSE, verbose = 0)
  list(model = model, loss = h$metrics$loss, fixture = f, x = x)
}

for (name in names(reg_cases)) {
  test_that(paste0(name, ": logged losses and final weights equal Keras 3's, on 1 and 2 replicas"), {
    one <- train_fixture(name, "/cpu:0")
    expect_equal(one$loss, one$fixture$loss, tolerance = 1e-5)
    w <- lapply(get_weights(one$model), row_major)
    expect_length(w, length(one$fixture$weights))
    for (k in seq_along(w)) {
      expect_lt(max(abs(w[[k]] - one$fixture$weights[[k]])), 1e-5)
    }
    two <- train_fixture(name, c("/cpu:0", "/cpu:1"))
    expect_equal(two$loss, one$loss, tolerance = 1e-6)
    w2 <- lapply(get_weights(two$model), row_major)
    for (k in seq_along(w)) expect_lt(max(abs(w2[[k]] - w[[k]])), 1e-6)
    if (name == "dense_penalties") {
      # 3 replicas: the last batch of 2 rows leaves one replica empty.
      three <- train_fixture(name, c("/cpu:0", "/cpu:1", "/cpu:2"))
      expect_equal(three$loss, one$loss, tolerance = 1e-6)
      w3 <- lapply(get_weights(three$model), row_major)
      for (k in seq_along(w)) expect_lt(max(abs(w3[[k]] - w[[k]])), 1e-6)
    }
    # evaluate() reports the loss with the regularization losses, as Keras does.
    ev <- evaluate(one$model, one$x, one$fixture$y, batch_size = 12, verbose = 0)
    data_loss <- mean((predict(one$model, one$x, verbose = 0) - one$fixture$y)^2)
    if (name != "dense_constraints") expect_gt(ev$loss, data_loss + 1e-4)
    else expect_equal(ev$loss, data_loss, tolerance = 1e-6)
  })
}

test_that("the logged loss adds the weight penalty to the data loss, once per step", {
  set_random_seed(1)
  m <- keras_model_sequential(input_shape = 3) |>
    layer_dense(2, kernel_regularizer = regularizer_l2(0.5), bias_regularizer = regularizer_l1(0.25),
                bias_initializer = initializer_ones())
  compile(m, optimizer = optimizer_sgd(0), loss = "mse")
  x <- matrix(seq(-1, 1, length.out = 12), 4)
  y <- matrix(0, 4, 2)
  w <- get_weights(m)
  h <- fit(m, x, y, batch_size = 3, epochs = 1, shuffle = FALSE, verbose = 0)
  pred <- x %*% w[[1]] + matrix(w[[2]], 4, 2, byrow = TRUE)
  expected <- mean(pred^2) + 0.5 * sum(w[[1]]^2) + 0.25 * sum(abs(w[[2]]))
  expect_equal(h$metrics$loss, expected, tolerance = 1e-6)
})

test_that("regularizer and constraint objects carry Keras' configs and are checked", {
  expect_equal(regularizer_l1_l2(l1 = 0.1)$config, list(l1 = 0.1, l2 = 0))
  expect_equal(regularizer_orthogonal(mode = "columns")$config, list(factor = 0.01, mode = "columns"))
  expect_equal(constraint_maxnorm(3, axis = c(1, 2, 3))$config, list(max_value = 3L, axis = list(0L, 1L, 2L)))
  expect_equal(constraint_unitnorm(axis = -1)$config, list(axis = -1L))
  expect_output(print(regularizer_l2(0.5)), "L2\\(l2 = 0.5\\)")
  expect_output(print(constraint_maxnorm(3, axis = 1:3)), "MaxNorm\\(max_value = 3, axis = c\\(1, 2, 3\\)\\)")
  expect_error(regularizer_l2(-1), class = "mirrored_value_error", regexp = "l2")
  expect_error(regularizer_orthogonal(mode = "diag"), class = "mirrored_value_error", regexp = "mode")
  expect_error(constraint_maxnorm(axis = 0), class = "mirrored_value_error", regexp = "axis")
  expect_error(layer_dense(units = 2, kernel_regularizer = "l3"), class = "mirrored_value_error",
               regexp = "kernel_regularizer")
  expect_error(layer_dense(units = 2, bias_constraint = "nonneg"), class = "mirrored_value_error",
               regexp = "bias_constraint")
  # Keras' names give Keras' default configs.
  l <- layer_dense(units = 2, kernel_regularizer = "l2", kernel_constraint = "non_neg")
  expect_equal(l$config$kernel_regularizer$config, list(l2 = 0.01))
  expect_equal(l$config$kernel_constraint$class_name, "NonNeg")
  # The orthogonal regularizer needs a weight of rank 2 and is not an activity regularizer.
  expect_error(layer_dense(units = 2, activity_regularizer = regularizer_orthogonal()),
               class = "mirrored_value_error", regexp = "activity_regularizer")
  inp <- keras_input(shape = 3)
  m <- keras_model(inp, layer_dense(inp, 2, bias_regularizer = regularizer_orthogonal()))
  expect_error(compile(m, optimizer = "sgd", loss = "mse"), class = "mirrored_value_error",
               regexp = "OrthogonalRegularizer")
})

test_that("models with regularizers and constraints save and load with their configs", {
  inp <- keras_input(shape = c(5, 5, 1))
  out <- inp |>
    layer_conv_2d(2, 3, kernel_regularizer = regularizer_l1_l2(0.01, 0.02),
                  kernel_constraint = constraint_maxnorm(2, axis = 1:3)) |>
    layer_flatten() |>
    layer_dense(1, activity_regularizer = regularizer_l2(0.1), bias_constraint = constraint_nonneg())
  m <- keras_model(inp, out)
  path <- tempfile(fileext = ".keras")
  save_model(m, path)
  back <- load_model(path)
  expect_equal(back$layers[[2]]$config$kernel_regularizer, m$layers[[2]]$config$kernel_regularizer)
  expect_equal(back$layers[[2]]$config$kernel_constraint$config$axis, list(0L, 1L, 2L))
  expect_equal(back$layers[[4]]$config$activity_regularizer$config, list(l2 = 0.1))
  expect_equal(back$layers[[4]]$config$bias_constraint$class_name, "NonNeg")
})

test_that("add_weight(regularizer =, constraint =) in a custom layer act as on a built-in layer's weights", {
  layer_scaled <- Layer("ScaledDense",
    build = function(input_shape) {
      self$kernel <- self$add_weight(shape = shape(tail(input_shape, 1), 2), initializer = "ones",
                                     regularizer = regularizer_l2(0.1), name = "kernel")
      self$bias <- self$add_weight(shape = shape(2), initializer = "zeros", constraint = constraint_nonneg(),
                                   name = "bias")
    },
    call = function(x) op_matmul(x, self$kernel) + self$bias)
  inputs <- keras_input(shape = 3)
  custom <- keras_model(inputs, layer_scaled(inputs))
  inputs2 <- keras_input(shape = 3)
  builtin <- keras_model(inputs2, layer_dense(inputs2, 2, kernel_initializer = "ones",
                                              kernel_regularizer = regularizer_l2(0.1),
                                              bias_constraint = constraint_nonneg()))
  x <- matrix(c(0.5, -1, 2, 0.1, 0.3, -0.7, 1.2, 0.4, 0.9, -0.3, 0.6, -1.1), 4, 3)
  y <- matrix(c(3, -2, 1, 5, -4, 0.5, 2, -1), 4, 2)
  for (m in list(custom, builtin)) m |> compile(optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
  # the loss includes 0.1 * sum(kernel^2) = 0.1 * 6
  w <- get_weights(custom)
  want <- mean((x %*% w[[1]] + rep(w[[2]], each = 4) - y)^2) + 0.1 * sum(w[[1]]^2)
  expect_equal(evaluate(custom, x, y, verbose = 0)[["loss"]], want, tolerance = 1e-6)
  for (m in list(custom, builtin)) fit(m, x, y, batch_size = 4, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_equal(get_weights(custom), get_weights(builtin), tolerance = 1e-6)
  expect_true(all(get_weights(custom)[[2]] >= 0))
  expect_true(any(get_weights(custom)[[2]] == 0))  # the constraint clipped a negative bias
})
