# Reshaping and merging layers through the R API: argument errors (class and
# argument), output shapes from the core, configs, and a model mixing them
# that trains to the same weights on 1 and 3 CPU replicas (uneven last batch).

test_that("reshaping constructors give the core's output shapes and Keras configs", {
  x <- keras_input(shape = c(4, 6))
  expect_equal(dim(layer_reshape(x, c(-1, 3))), c(NA, 8L, 3L))
  expect_equal(dim(layer_permute(x, c(2, 1))), c(NA, 6L, 4L))
  expect_equal(dim(keras_input(shape = 5) |> layer_repeat_vector(3)), c(NA, 3L, 5L))
  expect_equal(dim(layer_zero_padding_1d(x, c(1, 2))), c(NA, 7L, 6L))
  expect_equal(dim(layer_cropping_1d(x, 1)), c(NA, 2L, 6L))
  expect_equal(dim(layer_upsampling_1d(x, 3)), c(NA, 12L, 6L))
  img <- keras_input(shape = c(5, 7, 2))
  expect_equal(dim(layer_zero_padding_2d(img, list(c(1, 0), c(2, 3)))), c(NA, 6L, 12L, 2L))
  expect_equal(dim(layer_zero_padding_2d(img)), c(NA, 7L, 9L, 2L))
  expect_equal(dim(layer_cropping_2d(img, c(1, 2))), c(NA, 3L, 3L, 2L))
  expect_equal(dim(layer_upsampling_2d(img, c(2, 3))), c(NA, 10L, 21L, 2L))
  l <- layer_zero_padding_2d(padding = list(c(1, 0), c(2, 3)))
  expect_equal(l$config$padding, list(list(1L, 0L), list(2L, 3L)))
  expect_identical(l$config$data_format, "channels_last")
  expect_identical(layer_upsampling_2d()$config$interpolation, "nearest")
  expect_equal(layer_permute(dims = c(2, 1))$config$dims, list(2L, 1L))
})

test_that("reshaping constructors' bad arguments are classed errors naming the argument", {
  x <- keras_input(shape = c(4, 6))
  expect_error(layer_reshape(x, c(5, -1)), class = "mirrored_shape_error", regexp = "reshape")
  expect_error(layer_reshape(x, c(-1, -1)), class = "mirrored_value_error", regexp = "target_shape")
  expect_error(layer_permute(x, c(1, 1)), class = "mirrored_value_error", regexp = "dims")
  expect_error(layer_permute(x, c(1, 2, 3)), class = "mirrored_shape_error", regexp = "rank")
  expect_error(layer_repeat_vector(x, 0), class = "mirrored_value_error", regexp = "n")
  expect_error(layer_repeat_vector(x, 2), class = "mirrored_shape_error", regexp = "rank 2")
  expect_error(layer_zero_padding_1d(x, -1), class = "mirrored_value_error", regexp = "padding")
  expect_error(layer_zero_padding_1d(x, data_format = "channels_first"), class = "mirrored_not_yet_error",
               regexp = "data_format")
  expect_error(layer_cropping_1d(x, c(2, 2)), class = "mirrored_shape_error", regexp = "leaves nothing")
  expect_error(layer_cropping_2d(x, 1), class = "mirrored_shape_error", regexp = "rank 4")
  expect_error(layer_upsampling_2d(interpolation = "bilinear"), class = "mirrored_not_yet_error",
               regexp = "interpolation")
  expect_error(layer_upsampling_2d(interpolation = "cubic"), class = "mirrored_value_error",
               regexp = "interpolation")
  expect_error(layer_upsampling_1d(x, 1.5), class = "mirrored_value_error", regexp = "size")
  expect_error(layer_reshape(x, c(24), foo = 1), class = "mirrored_value_error", regexp = "foo")
})

test_that("merge constructors check their inputs and name the layer and the shapes", {
  a <- keras_input(shape = 3)
  b <- keras_input(shape = 2)
  expect_equal(dim(layer_concatenate(list(a, b))), c(NA, 5L))
  expect_equal(dim(layer_concatenate(a, b)), c(NA, 5L))
  m1 <- keras_input(shape = c(2, 3))
  m2 <- keras_input(shape = c(4, 3))
  expect_equal(dim(layer_concatenate(list(m1, m2), axis = 2)), c(NA, 6L, 3L))
  expect_identical(layer_concatenate(axis = 2)$config$axis, 1L)
  expect_error(layer_concatenate(list(m1, m2)), class = "mirrored_shape_error", regexp = "\\(None, 4, 3\\)")
  expect_error(layer_concatenate(list(a, b), axis = 1), class = "mirrored_value_error", regexp = "batch axis")
  expect_error(layer_concatenate(list(a)), class = "mirrored_value_error", regexp = "at least 2")
  expect_s3_class(layer_concatenate(), "mirrored_layer")
  expect_error(layer_subtract(list(a, a, a)), class = "mirrored_value_error", regexp = "exactly 2")
  expect_error(layer_multiply(list(a, b)), class = "mirrored_shape_error", regexp = "one shape")
  expect_error(layer_maximum(list(a, 1)), class = "mirrored_value_error", regexp = "symbolic tensor")
  expect_equal(dim(layer_average(list(a, a, a))), c(NA, 3L))
  expect_equal(dim(layer_minimum(list(a, a))), c(NA, 3L))
  expect_equal(dim(layer_dot(list(a, a), axes = -1)), c(NA, 1L))
  expect_identical(layer_dot(axes = 2, normalize = TRUE)$config$axes, 1L)
  expect_error(layer_dot(list(a, b), axes = 2), class = "mirrored_shape_error", regexp = "Dot")
  expect_equal(dim(layer_dot(list(m1, m2), axes = 3)), c(NA, 2L, 4L))
  expect_equal(dim(layer_dot(list(m1, m1), axes = c(2, 2))), c(NA, 3L, 3L))
  expect_error(layer_dot(list(a, m1), axes = -1), class = "mirrored_not_yet_error", regexp = "ranks 2 and 3")
  expect_error(layer_dot(list(m1, m1), axes = 2, normalize = TRUE), class = "mirrored_not_yet_error",
               regexp = "normalize")
  expect_equal(dim(layer_dot(list(m1, m2), axes = -1, normalize = TRUE)), c(NA, 2L, 4L))
  expect_error(layer_dot(list(a, a)), class = "mirrored_value_error", regexp = "axes")
  expect_error(layer_dot(list(a, a), axes = 2, normalize = NA), class = "mirrored_value_error", regexp = "normalize")
})

mixed_model <- function(strategy, x, y) {
  set_random_seed(3)
  with(strategy$scope(), {
    inp <- keras_input(shape = 6)
    seq <- inp |> layer_dense(8, activation = activation_silu) |> layer_reshape(c(4, 2)) |>
      layer_zero_padding_1d(1) |> layer_upsampling_1d(2) |> layer_cropping_1d(c(1, 2)) |>
      layer_permute(c(2, 1)) |> layer_flatten()
    rep <- inp |> layer_dense(3) |> layer_repeat_vector(2) |> layer_flatten()
    # Some merges share their inputs (every input then accumulates its
    # gradient), the others get their own pair of branches.
    batch_matmul <- function(p) {
      layer_dot(list(p[[1]] |> layer_reshape(c(2, 3)), p[[2]] |> layer_reshape(c(3, 2))),
                axes = c(3, 2)) |> layer_flatten()
    }
    pair <- function() list(inp |> layer_dense(6, activation = "elu"),
                            inp |> layer_dense(6) |> layer_activation_leaky_relu())
    shared <- pair()
    merged <- layer_concatenate(list(seq, rep, layer_maximum(shared), layer_subtract(shared),
                                     layer_multiply(list(shared[[1]], shared[[1]])),
                                     layer_multiply(pair()), layer_average(pair()),
                                     layer_minimum(pair()),
                                     layer_dot(pair(), axes = -1, normalize = TRUE),
                                     batch_matmul(pair())))
    out <- merged |> layer_dense(3) |> layer_activation_relu(max_value = 6, negative_slope = 0.1)
    model <- keras_model(inp, out)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.01), loss = "mse")
  })
  initial <- get_weights(model)
  fit(model, x, y, batch_size = 10, epochs = 3, verbose = 0)
  list(model = model, initial = initial)
}

test_that("a model mixing these layers trains to the same weights on 1 and 3 CPU replicas", {
  set.seed(2)
  x <- matrix(rnorm(23 * 6), 23)  # batches of 10, 10 and 3
  y <- matrix(rnorm(23 * 3), 23)
  one <- mixed_model(suppressMessages(mirrored_strategy("/cpu:0")), x, y)
  three <- mixed_model(suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1", "/cpu:2"))), x, y)
  w1 <- get_weights(one$model)
  w3 <- get_weights(three$model)
  expect_equal(unlist(one$initial), unlist(three$initial))
  rel <- sqrt(sum(unlist(Map(function(a, b) sum((a - b)^2), w3, w1))) /
                sum(unlist(lapply(w1, function(a) sum(a^2)))))
  expect_lt(rel, 1e-5)
  # It trained: every weight moved from its initial value.
  moved <- vapply(seq_along(w1), function(i) sum(abs(w1[[i]] - one$initial[[i]])), numeric(1))
  expect_true(all(moved > 1e-4))
  p <- predict(one$model, x, verbose = 0)
  expect_equal(dim(p), c(23L, 3L))
  expect_true(all(is.finite(p)))
})
