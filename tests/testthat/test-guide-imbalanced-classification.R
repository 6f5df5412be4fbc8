# keras3's example "Imbalanced classification: credit card fraud detection"
# (vignettes-src/examples/structured_data/imbalanced_classification.Rmd), its
# R chunks as written, with mirrored loaded instead of keras3.
# No network and no Kaggle: creditcard.csv is replaced by a generated CSV with
# the same columns (Time, V1..V28, Amount, Class; about 2% frauds, which
# differ from the legitimate rows in a few V columns), 2,500 rows instead of
# 284,807, and 5 epochs instead of 30.

write_creditcard_like <- function(path, n = 2500, seed = 42) {
  set.seed(seed)
  cls <- rbinom(n, 1, 0.02)
  cls[1:10] <- 1L
  v <- matrix(rnorm(n * 28), n, 28, dimnames = list(NULL, paste0("V", 1:28)))
  v[cls == 1, c(3, 10, 12, 14, 17)] <- v[cls == 1, c(3, 10, 12, 14, 17)] - 3
  df <- data.frame(Time = sort(runif(n, 0, 172792)), v,
                   Amount = round(rexp(n, 1 / 88), 2), Class = as.integer(cls))
  readr::write_csv(df, path)
  path
}

# The guide's chunks from "First, load the data" to "Normalize the data";
# returns the chunk's variables.
guide_fraud_data <- function() {
  # library(readr) in the guide: attaching readr would mask testthat's
  # local_edition() for later test files, so its functions are namespaced.
  df <- readr::read_csv("creditcard.csv", col_types = readr::cols(
    Class = readr::col_integer(),
    .default = readr::col_double()
  ))
  glimpse_out <- capture.output(tibble::glimpse(df))

  val_idx <- nrow(df) %>% sample.int(., round( . * 0.2))
  val_df <- df[val_idx, ]
  train_df <- df[-val_idx, ]

  samples_out <- capture.output({
    cat("Number of training samples:", nrow(train_df), "\n")
    cat("Number of validation samples:", nrow(val_df), "\n")
  })

  counts <- table(train_df$Class)
  counts_out <- capture.output({
    print(counts)
    cat(sprintf("Number of positive samples in training data: %i (%.2f%% of total)",
                counts["1"], 100 * counts["1"] / sum(counts)))
  })

  weight_for_0 = 1 / counts["0"]
  weight_for_1 = 1 / counts["1"]

  feature_names <- colnames(train_df) %>% setdiff("Class")

  train_features <- as.matrix(train_df[feature_names])
  train_targets <- as.matrix(train_df$Class)

  val_features <- as.matrix(val_df[feature_names])
  val_targets <- as.matrix(val_df$Class)

  train_features %<>% scale()
  val_features %<>% scale(center = attr(train_features, "scaled:center"),
                          scale = attr(train_features, "scaled:scale"))
  as.list(environment())
}

test_that("Load the data, prepare a validation set, analyze the class imbalance, normalize", {
  withr::local_dir(withr::local_tempdir())
  write_creditcard_like("creditcard.csv")
  set.seed(1)
  d <- guide_fraud_data()

  expect_match(d$glimpse_out[1], "Rows: 2,500")
  expect_match(d$glimpse_out[2], "Columns: 31")
  expect_true(any(grepl("^\\$ Class +<int>", d$glimpse_out)))
  expect_equal(d$samples_out, c("Number of training samples: 2000 ",
                                "Number of validation samples: 500 "))
  expect_match(d$counts_out[length(d$counts_out)],
               "^Number of positive samples in training data: [0-9]+ \\([0-9.]+% of total\\)$")
  expect_equal(unname(d$weight_for_1), 1 / sum(d$train_df$Class == 1))
  expect_length(d$feature_names, 30)
  expect_equal(dim(d$train_features), c(2000L, 30L))
  expect_equal(unname(colMeans(d$train_features)), rep(0, 30), tolerance = 1e-8)
  expect_equal(dim(d$val_targets), c(500L, 1L))
})

test_that("Build a binary classification model and train it with class_weight; count frauds caught", {
  withr::local_dir(withr::local_tempdir())
  write_creditcard_like("creditcard.csv")
  set.seed(1)
  d <- guide_fraud_data()
  list2env(d, environment())

  model <-
    keras_model_sequential(input_shape = ncol(train_features)) |>
    layer_dense(256, activation = "relu") |>
    layer_dense(256, activation = "relu") |>
    layer_dropout(0.3) |>
    layer_dense(256, activation = "relu") |>
    layer_dropout(0.3) |>
    layer_dense(1, activation = "sigmoid")

  out <- capture.output(print(model))
  expect_true(any(grepl("Total params: 139,777", out, fixed = TRUE)))
  expect_equal(count_params(model), 30*256+256 + 2*(256*256+256) + 257)

  metrics <- list(
    metric_false_negatives(name = "fn"),
    metric_false_positives(name = "fp"),
    metric_true_negatives(name = "tn"),
    metric_true_positives(name = "tp"),
    metric_precision(name = "precision"),
    metric_recall(name = "recall")
  )
  model |> compile(
    optimizer = optimizer_adam(1e-2),
    loss = "binary_crossentropy",
    metrics = metrics
  )
  callbacks <- list(
    callback_model_checkpoint("fraud_model_at_epoch_{epoch}.keras")
  )

  class_weight <- list("0" = weight_for_0,
                       "1" = weight_for_1)

  out <- capture.output(history <- model |> fit(
    train_features, train_targets,
    validation_data = list(val_features, val_targets),
    class_weight = class_weight,
    batch_size = 2048,
    epochs = 5,    # 30 in the guide
    callbacks = callbacks,
    verbose = 2
  ))
  expect_equal(sum(grepl("^Epoch [1-5]/5$", out)), 5)
  expect_true(any(grepl("loss: .* fn: .* fp: .* tn: .* tp: .* precision: .* recall: .* val_loss:", out)))
  expect_true(all(c("loss", "fn", "fp", "tn", "tp", "precision", "recall",
                    "val_loss", "val_fn", "val_fp", "val_tn", "val_tp",
                    "val_precision", "val_recall") %in% names(history$metrics)))
  expect_true(all(file.exists(sprintf("fraud_model_at_epoch_%d.keras", 1:5))))
  expect_lt(history$metrics$loss[5], history$metrics$loss[1])
  # every training row is counted once per epoch
  m <- history$metrics
  expect_equal(m$fn + m$fp + m$tn + m$tp, rep(nrow(train_features), 5))
  expect_equal(m$val_fn + m$val_tp, rep(sum(val_df$Class == 1), 5))

  val_pred <- model %>%
    predict(val_features) %>%
    { as.integer(. > 0.5) }

  pred_correct <- val_df$Class == val_pred
  out <- capture.output(cat(sprintf("Validation accuracy: %.2f", mean(pred_correct))))
  expect_match(out, "^Validation accuracy: [01]\\.[0-9]{2}$")

  fraudulent <- val_df$Class == 1

  n_fraudulent_detected <- sum(fraudulent & pred_correct)
  n_fraudulent_missed <- sum(fraudulent & !pred_correct)
  n_legitimate_flagged <- sum(!fraudulent & !pred_correct)

  # The last epoch's validation counts are those of predict() at 0.5
  expect_equal(n_fraudulent_detected, m$val_tp[5])
  expect_equal(n_fraudulent_missed, m$val_fn[5])
  expect_equal(n_legitimate_flagged, m$val_fp[5])
  # class weights make the model find most of the (separable) frauds
  expect_gt(n_fraudulent_detected, n_fraudulent_missed)
})
