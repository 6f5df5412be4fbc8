# Datasets against the same operations written in plain R.

ids_of <- function(ds) vapply(dataset_collect(ds), function(e) e[[2]], numeric(1))
slice_rows <- function(x, rows) x[rows, , drop = FALSE]

test_that("tensor_slices_dataset slices along the first dimension and keeps types", {
  x <- array(as.numeric(1:60), c(5, 3, 4))
  y <- c(2L, 0L, 1L, 1L, 0L)
  lg <- c(TRUE, FALSE, TRUE, TRUE, FALSE)
  els <- dataset_collect(tensor_slices_dataset(list(x, y, lg)))
  expect_length(els, 5)
  for (i in 1:5) {
    expect_identical(els[[i]][[1]], x[i, , ])
    expect_identical(els[[i]][[2]], y[i])
    expect_identical(els[[i]][[3]], lg[i])
  }
  big <- matrix(c(1000L, 2L, -3L, 4L), 2)  # not bytes: stored as float
  expect_identical(dataset_collect(tensor_slices_dataset(big))[[2]][[1]], big[2, ])
  nm <- dataset_collect(tensor_slices_dataset(data.frame(a = 1:2, b = c(0.5, 1.5))))
  expect_identical(nm[[2]], list(a = 2L, b = 1.5))
  one <- dataset_collect(tensors_dataset(list(x, y)))
  expect_length(one, 1)
  expect_identical(one[[1]][[1]], x)
})

test_that("batch, drop_remainder, repeat, take, skip match plain R", {
  x <- matrix(as.numeric(1:20), 10, 2)
  y <- 0:9
  ds <- tensor_slices_dataset(list(x, y))
  b <- dataset_collect(dataset_batch(ds, 4))
  expect_length(b, 3)
  starts <- c(1, 5, 9)
  for (k in 1:3) {
    rows <- starts[k]:min(starts[k] + 3, 10)
    expect_identical(b[[k]][[1]], slice_rows(x, rows))
    expect_identical(b[[k]][[2]], y[rows])
  }
  expect_length(dataset_collect(dataset_batch(ds, 4, drop_remainder = TRUE)), 2)
  expect_equal(length(dataset_batch(ds, 4, drop_remainder = TRUE)), 2)
  expect_identical(ids_of(dataset_repeat(ds, 3)), as.numeric(rep(0:9, 3)))
  expect_identical(ids_of(dataset_take(ds, 3)), as.numeric(0:2))
  expect_identical(ids_of(dataset_take(ds, -1)), as.numeric(0:9))
  expect_identical(ids_of(dataset_skip(ds, 7)), as.numeric(7:9))
  expect_identical(ids_of(ds |> dataset_skip(8) |> dataset_repeat(2) |> dataset_take(3)), c(8, 9, 8))
  comp <- ds |> dataset_repeat(2) |> dataset_skip(5) |> dataset_batch(6) |> dataset_take(2)
  got <- dataset_collect(comp)
  expect_identical(got[[2]][[2]], rep(0:9, 2)[(5 + 7):(5 + 12)])
  expect_equal(length(comp), 2)
  expect_identical(length(dataset_repeat(ds)), Inf)
  expect_equal(length(dataset_map(ds, function(x, y) list(x, y))), 10)
})

test_that("shuffle is a seeded permutation with bounded lookahead, reshuffled per pass", {
  n <- 300
  buffer <- 16
  ds <- tensor_slices_dataset(list(matrix(0, n, 1), 0:(n - 1)))
  sh <- dataset_shuffle(ds, buffer, seed = 11)
  a <- ids_of(sh)
  b <- ids_of(sh)
  expect_setequal(a, 0:(n - 1))
  expect_length(a, n)
  expect_false(identical(a, b))                      # next pass: new order
  expect_false(identical(a, as.numeric(0:(n - 1))))
  expect_identical(a, ids_of(dataset_shuffle(ds, buffer, seed = 11)))   # same seed: same orders
  expect_false(identical(a, ids_of(dataset_shuffle(ds, buffer, seed = 12))))
  fixed <- dataset_shuffle(ds, buffer, seed = 3, reshuffle_each_iteration = FALSE)
  expect_identical(ids_of(fixed), ids_of(fixed))
  pos <- seq_along(a) - 1
  expect_true(all(pos >= a - buffer + 1))
  set.seed(5); s1 <- ids_of(dataset_shuffle(ds, n))
  set.seed(5); s2 <- ids_of(dataset_shuffle(ds, n))
  expect_identical(s1, s2)
})

test_that("dataset_map calls R with the components as arguments, shapes may change", {
  x <- matrix(as.numeric(1:12), 4, 3)
  ds <- tensor_slices_dataset(list(x, 1:4))
  calls <- 0
  m <- dataset_map(ds, function(a, b) {
    calls <<- calls + 1
    list(c(sum(a), b), b > 2L)
  })
  got <- dataset_collect(m)
  expect_equal(calls, 4)
  for (i in 1:4) {
    expect_equal(got[[i]][[1]], c(sum(x[i, ]), i))
    expect_identical(got[[i]][[2]], i > 2L)
  }
  f <- dataset_collect(dataset_map(ds, ~ .x * 10))
  expect_equal(f[[3]][[1]], x[3, ] * 10)
  named <- dataset_collect(dataset_map(tensor_slices_dataset(list(a = 1:2, b = 3:4)),
                                       function(el) list(s = el$a + el$b)))
  expect_identical(named[[2]], list(s = 6L))
  batched <- dataset_collect(ds |> dataset_batch(2) |> dataset_map(function(a, b) list(a / 2, b)))
  expect_equal(batched[[2]][[1]], x[3:4, ] / 2)
  err <- dataset_map(ds, function(a, b) stop("boom in map"))
  expect_error(dataset_collect(err), "boom in map")
})

test_that("built-in transforms match plain R", {
  x <- matrix(c(0L, 255L, 51L, 102L, 17L, 34L), 3, 2)
  y <- c(2L, 0L, 1L)
  ds <- tensor_slices_dataset(list(x, y))
  r <- dataset_collect(ds |> dataset_rescale(1 / 255) |> dataset_batch(3))[[1]]
  expect_equal(r[[1]], x / 255, tolerance = 1e-6)
  oh <- dataset_collect(ds |> dataset_one_hot(3) |> dataset_batch(3))[[1]][[2]]
  expect_identical(oh, diag(3)[y + 1, ])
  nz <- dataset_collect(ds |> dataset_normalize(mean = c(10, 20), variance = c(4, 16)) |> dataset_batch(3))[[1]][[1]]
  expect_equal(nz, sweep(sweep(x, 2, c(10, 20)), 2, c(2, 4), "/"), tolerance = 1e-5)
  cs <- dataset_collect(ds |> dataset_rescale(0.5) |> dataset_cast("int32"))[[2]][[1]]
  expect_identical(cs, as.integer(trunc(x[2, ] * 0.5)))
  expect_identical(dataset_collect(ds |> dataset_cast("bool", components = 2))[[2]][[2]], FALSE)
  expect_error(dataset_one_hot(ds, 2) |> dataset_collect(), class = "mirrored_value_error")
  expect_error(dataset_rescale(ds, 1, components = 3), class = "mirrored_value_error")
  expect_error(dataset_rescale(ds, c(1, 2, 3)) |> dataset_collect(), class = "mirrored_shape_error")
})

test_that("cache in memory replays the first complete pass", {
  calls <- 0
  ds <- tensor_slices_dataset(list(1:5, 1:5)) |>
    dataset_map(function(a, b) { calls <<- calls + 1; list(a, b) }) |>
    dataset_cache()
  it <- as_array_iterator(ds)
  iter_next(it)          # a partial pass records nothing
  expect_identical(ids_of(ds), as.numeric(1:5))
  before <- calls
  expect_identical(ids_of(ds), as.numeric(1:5))
  expect_identical(dataset_collect(ds |> dataset_batch(2) |> dataset_take(1))[[1]][[2]], 1:2)
  expect_equal(calls, before)
  expect_match(paste(capture.output(print(ds)), collapse = "\n"), "memory")
})

test_that("a file cache is written atomically and refuses foreign or truncated files", {
  dir <- tempfile("cache")
  dir.create(dir)
  on.exit(unlink(dir, recursive = TRUE), add = TRUE)
  path <- file.path(dir, "ds.cache")
  src <- tensor_slices_dataset(list(matrix(as.numeric(1:20), 10), 0:9))
  ds <- src |> dataset_batch(3) |> dataset_cache(path)
  it <- as_array_iterator(ds)
  iter_next(it)
  expect_false(file.exists(path))                 # interrupted first pass: no cache
  first <- dataset_collect(ds)
  expect_true(file.exists(path))
  expect_identical(dataset_collect(ds), first)    # replayed from the file
  expect_identical(dataset_collect(src |> dataset_batch(3) |> dataset_cache(path)), first)
  expect_error(dataset_collect(src |> dataset_batch(4) |> dataset_cache(path)),
               "another dataset", class = "mirrored_io_error")
  bytes <- readBin(path, "raw", file.size(path))
  writeBin(bytes[seq_len(length(bytes) - 7)], path)
  expect_error(dataset_collect(ds), "truncated", class = "mirrored_io_error")
  writeLines("hello", path)
  expect_error(dataset_collect(ds), "not a mirrored cache", class = "mirrored_io_error")
  expect_length(list.files(dir, pattern = "tmp"), 1)  # the abandoned pass's file, until...
  rm(it)
  gc()
  expect_length(list.files(dir, pattern = "tmp"), 0)  # ...its iterator is released
  expect_error(dataset_cache(src, file.path(dir, "no", "such", "dir", "f")), class = "mirrored_io_error")
})

test_that("prefetch gives the same elements and leaves no thread behind", {
  skip_if_not(dir.exists("/proc/self/task"))
  ds <- tensor_slices_dataset(list(matrix(runif(200), 100), 1:100)) |> dataset_batch(7)
  before <- thread_count()
  expect_identical(dataset_collect(dataset_prefetch(ds)), dataset_collect(ds))
  expect_identical(dataset_collect(dataset_prefetch(ds, 1)), dataset_collect(ds))
  it <- as_array_iterator(dataset_prefetch(ds, 2))
  iter_next(it)
  expect_thread_count(before + 1)
  rm(it)
  gc()
  expect_thread_count(before)
  bad <- tensor_slices_dataset(list(1:10, c(0:8, 12L))) |> dataset_one_hot(10) |> dataset_prefetch(3)
  expect_error(dataset_collect(bad), "class indices", class = "mirrored_value_error")
  gc()
  expect_thread_count(before)
  # After an R map, prefetch never runs R on a thread: same elements, same order.
  m <- ds |> dataset_map(function(x, y) list(x + 1, y)) |> dataset_prefetch()
  expect_equal(dataset_collect(m)[[3]][[1]], dataset_collect(ds)[[3]][[1]] + 1, tolerance = 1e-6)
  gc()
  expect_thread_count(before)
})

test_that("bad input gives classed errors", {
  ds <- tensor_slices_dataset(1:10)
  expect_error(dataset_batch(ds, 0), class = "mirrored_value_error")
  expect_error(dataset_batch(ds, -2), class = "mirrored_value_error")
  expect_error(dataset_shuffle(ds, 0), class = "mirrored_value_error")
  expect_error(tensor_slices_dataset(list(1:3, matrix(1:8, 4))), "same number of rows",
               class = "mirrored_value_error")
  expect_error(tensor_slices_dataset(list("a")), class = "mirrored_value_error")
  expect_error(tensor_slices_dataset(c(1L, NA)), class = "mirrored_value_error")
  expect_error(dataset_take(ds, -5), class = "mirrored_value_error")
  expect_error(dataset_map(ds, 3), class = "mirrored_value_error")
  expect_error(dataset_collect(dataset_repeat(ds)), class = "mirrored_value_error")
  expect_length(dataset_collect(dataset_repeat(ds), iter_max = 25), 25)
  ragged <- ds |> dataset_map(function(x) seq_len(x)) |> dataset_batch(2)
  expect_error(dataset_collect(ragged), "equal shapes", class = "mirrored_shape_error")
  it <- as_array_iterator(dataset_take(ds, 1))
  iter_next(it)
  expect_null(iter_next(it))
  expect_error(iter_next(it), class = "mirrored_iterator_exhausted_error")
  expect_error(iter_next(list()), class = "mirrored_value_error")
})

test_that("print shows the structure, cardinality and memory", {
  ds <- tensor_slices_dataset(list(array(0L, c(100, 28, 28)), 1:100)) |>
    dataset_shuffle(10, seed = 1) |> dataset_batch(32) |> dataset_prefetch()
  out <- capture.output(print(ds))
  expect_match(out[2], "tensor_slices_dataset")
  expect_true(any(grepl("shuffle\\(buffer_size = 10", out)))
  expect_true(any(grepl("integer\\(None, 28, 28\\)", out)))
  expect_true(any(grepl("cardinality: 4", out)))
  expect_true(any(grepl("76.7 KB", out)))   # 100 x 784 bytes + 100 labels, kept as bytes
  expect_true(any(grepl("elements:    <unknown", capture.output(print(dataset_map(ds, identity))))))
})
