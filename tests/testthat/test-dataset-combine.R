# dataset_unbatch/enumerate/filter/zip/concatenate/padded_batch/reduce
# against what plain R computes from the same arrays.

test_that("dataset_unbatch() inverts dataset_batch(), a last partial batch included", {
  x <- matrix(as.numeric(1:14), 7, 2)
  y <- c(TRUE, FALSE, TRUE, TRUE, FALSE, FALSE, TRUE)
  ds <- tensor_slices_dataset(list(x = x, y = y))
  back <- ds |> dataset_batch(3) |> dataset_unbatch() |> dataset_collect()
  expect_equal(back, dataset_collect(ds))
  expect_length(back, 7)
  expect_identical(back[[5]]$y, FALSE)
  expect_equal(length(ds |> dataset_batch(3, drop_remainder = TRUE) |> dataset_unbatch()), 6)
  expect_error(tensor_slices_dataset(1:3) |> dataset_unbatch(), class = "mirrored_shape_error",
               regexp = "scalar")
})

test_that("dataset_enumerate() pairs each element with its position", {
  ds <- tensor_slices_dataset(c(10, 20, 30)) |> dataset_enumerate(start = 4)
  els <- dataset_collect(ds)
  expect_equal(lapply(els, `[[`, 1), list(4L, 5L, 6L))
  expect_equal(vapply(els, `[[`, 0, 2), c(10, 20, 30))
  named <- tensor_slices_dataset(list(a = 1:2, b = c(0.5, 1.5))) |> dataset_enumerate() |>
    dataset_collect()
  expect_equal(named[[2]], list(1L, list(a = 2L, b = 1.5)))
  expect_equal(length(ds), 3)
})

test_that("dataset_filter() keeps what the predicate keeps, with a classed error for a bad predicate", {
  kept <- tensor_slices_dataset(1:20) |> dataset_filter(function(x) x %% 3 == 0) |> dataset_collect()
  expect_equal(unlist(kept), (1:20)[(1:20) %% 3 == 0])
  pairs <- tensor_slices_dataset(list(matrix(1:8, 4), c(1, 0, 1, 0))) |>
    dataset_filter(~ .y == 1) |> dataset_collect()
  expect_equal(lapply(pairs, `[[`, 1), list(c(1L, 5L), c(3L, 7L)))
  # after enumerate: the index and the element as arguments
  odd <- tensor_slices_dataset(c(5, 6, 7, 8)) |> dataset_enumerate() |>
    dataset_filter(function(i, x) i %% 2 == 1) |> dataset_collect()
  expect_equal(vapply(odd, `[[`, 0, 2), c(6, 8))
  expect_true(is.na(length(tensor_slices_dataset(1:3) |> dataset_filter(~ TRUE))))
  expect_error(tensor_slices_dataset(1:3) |> dataset_filter(function(x) c(TRUE, FALSE)) |>
                 dataset_collect(), class = "mirrored_map_error", regexp = "dataset_filter")
  expect_error(tensor_slices_dataset(1:3) |> dataset_filter("x"), class = "mirrored_value_error")
})

test_that("dataset_zip() groups the datasets' elements, stops at the shortest and feeds fit()", {
  x <- matrix(runif(20), 10, 2)
  y <- x %*% c(1, -1)
  zx <- tensor_slices_dataset(x)
  zy <- tensor_slices_dataset(y[1:8, , drop = FALSE])
  z <- dataset_zip(zx, zy)
  expect_equal(length(z), 8)
  els <- dataset_collect(z)
  expect_length(els, 8)
  expect_equal(els[[3]][[1]], x[3, ], tolerance = 1e-6)
  expect_equal(els[[3]][[2]], y[3, 1], tolerance = 1e-6)
  named <- dataset_zip(list(inputs = zx, targets = zy)) |> dataset_collect()
  expect_named(named[[1]], c("inputs", "targets"))
  expect_identical(zip_datasets, dataset_zip)
  # (x, y) batches for fit() equal the arrays' batches
  m1 <- keras_model_sequential(input_shape = 2) |> layer_dense(1, kernel_initializer = "zeros")
  m2 <- keras_model_sequential(input_shape = 2) |> layer_dense(1, kernel_initializer = "zeros")
  for (m in list(m1, m2)) m |> compile(optimizer = optimizer_sgd(0.1), loss = "mse")
  h1 <- fit(m1, z |> dataset_batch(4), epochs = 2, verbose = 0)
  h2 <- fit(m2, x[1:8, ], y[1:8, , drop = FALSE], batch_size = 4, epochs = 2, shuffle = FALSE, verbose = 0)
  expect_equal(h1$metrics$loss, h2$metrics$loss, tolerance = 1e-6)
  expect_equal(get_weights(m1), get_weights(m2), tolerance = 1e-6)
  expect_error(dataset_zip(zx, 1:3), class = "mirrored_value_error", regexp = "argument 2")
})

test_that("dataset_concatenate() chains datasets and checks their components", {
  a <- tensor_slices_dataset(list(1:3, c(0, 0, 0)))
  b <- tensor_slices_dataset(list(4:5, c(1, 1)))
  ab <- dataset_concatenate(a, b, a)
  expect_equal(length(ab), 8)
  expect_equal(vapply(dataset_collect(ab), function(e) e[[1]], 0L), c(1:5, 1:3))
  expect_equal(length(dataset_concatenate(a, dataset_repeat(b))), Inf)
  expect_error(dataset_concatenate(a, tensor_slices_dataset(1:3)), class = "mirrored_shape_error",
               regexp = "components")
})

test_that("dataset_padded_batch() pads sequences of different lengths", {
  seqs <- tensor_slices_dataset(c(3, 1, 4, 2)) |> dataset_map(function(n) seq_len(n))
  b <- seqs |> dataset_padded_batch(2) |> dataset_collect()
  expect_equal(b[[1]][[1]], rbind(c(1, 2, 3), c(1, 0, 0)))
  expect_equal(b[[2]][[1]], rbind(c(1, 2, 3, 4), c(1, 2, 0, 0)))
  fixed <- seqs |> dataset_padded_batch(3, padded_shapes = shape(5), padding_values = -1) |>
    dataset_collect()
  expect_equal(dim(fixed[[1]][[1]]), c(3L, 5L))
  expect_equal(fixed[[2]][[1]], matrix(c(1, 2, -1, -1, -1), 1))
  # two components, per-component values; a matrix padded on both axes
  mats <- tensor_slices_dataset(c(1, 2)) |>
    dataset_map(function(n) list(matrix(n, n, n + 1), n))
  mb <- mats |> dataset_padded_batch(2, padding_values = list(9, 0)) |> dataset_collect()
  want <- array(9, c(2, 2, 3))
  want[1, 1, 1:2] <- 1
  want[2, , ] <- 2
  expect_equal(mb[[1]][[1]], want)
  expect_equal(mb[[1]][[2]], c(1, 2))
  expect_error(seqs |> dataset_padded_batch(4, padded_shapes = shape(3)) |> dataset_collect(),
               class = "mirrored_shape_error", regexp = "padded shape")
  expect_error(seqs |> dataset_padded_batch(2, padded_shapes = "a"), class = "mirrored_value_error")
})

test_that("dataset_reduce() folds one pass", {
  expect_equal(tensor_slices_dataset(1:10) |> dataset_reduce(0, function(s, x) s + x), 55)
  rows <- tensor_slices_dataset(matrix(1:6, 3)) |> dataset_reduce(0, function(s, x) s + x[2])
  expect_equal(rows, 4 + 5 + 6)
  expect_error(tensor_slices_dataset(1:3) |> dataset_repeat() |> dataset_reduce(0, `+`),
               class = "mirrored_value_error", regexp = "infinite")
  expect_error(tensor_slices_dataset(1:3) |> dataset_reduce(0, "f"), class = "mirrored_value_error")
})

test_that("combining a mapped or nested dataset is a not-yet error naming the function", {
  mapped <- tensor_slices_dataset(1:3) |> dataset_map(function(x) list(x, x))
  expect_error(dataset_enumerate(mapped), class = "mirrored_not_yet_error", regexp = "dataset_enumerate")
  nested <- tensor_slices_dataset(list(list(1:2, 3:4), 5:6))
  expect_error(dataset_zip(nested, nested), class = "mirrored_not_yet_error", regexp = "nested")
})

test_that("dataset_window() windows as tf.data does, handed out as datasets", {
  w <- tensor_slices_dataset(1:7) |> dataset_window(3, shift = 2)
  expect_equal(length(w), 4)
  first <- iter_next(as_iterator(w))
  expect_true(is_dataset(first[[1]]))
  expect_equal(unlist(dataset_collect(first[[1]])), 1:3)
  rows <- w |> dataset_flat_map(function(x) dataset_batch(x, 3)) |> dataset_collect()
  expect_equal(lapply(rows, `[[`, 1), list(1:3, 3:5, 5:7, 7L))
  dropped <- tensor_slices_dataset(1:7) |> dataset_window(3, shift = 2, drop_remainder = TRUE)
  expect_equal(length(dropped), 3)
  strided <- tensor_slices_dataset(1:10) |> dataset_window(3, shift = 4, stride = 2, drop_remainder = TRUE) |>
    dataset_flat_map(~ dataset_batch(.x, 3)) |> dataset_collect()
  expect_equal(lapply(strided, `[[`, 1), list(c(1L, 3L, 5L), c(5L, 7L, 9L)))
  # a sliding window over a series: every run of 5 consecutive values
  series <- tensor_slices_dataset(as.numeric(1:20)) |> dataset_window(5, shift = 1, drop_remainder = TRUE) |>
    dataset_flat_map(function(x) dataset_batch(x, 5)) |> dataset_collect()
  expect_length(series, 16)
  expect_equal(series[[16]][[1]], as.numeric(16:20))
  # a window of pairs is a pair of datasets
  pairs <- dataset_zip(tensor_slices_dataset(matrix(1:10, 5)), tensor_slices_dataset(1:5)) |>
    dataset_window(2)
  el <- iter_next(as_iterator(pairs))
  expect_length(el, 2)
  expect_equal(dataset_collect(el[[2]]), list(list(1L), list(2L)))
  expect_error(w |> dataset_batch(2), class = "mirrored_not_yet_error", regexp = "dataset_flat_map")
  expect_error(w |> dataset_map(identity), class = "mirrored_not_yet_error")
  expect_error(tensor_slices_dataset(1:3) |> dataset_window(0), class = "mirrored_value_error")
})

test_that("dataset_flat_map() and dataset_interleave() flatten the datasets map_func returns", {
  flat <- tensor_slices_dataset(1:3) |> dataset_flat_map(function(n) tensor_slices_dataset(rep(n, n)))
  expect_equal(unlist(dataset_collect(flat)), c(1L, 2L, 2L, 3L, 3L, 3L))
  expect_true(is.na(length(flat)))
  # tf.data's deterministic interleave order
  inter <- tensor_slices_dataset(c(1, 2, 3)) |>
    dataset_interleave(function(x) tensor_slices_dataset(rep(x, 4)), cycle_length = 2, block_length = 2)
  expect_equal(unlist(dataset_collect(inter)), c(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3))
  # tf.data's documented example: range(1, 6), each repeated 6 times, cycle 2, block 4
  doc <- tensor_slices_dataset(1:5) |>
    dataset_interleave(function(x) tensor_slices_dataset(rep(x, 6)), cycle_length = 2, block_length = 4)
  expect_equal(unlist(dataset_collect(doc)),
               c(1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5))
  # an exhausted dataset hands its turn to the next slot
  uneven <- tensor_slices_dataset(c(1, 3, 2)) |>
    dataset_interleave(function(n) tensor_slices_dataset(rep(n, n)), cycle_length = 2)
  expect_equal(unlist(dataset_collect(uneven)), c(1, 3, 3, 2, 3, 2))
  expect_error(tensor_slices_dataset(1:3) |> dataset_flat_map(function(n) n) |> dataset_collect(),
               class = "mirrored_map_error", regexp = "must return a dataset")
  expect_error(tensor_slices_dataset(1:3) |> dataset_interleave(identity, cycle_length = 0),
               class = "mirrored_value_error")
})
