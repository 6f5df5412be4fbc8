# Learning rate schedules: values against formulas written here in double
# (Keras 3's), and training with them against Keras 3 in test-optimizers.R.

f32 <- function(x) vapply(x, mirrored:::as_float32, 0)

test_that("schedules give Keras 3's values", {
  s <- learning_rate_schedule_exponential_decay(0.1, decay_steps = 10, decay_rate = 0.5)
  expect_equal(s(c(0, 5, 20)), 0.1 * 0.5^(c(0, 5, 20) / 10), tolerance = 1e-6)
  s <- learning_rate_schedule_exponential_decay(0.1, 10, 0.5, staircase = TRUE)
  expect_equal(s(c(9, 10, 25)), c(0.1, 0.05, 0.025), tolerance = 1e-6)
  s <- learning_rate_schedule_inverse_time_decay(0.1, 2, 0.5)
  expect_equal(s(c(0, 3)), 0.1 / (1 + 0.5 * c(0, 3) / 2), tolerance = 1e-6)
  s <- learning_rate_schedule_piecewise_constant_decay(c(2, 5), c(0.3, 0.2, 0.1))
  expect_equal(s(0:6), f32(c(0.3, 0.3, 0.3, 0.2, 0.2, 0.2, 0.1)))
  s <- learning_rate_schedule_polynomial_decay(0.2, 4, end_learning_rate = 0.01, power = 2)
  expect_equal(s(c(0, 2, 8)), (0.2 - 0.01) * (1 - pmin(c(0, 2, 8), 4) / 4)^2 + 0.01, tolerance = 1e-6)
  s <- learning_rate_schedule_polynomial_decay(0.2, 4, cycle = TRUE)
  expect_equal(s(6), (0.2 - 1e-4) * (1 - 6 / 8) + 1e-4, tolerance = 1e-6)
  s <- learning_rate_schedule_cosine_decay(0.2, 10, alpha = 0.1)
  cosine <- function(t, n, a) (1 - a) * 0.5 * (1 + cos(pi * pmin(t, n) / n)) + a
  expect_equal(s(c(0, 5, 12)), 0.2 * cosine(c(0, 5, 12), 10, 0.1), tolerance = 1e-6)
  s <- learning_rate_schedule_cosine_decay(0, 10, warmup_target = 0.2, warmup_steps = 4)
  expect_equal(s(c(0, 2, 4, 9)), c(0, 0.1, 0.2, 0.2 * cosine(5, 10, 0)), tolerance = 1e-6)
  s <- learning_rate_schedule_cosine_decay_restarts(1, 10, t_mul = 2, m_mul = 0.5)
  # Periods 10, 20, 40: step 15 is a quarter into the second, at half height.
  expect_equal(s(c(0, 15)), c(1, 0.5 * 0.5 * (1 + cos(pi * 0.25))), tolerance = 1e-6)
})

test_that("a schedule's learning rate follows the iterations during training", {
  s <- learning_rate_schedule_exponential_decay(0.1, 4, 0.5)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  compile(model, optimizer = optimizer_sgd(s), loss = "mse")
  expect_equal(model$optimizer$learning_rate, f32(0.1), tolerance = 1e-7)
  fit(model, matrix(1, 8, 2), matrix(0, 8, 1), batch_size = 2, epochs = 1, verbose = 0)
  expect_equal(model$optimizer$learning_rate, 0.1 * 0.5^(4 / 4), tolerance = 1e-6)
})

test_that("schedule arguments are checked", {
  expect_error(learning_rate_schedule_exponential_decay(0.1, 0, 0.5), class = "mirrored_value_error",
               regexp = "decay_steps")
  expect_error(learning_rate_schedule_piecewise_constant_decay(c(1, 2), c(0.1, 0.2)),
               class = "mirrored_value_error", regexp = "1 less")
  expect_error(learning_rate_schedule_cosine_decay(0.1, 10)(-1), class = "mirrored_value_error",
               regexp = "step")
  expect_output(print(learning_rate_schedule_cosine_decay(0.1, 10)), "CosineDecay")
})
