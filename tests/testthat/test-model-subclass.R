# Model() / new_model_class(): subclassed models with initialize() and call().

mlp_class <- function() {
  Model("TinyMLP",
    initialize = function(units = 4, ...) {
      super$initialize(...)
      self$hidden <- layer_dense(units = units, activation = "tanh")
      self$out <- layer_dense(units = 1)
    },
    call = function(inputs) inputs |> self$hidden() |> self$out()
  )
}

test_that("a subclassed model computes its call() with its layers' weights", {
  TinyMLP <- mlp_class()
  expect_s3_class(TinyMLP, "mirrored_custom_model_class")
  model <- TinyMLP(units = 3)
  x <- matrix(rnorm(8), 4, 2)
  p <- predict(model, x, verbose = 0)
  w <- get_weights(model)
  expect_equal(lapply(w, function(a) as.integer(dim(a))), list(c(2L, 3L), 3L, c(3L, 1L), 1L))
  h <- tanh(x %*% w[[1]] + rep(w[[2]], each = 4))
  expect_equal(p, h %*% w[[3]] + as.numeric(w[[4]]), tolerance = 1e-6)
  expect_equal(count_params(model), 2 * 3 + 3 + 3 + 1)
  out <- capture.output(summary(model))
  expect_true(any(grepl("TinyMLP", out)))
})

test_that("a subclassed model trains, saves and loads", {
  withr::local_dir(withr::local_tempdir())
  TinyMLP <- mlp_class()
  model <- TinyMLP()
  model |> compile(optimizer = optimizer_adam(0.01), loss = "mse")
  x <- matrix(runif(100), 50, 2)
  y <- x %*% c(1, -1)
  h <- fit(model, x, y, epochs = 5, verbose = 0)
  expect_lt(h$metrics$loss[5], h$metrics$loss[1])
  save_model(model, "sub.keras")
  back <- load_model("sub.keras")
  expect_equal(predict(back, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-6)
})

test_that("step methods are not supported and call() is required", {
  expect_error(Model("M", call = function(x) x, train_step = function(data) NULL),
               class = "mirrored_not_supported_error", regexp = "train_step")
  expect_error(new_model_class("M", initialize = function(...) NULL), class = "mirrored_value_error",
               regexp = "call")
})
