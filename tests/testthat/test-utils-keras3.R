# np_array() and zip_lists(), keras3's helpers, on R values.

test_that("np_array() gives R arrays of the dtype's type", {
  m <- matrix(c(1, 2, 3, 4), 2, dimnames = list(c("a", "b"), NULL))
  f <- np_array(m, "float32")
  expect_identical(f, m)
  i <- np_array(m, "int32")
  expect_type(i, "integer")
  expect_identical(dim(i), c(2L, 2L))
  expect_identical(dimnames(i), dimnames(m))
  expect_identical(np_array(c(0, 1, 255), "uint8"), c(0L, 1L, 255L))
  expect_identical(np_array(c(1, 0), "bool"), c(TRUE, FALSE))
  expect_identical(np_array(1:3), 1:3)
  expect_identical(np_array(c(2^40, 1), "int64"), c(2^40, 1))
  # The multi-GPU guide's use: a float array into fit().
  x <- np_array(array(runif(24), c(6, 4)), "float32")
  model <- keras_model_sequential(input_shape = 4) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = "mse")
  expect_no_error(fit(model, x, np_array(rep(0, 6), "float32"), epochs = 1, verbose = 0))
})

test_that("np_array() refuses values the dtype cannot hold", {
  expect_error(np_array(c(1.5, 2), "int32"), class = "mirrored_value_error")
  expect_error(np_array(c(1.5, 2), "int32"), "element 1 is 1.5")
  expect_error(np_array(256, "uint8"), "0..255")
  expect_error(np_array(-1, "uint16"), class = "mirrored_value_error")
  expect_error(np_array(c(1, NA), "int8"), class = "mirrored_value_error")
  expect_error(np_array(c(1, NA), "bool"), class = "mirrored_value_error")
  expect_error(np_array(1, "complex64"), "dtype")
  expect_error(np_array("a"), class = "mirrored_value_error")
  expect_error(np_array(1, order = "Z"), "order")
})

test_that("zip_lists() transposes by position and by name", {
  expect_identical(zip_lists(list(1, 2), list("a", "b")),
                   list(list(1, "a"), list(2, "b")))
  expect_identical(zip_lists(list(list(1, 2), list("a", "b"))),
                   list(list(1, "a"), list(2, "b")))
  expect_identical(zip_lists(list(x = 1, y = 2), list(y = "b", x = "a")),
                   list(x = list(1, "a"), y = list(2, "b")))
  expect_identical(zip_lists(c(1, 2), c(3, 4)), list(list(1, 3), list(2, 4)))
  expect_error(zip_lists(list(1, 2), list(1)), class = "mirrored_value_error")
  expect_error(zip_lists(list(x = 1, y = 2), list(x = 1, z = 2)), "unname")
  expect_error(zip_lists(list(x = 1, x = 2), list(1, 2)), "unique")
})

test_that("iterators give nested elements back nested, names and all", {
  x <- list(a = matrix(1:8, 4), b = c(10, 20, 30, 40))
  y <- c(0, 1, 0, 1)
  ds <- tensor_slices_dataset(list(x, y))
  el <- iter_next(as_iterator(ds))
  expect_named(el, NULL)
  expect_length(el, 2)
  expect_named(el[[1]], c("a", "b"))
  expect_identical(el[[1]]$a, c(1L, 5L))
  expect_identical(el[[1]]$b, 10)
  expect_identical(el[[2]], 0)
  # The destructuring keras3 code does.
  c(features, label) %<-% el
  expect_identical(features$b, 10)
  # Outer names too, and a group of one array stays a list.
  ds2 <- tensor_slices_dataset(list(inputs = list(u = 1:2), target = c(5, 6)))
  el2 <- iter_next(as_iterator(ds2))
  expect_identical(el2, list(inputs = list(u = 1L), target = 5))
  # Flat elements are unchanged.
  expect_identical(iter_next(as_iterator(tensor_slices_dataset(list(p = 1:2, q = 3:4)))),
                   list(p = 1L, q = 3L))
})

test_that("iterate() applies a function over a dataset or an iterator's rest", {
  ds <- tensor_slices_dataset(1:4)
  expect_identical(iterate(ds, function(el) el[[1]] * 2L), c(2L, 4L, 6L, 8L))
  it <- as_iterator(ds)
  iter_next(it)
  expect_identical(iterate(it, function(el) el[[1]]), 2:4)
  expect_type(iterate(ds, simplify = FALSE), "list")
  expect_length(iterate(ds), 4)
  expect_identical(as_iterator(it), it)
  expect_error(iterate(1:3), class = "mirrored_value_error")
  expect_error(iterate(ds, f = 3), class = "mirrored_value_error")
})

test_that("clear_session() restarts names and the dtype policy, as Keras 3", {
  old <- config_dtype_policy()
  on.exit(config_set_dtype_policy(old))
  clear_session()
  expect_identical(layer_dense(units = 2)$name, "dense")
  expect_identical(layer_dense(units = 2)$name, "dense_1")
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(1)
  config_set_dtype_policy("mixed_bfloat16")
  expect_null(clear_session())
  expect_identical(layer_dense(units = 2)$name, "dense")
  expect_identical(config_dtype_policy()$name, "float32")
  # A model made before still works.
  model |> compile(optimizer = "sgd", loss = "mse")
  expect_no_error(predict(model, matrix(1, 1, 3), verbose = 0))
  expect_error(clear_session(free_memory = NA), class = "mirrored_value_error")
})

test_that("pop_layer() removes the last layer and keeps the others' weights", {
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 8, activation = "relu") |> layer_dense(units = 2)
  w <- get_weights(model)
  expect_invisible(pop_layer(model))
  expect_length(model$layers, 1)
  expect_identical(get_weights(model), w[1:2])
  x <- matrix(runif(12), 3)
  expect_identical(dim(predict(model, x, verbose = 0)), c(3L, 8L))
  # Then a new head, trained after compiling again.
  model |> layer_dense(units = 1)
  model |> compile(optimizer = "sgd", loss = "mse")
  expect_no_error(fit(model, x, c(0, 1, 0), epochs = 1, verbose = 0))
  expect_identical(get_weights(model)[[1]] |> dim(), dim(w[[1]]))
  pop_layer(model)
  pop_layer(model)
  expect_error(pop_layer(model), "no layers", class = "mirrored_value_error")
  inp <- keras_input(2)
  expect_error(pop_layer(keras_model(inp, inp |> layer_dense(1))), class = "mirrored_value_error")
  expect_error(pop_layer(model, rebuild = "yes"), class = "mirrored_value_error")
})

test_that("keras_input() takes keras3's arguments; layer_input() is the same function", {
  a <- keras_input(batch_shape = c(NA, 5, 2), name = "seq")
  b <- layer_input(shape = c(5, 2))
  expect_identical(a$shape, b$shape)
  m <- keras_model(a, a |> layer_flatten() |> layer_dense(1))
  expect_identical(dim(predict(m, array(1, c(3, 5, 2)), verbose = 0)), c(3L, 1L))
  expect_no_error(keras_input(batch_shape = c(32, 4)))
  expect_error(keras_input(shape = 4, batch_shape = c(NA, 4)), "both", class = "mirrored_value_error")
  expect_error(keras_input(batch_size = 8, batch_shape = c(NA, 4)), "both", class = "mirrored_value_error")
  expect_error(keras_input(batch_shape = 4), class = "mirrored_value_error")
  expect_error(keras_input(4, sparse = TRUE), class = "mirrored_not_yet_error")
  expect_error(keras_input(4, ragged = TRUE), class = "mirrored_not_yet_error")
  expect_error(keras_input(4, optional = TRUE), class = "mirrored_not_yet_error")
  expect_error(keras_input(4, tensor = 1), class = "mirrored_not_yet_error")
  expect_no_error(keras_input(4, sparse = FALSE, ragged = FALSE))
  expect_identical(names(formals(layer_input)), names(formals(keras_input)))
})
