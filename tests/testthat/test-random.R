# keras3's random_* functions: shapes and dtypes, Keras 3's seed semantics
# (an integer repeats, a seed generator advances, NULL follows set.seed()),
# the distributions' moments (the core's draws are tested in depth by
# src/mr/tests/test_random_draws.cpp), and bad arguments.

test_that("random arrays have the shape and dtype asked for", {
  x <- random_normal(c(3, 4), seed = 1)
  expect_equal(dim(x), c(3L, 4L))
  expect_type(x, "double")
  expect_identical(x, as.double(as.vector(op_cast(x, "float32"))) |> array(c(3, 4)))  # float32 values
  expect_length(random_uniform(5, seed = 1), 5)
  expect_null(dim(random_uniform(5, seed = 1)))
  expect_equal(dim(random_uniform(shape(2, 3, 1), seed = 1)), c(2L, 3L, 1L))
  i <- random_integer(c(50, 2), minval = 2, maxval = 5, seed = 1)
  expect_type(i, "integer")
  expect_true(all(i >= 2 & i < 5))
  expect_setequal(unique(as.vector(i)), 2:4)
  h <- random_normal(c(2, 2), dtype = "float16", seed = 1)
  expect_equal(h, op_cast(random_normal(c(2, 2), seed = 1), "float16"))
})

test_that("seeds behave as in Keras 3", {
  expect_identical(random_normal(4, seed = 3), random_normal(4, seed = 3))
  expect_false(identical(random_normal(4, seed = 3), random_normal(4, seed = 4)))
  gen <- random_seed_generator(5)
  a <- random_uniform(4, seed = gen)
  b <- random_uniform(4, seed = gen)
  expect_false(identical(a, b))
  expect_equal(gen$state, 2)
  again <- random_seed_generator(5)
  expect_identical(random_uniform(4, seed = again), a)
  expect_identical(random_uniform(4, seed = again), b)
  set.seed(10)
  x <- random_normal(6)
  set.seed(10)
  expect_identical(random_normal(6), x)
  expect_output(print(gen), "SeedGenerator.*seed=5 state=2")
})

test_that("draws follow their distributions", {
  n <- 20000
  x <- random_normal(n, mean = 2, stddev = 3, seed = 1)
  expect_equal(mean(x), 2, tolerance = 5 * 3 / sqrt(n) / 2)
  expect_equal(sd(x), 3, tolerance = 0.03)
  u <- random_uniform(n, minval = -2, maxval = 2, seed = 2)
  expect_true(all(u >= -2 & u < 2))
  expect_equal(var(u), 16 / 12, tolerance = 0.03)
  t <- random_truncated_normal(n, stddev = 0.5, seed = 3)
  expect_true(all(abs(t) <= 1))
  g <- random_gamma(n, alpha = 3, seed = 4)
  expect_equal(mean(g), 3, tolerance = 5 * sqrt(3 / n) / 3)
  b <- random_beta(n, alpha = 2, beta = 2, seed = 5)
  expect_equal(mean(b), 0.5, tolerance = 0.01)
  k <- random_binomial(n, counts = 8, probabilities = 0.25, seed = 6)
  expect_true(all(k == round(k) & k >= 0 & k <= 8))
  expect_equal(mean(k), 2, tolerance = 0.02)
  # parameters broadcast: a column of means
  m <- random_normal(c(2, 1000), mean = matrix(c(-50, 50), 2, 1), seed = 7)
  expect_true(all(m[1, ] < 0) && all(m[2, ] > 0))
})

test_that("random_shuffle(), random_categorical() and random_dropout()", {
  s <- random_shuffle(1:10, seed = 1)
  expect_setequal(s, 1:10)
  expect_identical(random_shuffle(1:10, seed = 1), s)
  m <- matrix(1:12, 4)
  rows <- random_shuffle(m, seed = 2)
  expect_setequal(rows[, 1], 1:4)
  expect_identical(rows[, 2], rows[, 1] + 4L)  # whole rows move
  cols <- random_shuffle(m, axis = 2, seed = 2)
  expect_identical(cols[1, ], (cols[1, ] - 1L) %/% 4L * 4L + 1L)  # whole columns move
  expect_setequal(cols[1, ], c(1L, 5L, 9L))
  logits <- rbind(c(0, -Inf, 0), c(-Inf, 5, -Inf))
  c1 <- random_categorical(logits, 500, seed = 3)
  expect_equal(dim(c1), c(2L, 500L))
  expect_setequal(unique(c1[1, ]), c(1L, 3L))
  expect_true(all(c1[2, ] == 2L))
  expect_true(all(random_categorical(logits, 5, seed = 3, zero_indexed = TRUE)[2, ] == 1L))
  x <- matrix(1, 200, 50)
  d <- random_dropout(x, rate = 0.25, seed = 4)
  expect_equal(sort(unique(as.vector(d))), c(0, 1 / 0.75), tolerance = 1e-6)  # float32 values
  expect_equal(mean(d == 0), 0.25, tolerance = 0.05)
  rowsd <- random_dropout(x, rate = 0.5, noise_shape = c(200, 1), seed = 5)
  expect_true(all(apply(rowsd, 1, function(r) length(unique(r)) == 1)))
})

test_that("bad arguments are classed errors naming the argument", {
  expect_error(random_normal(c(2, NA)), class = "mirrored_value_error", regexp = "shape")
  expect_error(random_normal(2, stddev = -1, seed = 1), class = "mirrored_value_error", regexp = "standard deviation")
  expect_error(random_normal(2, seed = "a"), class = "mirrored_value_error", regexp = "seed")
  expect_error(random_normal(2, dtype = "int32"), class = "mirrored_value_error", regexp = "dtype")
  expect_error(random_uniform(2, minval = 1, maxval = 1, seed = 1), class = "mirrored_value_error", regexp = "minval")
  expect_error(random_integer(2, 0, 2.5), class = "mirrored_value_error", regexp = "maxval")
  expect_error(random_integer(2, 3, 1), class = "mirrored_value_error", regexp = "less than")
  expect_error(random_gamma(2, alpha = 0, seed = 1), class = "mirrored_value_error", regexp = "alpha")
  expect_error(random_binomial(2, counts = 2.5, probabilities = 0.5, seed = 1), class = "mirrored_value_error",
               regexp = "counts")
  expect_error(random_normal(c(2, 3), mean = 1:4), class = "mirrored_shape_error", regexp = "broadcast")
  expect_error(random_shuffle(1:3, axis = 2), class = "mirrored_value_error", regexp = "axis")
  expect_error(random_categorical(c(0, NaN), 2, seed = 1), class = "mirrored_value_error", regexp = "logits")
  expect_error(random_dropout(1:4, rate = 1), class = "mirrored_value_error", regexp = "rate")
  expect_error(random_dropout(matrix(1, 2, 2), 0.5, noise_shape = c(3, 1)), class = "mirrored_shape_error")
  expect_error(random_seed_generator(1, foo = 2), class = "mirrored_value_error", regexp = "foo")
})
