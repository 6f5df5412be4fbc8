test_that("idx_dataset() reads the IDX files as tensor_slices_dataset() would the arrays", {
  dir <- system.file("extdata", "mnist", package = "mirrored")
  files <- file.path(dir, c("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"))
  ds <- idx_dataset(files)
  expect_equal(length(ds), 10000)
  m <- dataset_mnist_sample()$test
  first <- iter_next(as_array_iterator(dataset_batch(dataset_take(ds, 300), 300)))
  ref <- iter_next(as_array_iterator(dataset_batch(dataset_take(tensor_slices_dataset(list(m$x, m$y)), 300), 300)))
  expect_equal(first, ref)
  expect_equal(first[[1]], m$x[1:300, , ], ignore_attr = TRUE)
  # Usable for training directly.
  model <- keras_model_sequential(input_shape = c(28, 28)) |> layer_flatten() |> layer_dense(units = 10)
  model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  h <- fit(model, ds |> dataset_take(512) |> dataset_batch(64) |> dataset_rescale(1 / 255), epochs = 1, verbose = 0)
  expect_length(h$metrics$loss, 1)
  three <- tempfile()
  writeBin(as.raw(c(0, 0, 8, 1, 0, 0, 0, 3, 7, 1, 2)), three)  # 3 labels
  expect_error(idx_dataset(c(files[1], three)), class = "mirrored_value_error", regexp = "3 rows")
  expect_error(idx_dataset(tempfile()), class = "mirrored_io_error")
  expect_error(idx_dataset(1), class = "mirrored_value_error")
  bad <- tempfile()
  writeBin(as.raw(c(0, 0, 8, 1, 0, 0, 0, 9, 1, 2)), bad)
  expect_error(idx_dataset(bad), class = "mirrored_io_error", regexp = "truncated")
})

test_that("npz_dataset() reads named arrays of an .npz archive", {
  skip_if(!nzchar(Sys.which("zip")))
  x <- array(as.integer(sample(0:255, 5 * 3 * 2, replace = TRUE)), c(5, 3, 2))
  y <- c(4L, 0L, 9L, 2L, 7L)
  tmp <- tempfile("npz")
  dir.create(tmp)
  writeBin(npy_bytes(x), file.path(tmp, "x.npy"))
  writeBin(npy_bytes(y, "<i8"), file.path(tmp, "y.npy"))
  old <- setwd(tmp)
  utils::zip("data.npz", c("x.npy", "y.npy"), flags = "-q")
  setwd(old)
  ds <- npz_dataset(file.path(tmp, "data.npz"), c("x", "y"))
  got <- iter_next(as_array_iterator(dataset_batch(ds, 5)))
  expect_equal(got[[1]], x, ignore_attr = TRUE)
  expect_equal(as.vector(got[[2]]), y)
  expect_error(npz_dataset(file.path(tmp, "data.npz"), "z"), class = "mirrored_value_error", regexp = "has no array")
  expect_error(npz_dataset(file.path(tmp, "x.npy"), "x"), class = "mirrored_io_error")
})

test_that("write_npz() writes what npz_dataset() and NumPy's layout read back", {
  f <- tempfile(fileext = ".npz")
  x <- array(rnorm(4 * 3 * 2), c(4, 3, 2))
  arrays <- list(x = x, y = c(3L, -1L, 0L, 16777216L), b = as.raw(c(0, 255, 7, 1)))
  expect_identical(write_npz(arrays, f), f)
  got <- iter_next(as_array_iterator(dataset_batch(npz_dataset(f, c("x", "y", "b")), 4)))
  expect_equal(got[[1]], x, tolerance = 1e-7, ignore_attr = TRUE)  # float64 read as float32
  expect_equal(as.vector(got[[2]]), c(3, -1, 0, 2^24))
  expect_equal(as.vector(got[[3]]), c(0, 255, 7, 1))
  # The members are C-order .npy arrays, as numpy.savez() writes them.
  m <- mirrored:::cpp_read_npz(f)
  expect_equal(m$x, x, tolerance = 1e-7)
  expect_identical(m$y, arrays$y)
  # Integers float32 cannot hold exactly are refused rather than rounded.
  big <- tempfile(fileext = ".npz")
  write_npz(list(y = 16777217L), big)
  expect_error(npz_dataset(big, "y"), class = "mirrored_value_error", regexp = "16777217")
  # Bad input: an error, and the file already there is left as it was.
  before <- readBin(f, "raw", file.size(f))
  expect_error(write_npz(list(x = "a"), f), class = "mirrored_value_error", regexp = "x\\$x")
  expect_error(write_npz(list(1:3), f), class = "mirrored_value_error", regexp = "unique, non-empty names")
  expect_error(write_npz(list(a = 1, a = 2), f), class = "mirrored_value_error")
  expect_error(write_npz(list(y = c(1L, NA)), f), class = "mirrored_value_error", regexp = "NA")
  expect_error(write_npz(list(x = 1), tempdir()), class = "mirrored_io_error")
  expect_error(write_npz(list(x = 1), c("a", "b")), class = "mirrored_value_error")
  expect_identical(readBin(f, "raw", file.size(f) + 1), before)
})

# Five parts of an .npz dataset (rows `sizes`); x rows (id, -id), y the id.
write_parts <- function(sizes, dir = tempfile("parts")) {
  dir.create(dir)
  first <- c(0, cumsum(sizes))
  vapply(seq_along(sizes), function(i) {
    id <- seq_len(sizes[i]) + first[i] - 1
    f <- file.path(dir, sprintf("part-%d.npz", i))
    write_npz(list(x = cbind(id, -id), y = as.integer(id)), f)
    f
  }, character(1))
}

test_that("a dataset stored in parts reads them in order, one at a time", {
  files <- write_parts(c(4, 3, 5))
  ds <- npz_dataset(files, c("x", "y"))
  expect_equal(length(ds), 12)
  expect_match(capture.output(print(ds))[2], "npz_dataset(3 parts, 2 components, 12 rows)", fixed = TRUE)
  got <- iter_next(as_array_iterator(dataset_batch(ds, 12)))
  expect_equal(as.vector(got[[2]]), 0:11)
  expect_equal(got[[1]][, 2], -(0:11))
  # Nothing is held in memory between passes (each pass reads the files).
  expect_equal(mirrored:::dataset_info(ds)$memory, 0)
  # Trains like the same rows in memory.
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = "mse")
  expect_length(fit(model, dataset_batch(ds, 5), epochs = 2, verbose = 0)$metrics$loss, 2)
  # Parts must agree.
  odd <- tempfile(fileext = ".npz")
  write_npz(list(x = matrix(1, 2, 3), y = 1:2), odd)
  expect_error(npz_dataset(c(files, odd), c("x", "y")), class = "mirrored_value_error", regexp = "part 1 has")
  floats <- tempfile(fileext = ".npz")
  write_npz(list(x = matrix(1, 2, 2), y = c(1, 2)), floats)
  expect_error(npz_dataset(c(files, floats), c("x", "y")), class = "mirrored_value_error", regexp = "integers")
  expect_error(npz_dataset(c(files, tempfile()), c("x", "y")), class = "mirrored_io_error")
  # A part rewritten after the dataset was made.
  write_npz(list(x = matrix(1, 2, 2), y = 1:2), files[2])
  expect_error(dataset_collect(ds), class = "mirrored_io_error", regexp = "changed")
})

test_that("idx_dataset() takes a list of parts, one file per component each", {
  dir <- system.file("extdata", "mnist", package = "mirrored")
  files <- file.path(dir, c("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"))
  ds <- idx_dataset(list(files, files))
  expect_equal(length(ds), 20000)
  expect_match(capture.output(print(ds))[2], "idx_dataset(2 parts, 2 components, 20000 rows)", fixed = TRUE)
  tail <- iter_next(as_array_iterator(dataset_batch(dataset_skip(ds, 19998), 2)))
  m <- dataset_mnist_sample()$test
  expect_equal(as.vector(tail[[2]]), m$y[9999:10000])
  expect_error(idx_dataset(list(files, files[1])), class = "mirrored_value_error", regexp = "one per component")
  expect_error(idx_dataset(list(files, 3)), class = "mirrored_value_error", regexp = "filenames\\[\\[2\\]\\]")
})
