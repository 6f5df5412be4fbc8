# CUDA graphs of the training step (R/cuda-graphs.R): the option and the
# counters. The replays themselves are tested in the C++ suite
# (src/mr/tests/test_step_graphs.cpp) and below on a GPU machine.

graph_data <- function() {
  set.seed(3)
  x <- matrix(runif(200), ncol = 2)
  list(x = x, y = as.integer(x[, 1] > x[, 2]))
}

graph_model <- function(strategy = NULL) {
  build <- function() {
    keras_model_sequential(input_shape = 2) |>
      layer_dense(units = 4, activation = "relu") |>
      layer_dense(units = 2)
  }
  model <- if (is.null(strategy)) build() else with(strategy$scope(), build())
  model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
}

test_that("options(mirrored.cuda_graphs) must be TRUE or FALSE", {
  d <- graph_data()
  model <- graph_model()
  for (bad in list("yes", NA, c(TRUE, FALSE), 1)) {
    withr::local_options(mirrored.cuda_graphs = bad)
    expect_error(fit(model, d$x, d$y, epochs = 1, verbose = 0), class = "mirrored_value_error",
                 regexp = "mirrored.cuda_graphs")
  }
})

test_that("CPU replicas never replay a graph: every step is eager", {
  d <- graph_data()
  model <- graph_model()
  expect_equal(cuda_graph_stats(model)$replays, 0)
  fit(model, d$x, d$y, batch_size = 32, epochs = 2, verbose = 0)  # 4 steps an epoch
  s <- cuda_graph_stats(model)
  expect_true(s$enabled)
  expect_equal(s$replays, 0)
  expect_equal(s$captures, 0)
  expect_equal(s$eager_steps, 8)
  expect_false(s$capture_failed)
  withr::local_options(mirrored.cuda_graphs = FALSE)
  fit(model, d$x, d$y, batch_size = 32, epochs = 1, verbose = 0)
  expect_false(cuda_graph_stats(model)$enabled)
  expect_equal(cuda_graph_stats(model)$eager_steps, 12)
  # Two CPU replicas too.
  suppressMessages({
    model2 <- graph_model(mirrored_strategy(c("/cpu:0", "/cpu:1")))
    fit(model2, d$x, d$y, batch_size = 32, epochs = 1, verbose = 0)
  })
  expect_equal(cuda_graph_stats(model2)[c("replays", "eager_steps")], list(replays = 0, eager_steps = 4))
})

test_that("cuda_graph_stats() checks its argument", {
  expect_error(cuda_graph_stats("model"), class = "mirrored_value_error", regexp = "must be a model")
})

test_that("on a GPU, full batches replay the captured step and the last short one runs eagerly", {
  if (!cuda_is_available()) {
    if (identical(Sys.getenv("MIRRORED_TEST_CUDA"), "1")) fail("MIRRORED_TEST_CUDA=1 but no GPU")
    skip("needs a CUDA device")
  }
  d <- graph_data()  # 100 rows: batches of 32, 32, 32, 4
  set_random_seed(7)
  on <- graph_model(mirrored_strategy("/gpu:0"))
  w0 <- get_weights(on)
  fit(on, d$x, d$y, batch_size = 32, epochs = 2, shuffle = FALSE, verbose = 0)
  s <- cuda_graph_stats(on)
  expect_equal(s$captures, 1)
  expect_equal(s$replays, 4)     # epoch 1: steps 3; epoch 2: steps 1-3
  expect_equal(s$eager_steps, 3)  # the warm-up and the two short batches
  withr::local_options(mirrored.cuda_graphs = FALSE)
  off <- graph_model(mirrored_strategy("/gpu:0"))
  set_weights(off, w0)
  fit(off, d$x, d$y, batch_size = 32, epochs = 2, shuffle = FALSE, verbose = 0)
  expect_equal(cuda_graph_stats(off)$replays, 0)
  expect_identical(get_weights(on), get_weights(off))
})
