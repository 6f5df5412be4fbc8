# Metric() classes (R/metrics-custom-class.R; the core: state_metric in
# train/traced_objectives.cpp): eager use on arrays, and in compile(metrics
# =) the logged values against the same class run eagerly on the data
# (plain R), on 1 and 2 replicas; the errors of what is not supported.

# keras3's "Customizing what happens in fit()" / training guide metric:
# how many samples of a batch have their class right, summed over the epoch.
metric_categorical_true_positives <- Metric("CategoricalTruePositives",
  initialize = function(name = "categorical_true_positives", ...) {
    super$initialize(name = name, ...)
    self$true_positives <- self$add_variable(shape = shape(), name = "ctp", initializer = "zeros")
  },
  update_state = function(y_true, y_pred, sample_weight = NULL) {
    y_pred <- op_argmax(y_pred, axis = 2, zero_indexed = TRUE) |> op_reshape(c(-1, 1))
    values <- op_cast(y_true, "int32") == op_cast(y_pred, "int32")
    values <- op_cast(values, "float32")
    if (!is.null(sample_weight)) {
      values <- op_multiply(values, op_cast(sample_weight, "float32"))
    }
    self$true_positives$assign_add(op_sum(values))
  },
  result = function() self$true_positives,
  reset_state = function() self$true_positives$assign(0.0)
)

# A ratio of two variables: result() computes from both.
metric_mean_abs <- Metric("MeanAbs",
  initialize = function(name = "mean_abs", ...) {
    super$initialize(name = name, ...)
    self$total <- self$add_variable(shape = shape(), name = "total")
    self$count <- self$add_variable(shape = shape(), name = "count")
  },
  update_state = function(y_true, y_pred, sample_weight = NULL) {
    self$total$assign_add(op_sum(op_abs(y_true - y_pred)))
    self$count$assign_add(op_sum(op_ones_like(y_pred)))
  },
  result = function() self$total / self$count
)

# The mean over samples of the largest predicted probability.
metric_mean_max_prob <- Metric("MeanMaxProb",
  initialize = function(name = "mean_max_prob", ...) {
    super$initialize(name = name, ...)
    self$total <- self$add_variable(shape = shape(), name = "total")
    self$count <- self$add_variable(shape = shape(), name = "count")
  },
  update_state = function(y_true, y_pred, sample_weight = NULL) {
    top <- op_max(y_pred, axis = 2)
    self$total$assign_add(op_sum(top))
    self$count$assign_add(op_sum(op_ones_like(top)))
  },
  result = function() self$total / self$count
)

test_that("a Metric() instance works eagerly on arrays", {
  m <- metric_categorical_true_positives()
  expect_equal(m$name, "categorical_true_positives")
  expect_length(m$variables, 1)
  y_pred <- matrix(c(0.9, 0.1, 0.2, 0.8, 0.6, 0.4), 3, byrow = TRUE)
  # argmax of the rows: 0, 1, 0
  m$update_state(matrix(c(0, 1, 1), 3), y_pred)
  expect_equal(as.numeric(m$result()), 2)
  m$update_state(matrix(c(1, 0, 0), 3), y_pred)
  expect_equal(as.numeric(m$result()), 3)
  m$reset_state()
  expect_equal(as.numeric(m$result()), 0)
  r <- metric_mean_abs()
  r$update_state(c(1, 2, 3), c(1.5, 2, 2))
  expect_equal(as.numeric(r$result()), 0.5)
})

classifier_data <- function() {
  set.seed(11)
  x <- matrix(rnorm(40 * 4), 40, 4)
  y <- matrix(as.integer(x[, 1] + x[, 2] > 0), 40, 1)  # a column, as the guide's metric takes
  list(x = x, y = y)
}

# The epoch's true-positive count and mean absolute error computed in plain
# R from the model's predictions (no training: learning rate 0).
test_that("in compile(), a Metric class logs what plain R computes, on 1 and 2 replicas", {
  d <- classifier_data()
  run <- function(strategy) {
    build <- function() {
      inputs <- keras_input(shape = 4)
      m <- keras_model(inputs, layer_dense(inputs, 2, activation = "softmax"))
      m |> compile(optimizer = optimizer_sgd(learning_rate = 0), loss = "sparse_categorical_crossentropy",
                   metrics = list(metric_categorical_true_positives(), metric_mean_max_prob()))
      m
    }
    m <- if (is.null(strategy)) build() else with(strategy$scope(), build())
    h <- fit(m, d$x, d$y, batch_size = 16, epochs = 2, shuffle = FALSE, verbose = 0)
    p <- predict(m, d$x, verbose = 0)
    list(history = h, eval = evaluate(m, d$x, d$y, batch_size = 7, verbose = 0),
         tp = sum((max.col(p, ties.method = "first") - 1) == d$y), top = mean(apply(p, 1, max)))
  }
  for (r in list(run(NULL), suppressMessages(run(mirrored_strategy(devices = c("/cpu:0", "/cpu:1")))))) {
    expect_gt(r$tp, 0)
    expect_equal(r$history$metrics$categorical_true_positives, c(r$tp, r$tp))
    expect_equal(r$history$metrics$mean_max_prob, c(r$top, r$top), tolerance = 1e-6)
    expect_equal(r$eval[["categorical_true_positives"]], r$tp)
    expect_equal(r$eval[["mean_max_prob"]], r$top, tolerance = 1e-6)
  }
})

test_that("the class itself, uncalled, is accepted in metrics =", {
  d <- classifier_data()
  inputs <- keras_input(shape = 4)
  m <- keras_model(inputs, layer_dense(inputs, 2, activation = "softmax"))
  m |> compile(optimizer = "sgd", loss = "sparse_categorical_crossentropy",
               metrics = list(metric_categorical_true_positives))
  h <- fit(m, d$x, d$y, epochs = 1, verbose = 0)
  expect_named(h$metrics, c("categorical_true_positives", "loss"), ignore.order = TRUE)
})

test_that("a model compiled with a Metric class saves and loads with it from custom_objects", {
  withr::local_dir(withr::local_tempdir())
  d <- classifier_data()
  inputs <- keras_input(shape = 4)
  m <- keras_model(inputs, layer_dense(inputs, 2, activation = "softmax"))
  m |> compile(optimizer = "sgd", loss = "sparse_categorical_crossentropy",
               metrics = list(metric_mean_max_prob(name = "top")))
  save_model(m, "m.keras")
  expect_error(load_model("m.keras"), class = "mirrored_error", regexp = "custom_objects")
  back <- load_model("m.keras", custom_objects = list(MeanMaxProb = metric_mean_max_prob))
  want <- evaluate(m, d$x, d$y, verbose = 0)
  expect_equal(evaluate(back, d$x, d$y, verbose = 0)[["top"]], want[["top"]], tolerance = 1e-6)
})

test_that("what a traced update_state() or result() cannot do is a clear error", {
  inputs <- keras_input(shape = 4)
  model <- keras_model(inputs, layer_dense(inputs, 2, activation = "softmax"))
  reads <- Metric("Reads",
    initialize = function(...) {
      super$initialize(...)
      self$s <- self$add_variable(shape = shape())
    },
    update_state = function(y_true, y_pred, sample_weight = NULL) self$s$assign_add(self$s * 0 + op_sum(y_pred)),
    result = function() self$s)
  err <- expect_error(model |> compile(optimizer = "sgd", loss = "mse", metrics = list(reads())),
                      class = "mirrored_not_yet_error", regexp = "reads variable 'variable'")
  expect_match(conditionMessage(err), "self$s * 0", fixed = TRUE)  # the user's line
  assigns <- Metric("Assigns",
    initialize = function(...) {
      super$initialize(...)
      self$s <- self$add_variable(shape = shape(), name = "s")
    },
    update_state = function(y_true, y_pred, sample_weight = NULL) self$s$assign(op_sum(y_pred)),
    result = function() self$s)
  expect_error(model |> compile(optimizer = "sgd", loss = "mse", metrics = list(assigns())),
               class = "mirrored_not_yet_error", regexp = "s\\$assign\\(\\)")
  batched <- Metric("Batched",
    initialize = function(...) {
      super$initialize(...)
      self$s <- self$add_variable(shape = shape())
    },
    update_state = function(y_true, y_pred, sample_weight = NULL) self$s$assign_add(y_pred),
    result = function() self$s)
  expect_error(model |> compile(optimizer = "sgd", loss = "mse", metrics = list(batched())),
               class = "mirrored_shape_error", regexp = "reduce over the batch")
  vector_result <- Metric("VectorResult",
    initialize = function(...) {
      super$initialize(...)
      self$s <- self$add_variable(shape = shape(2))
    },
    update_state = function(y_true, y_pred, sample_weight = NULL) self$s$assign_add(op_sum(y_pred, axis = 1)),
    result = function() self$s)
  expect_error(model |> compile(optimizer = "sgd", loss = "mse", metrics = list(vector_result())),
               class = "mirrored_not_yet_error", regexp = "one number")
  expect_error(model |> compile(optimizer = "sgd", loss = "mse",
                                weighted_metrics = list(metric_mean_abs())),
               class = "mirrored_not_yet_error", regexp = "weighted_metrics")
  expect_error(Metric("X", inherit = metric_mean_abs), class = "mirrored_not_yet_error", regexp = "inherit")
})
