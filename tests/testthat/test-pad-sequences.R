# pad_sequences() against keras3's documented behaviour, written out by hand.

test_that("pad_sequences() pads and truncates before or after", {
  seqs <- list(1:3, 4:5, 6L)
  expect_identical(pad_sequences(seqs), rbind(1:3, c(0L, 4L, 5L), c(0L, 0L, 6L)))
  expect_identical(pad_sequences(seqs, padding = "post"), rbind(1:3, c(4L, 5L, 0L), c(6L, 0L, 0L)))
  expect_identical(pad_sequences(seqs, maxlen = 2), rbind(2:3, 4:5, c(0L, 6L)))
  expect_identical(pad_sequences(seqs, maxlen = 2, truncating = "post"), rbind(1:2, 4:5, c(0L, 6L)))
  expect_identical(pad_sequences(list(c(1.5, 2)), maxlen = 3, dtype = "float32", value = -1),
                   matrix(c(-1, 1.5, 2), 1))
  expect_identical(dim(pad_sequences(list(integer(0), 1:2))), c(2L, 2L))
  expect_identical(dim(pad_sequences(list())), c(0L, 0L))
})

test_that("pad_sequences() names its bad arguments", {
  expect_error(pad_sequences(1:3), class = "mirrored_value_error", regexp = "sequences")
  expect_error(pad_sequences(list(1:2), padding = "middle"), class = "mirrored_value_error", regexp = "padding")
  expect_error(pad_sequences(list(1:2), dtype = "string"), class = "mirrored_value_error", regexp = "dtype")
  expect_error(pad_sequences(list(c(1, NA))), class = "mirrored_value_error", regexp = "NA")
})
