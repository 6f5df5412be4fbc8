# Losses and metrics on outputs of rank > 2 (sequences, images) against
# Keras 3 (fixtures written by tools/make-keras-fixtures-rank.py): a Dense
# layer on the last axis trained by SGD, compared step by step on 1 and 3
# replicas. Keras reduces each loss over the last axis and divides by the
# number of loss values (samples x positions); "temporal" sample weights
# weigh each position.

rank_dir <- function() test_path("fixtures", "rank")
read_rank <- function(name, header = FALSE) {
  utils::read.csv(file.path(rank_dir(), paste0(name, ".csv")), header = header, check.names = FALSE)
}
rank_matrix <- function(name) unname(as.matrix(read_rank(name)))

# The R spelling of each case's loss and metrics (the script's CASES).
rank_cases <- function() {
  list(
    seq_mse = list(loss = "mse", metrics = list("mae")),
    seq_huber = list(loss = loss_huber(delta = 0.6), metrics = list("mse", metric_root_mean_squared_error())),
    seq_sparse_temporal = list(loss = loss_sparse_categorical_crossentropy(),
                               metrics = list(metric_sparse_categorical_accuracy()),
                               weighted_metrics = list(metric_sparse_categorical_accuracy(name = "wacc"))),
    seq_sparse_ignore = list(loss = loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1)),
    pixel_cce = list(loss = loss_categorical_crossentropy(), metrics = list(metric_categorical_accuracy())),
    pixel_bce = list(loss = loss_binary_crossentropy(),
                     metrics = list(metric_binary_accuracy(), metric_precision(), metric_recall()))
  )
}

train_rank_case <- function(case, spec, devices = NULL) {
  shape <- as.integer(strsplit(case$shape, " ")[[1]])
  n <- case$rows
  x <- array_reshape(rank_matrix(paste0(case$case, "_x")), c(n, shape))
  lead <- shape[-length(shape)]
  y <- rank_matrix(paste0(case$case, "_y"))
  y <- if (ncol(y) == prod(lead)) array_reshape(y, c(n, lead)) else array_reshape(y, c(n, lead, case$units))
  sw <- switch(case$weights,
               none = NULL,
               sample = as.numeric(rank_matrix(paste0(case$case, "_sw"))),
               position = array_reshape(rank_matrix(paste0(case$case, "_sw")), c(n, lead)))
  build <- function() {
    input <- keras_input(shape)
    model <- keras_model(input, input |> layer_dense(case$units, activation = case$activation))
    set_weights(model, list(rank_matrix(paste0(case$case, "_kernel0")),
                            as.numeric(rank_matrix(paste0(case$case, "_bias0")))))
    compile(model, optimizer = optimizer_sgd(case$learning_rate), loss = spec$loss,
            metrics = spec$metrics, weighted_metrics = spec$weighted_metrics)
    model
  }
  model <- if (is.null(devices)) build() else with(suppressMessages(mirrored_strategy(devices))$scope(), build())
  h <- fit(model, x, y, sample_weight = sw, batch_size = n, epochs = case$steps, shuffle = FALSE, verbose = 0)
  list(model = model, history = h)
}

for (devices in list(NULL, c("/cpu:0", "/cpu:1", "/cpu:2"))) {
  replicas <- if (is.null(devices)) 1 else length(devices)
  test_that(sprintf("losses and metrics of sequence and per-pixel outputs train as in Keras 3 (%d replica%s, < 1e-5)",
                    replicas, if (replicas > 1) "s" else ""), {
    cases <- utils::read.csv(file.path(rank_dir(), "cases.csv"), stringsAsFactors = FALSE)
    specs <- rank_cases()
    expect_setequal(names(specs), cases$case)
    for (i in seq_len(nrow(cases))) {
      case <- cases[i, ]
      got <- train_rank_case(case, specs[[case$case]], devices)
      want <- read_rank(paste0(case$case, "_history"), header = TRUE)
      expect_setequal(names(got$history$metrics), names(want))
      for (key in names(want)) {
        w <- want[[key]]
        g <- got$history$metrics[[key]]
        expect_true(all(abs(g - w) < 1e-5 * pmax(1, abs(w))),
                    label = sprintf("%s %s per step: %s vs Keras %s", case$case, key,
                                    paste(format(g, digits = 9), collapse = " "),
                                    paste(format(w, digits = 9), collapse = " ")))
      }
      weights <- get_weights(got$model)
      expect_equal(unname(weights[[1]]), rank_matrix(paste0(case$case, "_kernel")), tolerance = 1e-5,
                   label = paste(case$case, "kernel"))
      expect_equal(as.numeric(weights[[2]]), as.numeric(rank_matrix(paste0(case$case, "_bias"))),
                   tolerance = 1e-5, label = paste(case$case, "bias"))
    }
  })
}

test_that("losses of sequence outputs equal plain R, with weights per sample or per step", {
  set.seed(3)
  x <- array(runif(8 * 5 * 3), c(8, 5, 3))
  y <- array(runif(8 * 5 * 2), c(8, 5, 2))
  input <- keras_input(c(5, 3))
  model <- keras_model(input, input |> layer_dense(2))
  compile(model, loss = "mse", optimizer = "sgd", metrics = "mae")
  p <- predict(model, x, verbose = 0)
  per_step <- apply((p - y)^2, c(1, 2), mean)  # Keras: the mean over the last axis
  r <- evaluate(model, x, y, verbose = 0)
  expect_equal(r$loss, mean(per_step), tolerance = 1e-6)
  expect_equal(r$mae, mean(abs(p - y)), tolerance = 1e-6)
  sw <- matrix(runif(40), 8, 5)
  expect_equal(evaluate(model, x, y, sample_weight = sw, verbose = 0)$loss, sum(per_step * sw) / 40, tolerance = 1e-6)
  v <- runif(8)
  expect_equal(evaluate(model, x, y, sample_weight = v, verbose = 0)$loss, sum(per_step * v) / 40, tolerance = 1e-6)
  # a dataset's per-sample weights are repeated over the steps as well
  ds <- tensor_slices_dataset(list(x, y, v)) |> dataset_batch(3)
  expect_equal(evaluate(model, ds, verbose = 0)$loss, sum(per_step * v) / 40, tolerance = 1e-6)
})

test_that("targets and weights of outputs of rank > 2 are checked", {
  input <- keras_input(c(5, 3))
  model <- keras_model(input, input |> layer_dense(4, activation = "softmax"))
  compile(model, loss = "sparse_categorical_crossentropy", optimizer = "sgd")
  x <- array(runif(6 * 15), c(6, 5, 3))
  expect_error(fit(model, x, matrix(0, 6, 4), verbose = 0), class = "mirrored_shape_error",
               regexp = "one class index per position")
  expect_error(fit(model, x, matrix(7, 6, 5), verbose = 0), class = "mirrored_value_error", regexp = "0..3")
  y <- matrix(1, 6, 5)
  expect_error(fit(model, x, y, sample_weight = matrix(1, 6, 4), verbose = 0), class = "mirrored_shape_error",
               regexp = "n x 5")
  expect_error(fit(model, x, y, sample_weight = matrix(NaN, 6, 5), verbose = 0), class = "mirrored_value_error",
               regexp = "finite")
  expect_error(fit(model, x, y, class_weight = list("0" = 1, "1" = 2), verbose = 0), class = "mirrored_value_error",
               regexp = "rank > 2")
})
