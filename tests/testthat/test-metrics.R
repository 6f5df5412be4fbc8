# Metrics against Keras 3 fixtures (tools/make-keras-fixtures-metrics.py):
# a Dense layer with known weights on fixed inputs, so that the predictions
# are known, evaluated with each metric in `metrics` (unweighted) and in
# `weighted_metrics` (with sample weights), on 1 and 2 replicas (the states
# are summed across replicas); and the logs of a short fit().

metrics_fixture <- function(name) {
  d <- utils::read.csv(test_path("fixtures", "metrics", paste0(name, ".csv")))
  get <- function(key) {
    s <- d[d$name == key, ]
    m <- matrix(0, max(s$row) + 1, max(s$col) + 1)
    m[cbind(s$row + 1, s$col + 1)] <- s$value
    if (key %in% c("x", "kernel", "y")) m else as.vector(m)
  }
  keys <- unique(d$name)
  stats::setNames(lapply(keys, get), keys)
}

rel_diff <- function(got, want) max(abs(got - want) / pmax(abs(want), 1e-3))

# The fixture's model: 3 -> dense(units, activation) with its weights.
metric_model <- function(f, activation, loss, metric, devices = "/cpu:0") {
  strategy <- suppressMessages(mirrored_strategy(devices = devices))
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 3) |>
      layer_dense(ncol(f$kernel), activation = activation)
  })
  model |> compile(optimizer = "sgd", loss = loss, metrics = list(metric), weighted_metrics = list(metric))
  set_weights(model, list(f$kernel, f$bias))
  model
}

# evaluate() logs the metric as `name` (unweighted) and `weighted_<name>`.
expect_metric_fixture <- function(case, activation, loss, metric, name) {
  f <- metrics_fixture(case)
  y <- if (ncol(f$y) == 1) as.vector(f$y) else f$y
  for (devices in list("/cpu:0", c("/cpu:0", "/cpu:1"))) {
    m <- metric_model(f, activation, loss, metric, devices)
    ev <- evaluate(m, f$x, y, sample_weight = f$sample_weight, batch_size = 8, verbose = 0)
    pick <- function(key) {
      if (length(f$value) == 1) return(ev[[key]])
      unlist(ev[paste0(key, "_", seq_along(f$value) - 1)])
    }
    info <- paste(case, "on", length(devices), "replica(s)")
    expect_length(pick(name), length(f$value))
    expect_lt(rel_diff(pick(name), f$value), 1e-5, label = paste(info, "unweighted"))
    expect_lt(rel_diff(pick(paste0("weighted_", name)), f$value_w), 1e-5, label = paste(info, "weighted"))
  }
}

test_that("AUC (ROC, PR, minoring from logits) matches Keras 3, weighted and not, on 1 and 2 replicas", {
  expect_metric_fixture("auc_roc", "sigmoid", "binary_crossentropy", metric_auc(), "auc")
  expect_metric_fixture("auc_pr", "sigmoid", "binary_crossentropy",
                        metric_auc(curve = "PR", num_thresholds = 50), "auc")
  expect_metric_fixture("auc_minoring_logits", NULL, loss_binary_crossentropy(from_logits = TRUE),
                        metric_auc(summation_method = "minoring", from_logits = TRUE), "auc")
})

test_that("precision and recall (threshold, class_id, top_k) match Keras 3", {
  expect_metric_fixture("precision", "sigmoid", "binary_crossentropy", metric_precision(), "precision")
  expect_metric_fixture("precision_class_id", "softmax", "categorical_crossentropy",
                        metric_precision(thresholds = 0.3, class_id = 1), "precision")
  expect_metric_fixture("recall_top_k", "softmax", "categorical_crossentropy", metric_recall(top_k = 2),
                        "recall")
})

test_that("F1 and F-beta scores (per class, macro, micro, weighted) match Keras 3", {
  expect_metric_fixture("f1_none", "softmax", "categorical_crossentropy", metric_f1_score(), "f1_score")
  expect_metric_fixture("f1_macro", "softmax", "categorical_crossentropy",
                        metric_f1_score(average = "macro", threshold = 0.3), "f1_score")
  expect_metric_fixture("f1_micro", "sigmoid", "binary_crossentropy",
                        metric_f1_score(average = "micro", threshold = 0.5), "f1_score")
  expect_metric_fixture("fbeta_weighted", "softmax", "categorical_crossentropy",
                        metric_fbeta_score(average = "weighted", beta = 2, threshold = 0.25), "fbeta_score")
})

test_that("mean IoU matches Keras 3 (weights truncated to integers, as its int64 counts)", {
  expect_metric_fixture("mean_iou", "softmax", "sparse_categorical_crossentropy",
                        metric_mean_iou(num_classes = 4, sparse_y_pred = FALSE), "mean_io_u")
})

test_that("top-k, regression and cross-entropy metrics match Keras 3", {
  expect_metric_fixture("top_k", "softmax", "categorical_crossentropy",
                        metric_top_k_categorical_accuracy(k = 2), "top_k_categorical_accuracy")
  expect_metric_fixture("sparse_top_k", "softmax", "sparse_categorical_crossentropy",
                        metric_sparse_top_k_categorical_accuracy(k = 3), "sparse_top_k_categorical_accuracy")
  expect_metric_fixture("mse", NULL, "mse", metric_mean_squared_error(), "mean_squared_error")
  expect_metric_fixture("rmse", NULL, "mse", metric_root_mean_squared_error(), "root_mean_squared_error")
  expect_metric_fixture("mape", NULL, "mse", metric_mean_absolute_percentage_error(),
                        "mean_absolute_percentage_error")
  expect_metric_fixture("bce", "sigmoid", "binary_crossentropy", metric_binary_crossentropy(label_smoothing = 0.1),
                        "binary_crossentropy")
  expect_metric_fixture("cce_logits", NULL, loss_categorical_crossentropy(from_logits = TRUE),
                        metric_categorical_crossentropy(from_logits = TRUE, label_smoothing = 0.2),
                        "categorical_crossentropy")
  expect_metric_fixture("scce", "softmax", "sparse_categorical_crossentropy",
                        metric_sparse_categorical_crossentropy(), "sparse_categorical_crossentropy")
})

test_that("fit() logs metrics and weighted_metrics under Keras 3's names and values", {
  f <- metrics_fixture("fit")
  for (devices in list("/cpu:0", c("/cpu:0", "/cpu:1"))) {
    strategy <- suppressMessages(mirrored_strategy(devices = devices))
    with(strategy$scope(), {
      model <- keras_model_sequential(input_shape = 3) |> layer_dense(1, activation = "sigmoid")
    })
    model |> compile(optimizer = optimizer_sgd(0.1), loss = "binary_crossentropy",
                     metrics = list("auc", metric_precision(), "mse"), weighted_metrics = list("auc", "mse"))
    set_weights(model, list(f$kernel, f$bias))
    h <- fit(model, f$x, as.vector(f$y), sample_weight = f$sample_weight, batch_size = 8, epochs = 2,
             shuffle = FALSE, verbose = 0)
    keys <- sub("^log_", "", grep("^log_", names(f), value = TRUE))
    expect_setequal(names(h$metrics), keys)
    for (k in keys) expect_lt(rel_diff(h$metrics[[k]], f[[paste0("log_", k)]]), 1e-5, label = k)
  }
})

test_that("metric strings resolve as in Keras 3 and log under the string", {
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(2, activation = "softmax")
  model |> compile(loss = "categorical_crossentropy",
                   metrics = list("auc", "precision", "recall", "mse", "mape", "root_mean_squared_error",
                                  "top_k_categorical_accuracy", "f1_score", "categorical_crossentropy"))
  x <- matrix(c(0.1, 0.5, -1, 2, 0.3, 0.7), 2)
  ev <- evaluate(model, x, diag(2), verbose = 0)
  expect_named(ev, c("loss", "auc", "precision", "recall", "mse", "mape", "root_mean_squared_error",
                     "top_k_categorical_accuracy", "f1_score_0", "f1_score_1", "categorical_crossentropy"))
  # Class names too, logged under the string.
  model |> compile(loss = "categorical_crossentropy", metrics = list("AUC", "RootMeanSquaredError"))
  ev2 <- evaluate(model, x, diag(2), verbose = 0)
  expect_named(ev2, c("loss", "AUC", "RootMeanSquaredError"))
  expect_equal(ev2$AUC, ev$auc)
  expect_equal(ev2$RootMeanSquaredError, ev$root_mean_squared_error)
  # Keras resolves neither "rmse" nor "mean_iou".
  expect_error(compile(model, loss = "mse", metrics = "rmse"), class = "mirrored_value_error")
})

test_that("duplicate metric names get Keras 3's suffixes; weighted ones its weighted_ prefix", {
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(1, activation = "sigmoid")
  model |> compile(loss = "binary_crossentropy", metrics = list(metric_auc(), metric_auc(curve = "PR")),
                   weighted_metrics = list("auc", "accuracy", metric_auc()))
  ev <- evaluate(model, matrix(1:6 / 6, 2), c(0, 1), verbose = 0)
  expect_named(ev, c("loss", "auc", "auc_1", "weighted_auc", "accuracy", "weighted_auc_1"))
})

test_that("bad metric arguments are classed errors naming the argument", {
  expect_error(metric_auc(curve = "XY"), "curve", class = "mirrored_value_error")
  expect_error(metric_auc(num_thresholds = 1), "num_thresholds", class = "mirrored_value_error")
  expect_error(metric_auc(multi_label = TRUE), class = "mirrored_not_yet_error")
  expect_error(metric_precision(thresholds = c(0.2, 0.5)), class = "mirrored_not_yet_error")
  expect_error(metric_f1_score(average = "mean"), "average", class = "mirrored_value_error")
  expect_error(metric_fbeta_score(beta = 0), "beta", class = "mirrored_value_error")
  expect_error(metric_mean_iou(), "num_classes", class = "mirrored_value_error")
  expect_error(metric_recall(tresholds = 0.5), "tresholds", class = "mirrored_value_error")
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(2)
  expect_error(compile(model, loss = "mse", metrics = list(metric_precision(class_id = 2))), "class_id",
               class = "mirrored_value_error")
  expect_error(compile(model, loss = "mse", metrics = "sparse_top_k_categorical_accuracy"), "targets",
               class = "mirrored_value_error")
})

test_that("per-sample values of the mean metrics computed in R", {
  expect_equal(metric_mean_squared_error(rbind(c(0, 1)), rbind(c(1, 1))), 0.5)
  expect_equal(metric_mean_absolute_percentage_error(c(2, 4), c(1, 5)), c(50, 25))
  expect_equal(metric_sparse_top_k_categorical_accuracy(c(2, 0), rbind(c(0.1, 0.5, 0.4), c(0.1, 0.5, 0.4)),
                                                        k = 2), c(1, 0))
  p <- rbind(c(0.2, 0.8))
  expect_equal(metric_binary_crossentropy(rbind(c(0, 1)), p), -log(0.8))
})

test_that("metrics and weighted_metrics are saved in compile_config as Keras 3 writes them and reload", {
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(4, activation = "softmax")
  model |> compile(loss = "categorical_crossentropy",
                   metrics = list("auc", metric_recall(top_k = 2), metric_mean_iou(num_classes = 4, sparse_y_true = FALSE,
                                                                                      sparse_y_pred = FALSE)),
                   weighted_metrics = list("auc", metric_fbeta_score(average = "macro", beta = 2)))
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  cc <- mirrored:::parse_json_bytes(mirrored:::read_keras_source(path)$members[["config.json"]],
                                    "config.json")$compile_config
  expect_equal(cc$metrics[[1]], "auc")
  expect_equal(cc$metrics[[2]]$class_name, "Recall")
  expect_equal(cc$metrics[[2]]$config$top_k, 2)
  expect_equal(cc$metrics[[3]]$config[c("num_classes", "sparse_y_true", "sparse_y_pred")],
               list(num_classes = 4, sparse_y_true = FALSE, sparse_y_pred = FALSE))
  expect_equal(cc$weighted_metrics[[1]], "auc")
  expect_equal(cc$weighted_metrics[[2]]$config[c("name", "average", "beta")],
               list(name = "fbeta_score", average = "macro", beta = 2))
  x <- matrix(runif(24), 8)
  y <- diag(4)[c(1:4, 1:4), ]
  back <- load_model(path)
  expect_equal(evaluate(back, x, y, verbose = 0), evaluate(model, x, y, verbose = 0), tolerance = 1e-6)
  expect_named(evaluate(back, x, y, verbose = 0),
               c("loss", "auc", "recall", "mean_io_u", "weighted_auc", "fbeta_score"))
})

test_that("true/false positives/negatives count elements as Keras 3 (plain R reference)", {
  set.seed(11)
  x <- matrix(runif(60), 20)
  y <- matrix(rbinom(40, 1, 0.5), 20)
  y[1, 1] <- 2  # a label other than 0 is true (Keras casts y_true to bool)
  w <- runif(20)
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(2, activation = "sigmoid")
  counts <- list(metric_true_positives(), metric_false_positives(thresholds = 0.3),
                 metric_true_negatives(name = "tn"), metric_false_negatives())
  model |> compile(loss = "binary_crossentropy", metrics = counts, weighted_metrics = list(
    metric_true_positives(name = "wtp"), metric_false_negatives(name = "wfn")))
  ev <- evaluate(model, x, y, sample_weight = w, batch_size = 7, verbose = 0)
  p <- predict(model, x, verbose = 0)
  lab <- y != 0
  expect_equal(ev$true_positives, sum(p > 0.5 & lab))
  expect_equal(ev$false_positives, sum(p > 0.3 & !lab))
  expect_equal(ev$tn, sum(p <= 0.5 & !lab))
  expect_equal(ev$false_negatives, sum(p <= 0.5 & lab))
  expect_equal(ev$wtp, sum(w * rowSums(p > 0.5 & lab)), tolerance = 1e-6)
  expect_equal(ev$wfn, sum(w * rowSums(p <= 0.5 & lab)), tolerance = 1e-6)
  # Keras' class names as strings, and the config Keras saves.
  model |> compile(loss = "binary_crossentropy", metrics = list("TruePositives"))
  expect_named(evaluate(model, x, y, verbose = 0), c("loss", "TruePositives"))
  expect_error(metric_true_positives(thresholds = c(0.2, 0.5)), class = "mirrored_not_yet_error")
  expect_error(metric_false_negatives(thresholds = 2), class = "mirrored_value_error")
})

test_that("metric_mean() and metric_sum() track weighted values as Keras' Mean and Sum", {
  m <- metric_mean(name = "loss")
  expect_identical(m$name, "loss")
  expect_equal(m$result(), 0)  # divide_no_nan before any value
  m$update_state(c(1, 2, 3))
  m$update_state(10, sample_weight = 2)
  expect_equal(m$result(), (1 + 2 + 3 + 20) / 5)
  # One weight per sample of a matrix: each row's mean, weighted.
  m$reset_state()
  m$update_state(matrix(c(1, 2, 3, 5), 2), sample_weight = c(1, 3))
  expect_equal(m$result(), (1 * mean(c(1, 3)) + 3 * mean(c(2, 5))) / 4)
  expect_identical(reset_state(m), m)
  expect_equal(m$result(), 0)
  s <- metric_sum()
  s$update_state(c(1, 2))
  s$update_state(c(4, 5), sample_weight = c(0.5, 2))
  expect_equal(s$result(), 3 + 2 + 10)
  expect_output(print(s), "Sum metric 'sum': 15")
  expect_error(m$update_state("a"), class = "mirrored_value_error")
  expect_error(m$update_state(1:3, sample_weight = 1:2), class = "mirrored_value_error")
  expect_error(metric_mean(3), class = "mirrored_value_error")
  expect_error(reset_state(1), class = "mirrored_not_yet_error")
})
