# The losses against Keras 3 (fixtures written by
# tools/make-keras-fixtures-losses.py: a Dense layer trained by SGD for a few
# full-batch steps with each loss), the R references against the core's
# values, and the loss objects' R API.

fixture_dir <- function() test_path("fixtures", "losses")
read_fx <- function(name) as.matrix(utils::read.csv(file.path(fixture_dir(), paste0(name, ".csv")), header = FALSE))

# The R loss of each fixture case (tools/make-keras-fixtures-losses.py's
# CASES, in keras3's R spelling).
fixture_losses <- function() {
  list(
    huber = loss_huber(), huber_delta = loss_huber(delta = 0.5), mae = "mae",
    mape = loss_mean_absolute_percentage_error(), msle = "msle", log_cosh = loss_log_cosh(),
    kld = loss_kl_divergence(), poisson = "poisson", cosine_similarity = loss_cosine_similarity(),
    hinge = loss_hinge(), hinge_signed = "hinge", squared_hinge = loss_squared_hinge(),
    categorical_hinge = loss_categorical_hinge(),
    binary_focal = loss_binary_focal_crossentropy(),
    binary_focal_balanced = loss_binary_focal_crossentropy(apply_class_balancing = TRUE, alpha = 0.3,
                                                           gamma = 1.5, label_smoothing = 0.1),
    binary_focal_logits = loss_binary_focal_crossentropy(from_logits = TRUE, gamma = 3),
    categorical_focal = loss_categorical_focal_crossentropy(),
    categorical_focal_logits = loss_categorical_focal_crossentropy(from_logits = TRUE, alpha = 0.5, gamma = 1,
                                                                   label_smoothing = 0.1),
    bce_smoothing = loss_binary_crossentropy(label_smoothing = 0.2),
    bce_logits_smoothing = loss_binary_crossentropy(from_logits = TRUE, label_smoothing = 0.1),
    cce_smoothing = loss_categorical_crossentropy(label_smoothing = 0.1),
    cce_logits_smoothing = loss_categorical_crossentropy(from_logits = TRUE, label_smoothing = 0.2),
    sparse_ignore = loss_sparse_categorical_crossentropy(ignore_class = 2),
    sparse_ignore_void = loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1),
    mse_weighted = "mse",
    sparse_weighted = loss_sparse_categorical_crossentropy(from_logits = TRUE),
    huber_weighted = loss_huber(delta = 0.7),
    sparse_ignore_weighted = loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1)
  )
}

fixture_model <- function(case, loss) {
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(units = case$units, activation = case$activation)
  set_weights(model, list(read_fx(paste0(case$case, "_kernel0")), as.numeric(read_fx(paste0(case$case, "_bias0")))))
  compile(model, optimizer = optimizer_sgd(learning_rate = case$learning_rate), loss = loss)
  model
}

# fit() takes sample_weight once it is plumbed in (issue 13, fit's part).
fit_takes_sample_weight <- function() {
  model <- keras_model_sequential(input_shape = 1) |> layer_dense(1)
  compile(model, optimizer = "sgd", loss = "mse")
  ok <- tryCatch({
    fit(model, matrix(1:2), matrix(1:2), sample_weight = c(1, 1), epochs = 1, verbose = 0)
    TRUE
  }, mirrored_not_yet_error = function(e) FALSE, mirrored_value_error = function(e) FALSE)
  ok
}

test_that("every loss trains as in Keras 3 (loss per step and final weights, < 1e-5)", {
  cases <- utils::read.csv(file.path(fixture_dir(), "cases.csv"), stringsAsFactors = FALSE)
  losses <- fixture_losses()
  expect_setequal(names(losses), cases$case)
  x <- read_fx("x")
  weighted_ok <- fit_takes_sample_weight()
  tol <- function(want) 1e-5 * pmax(1, abs(want))
  checked <- 0
  for (i in seq_len(nrow(cases))) {
    case <- cases[i, ]
    if (case$weighted && !weighted_ok) next
    y <- read_fx(paste0(case$case, "_y"))
    model <- fixture_model(case, losses[[case$case]])
    args <- list(model, x, y, batch_size = nrow(x), epochs = case$steps, shuffle = FALSE, verbose = 0)
    if (case$weighted) args$sample_weight <- as.numeric(read_fx(paste0(case$case, "_sw")))
    h <- do.call(fit, args)
    want_loss <- as.numeric(read_fx(paste0(case$case, "_loss")))
    got_loss <- h$metrics$loss
    expect_true(all(abs(got_loss - want_loss) < tol(want_loss)),
                label = sprintf("%s: loss per step %s vs Keras %s", case$case,
                                paste(format(got_loss, digits = 9), collapse = " "),
                                paste(format(want_loss, digits = 9), collapse = " ")))
    w <- get_weights(model)
    want_k <- read_fx(paste0(case$case, "_kernel"))
    want_b <- as.numeric(read_fx(paste0(case$case, "_bias")))
    expect_true(max(abs(w[[1]] - want_k)) < 1e-5, label = sprintf("%s: kernel off by %g", case$case, max(abs(w[[1]] - want_k))))
    expect_true(max(abs(as.numeric(w[[2]]) - want_b)) < 1e-5,
                label = sprintf("%s: bias off by %g", case$case, max(abs(as.numeric(w[[2]]) - want_b))))
    checked <- checked + 1
  }
  expect_gte(checked, sum(!cases$weighted))
})

test_that("the R references compute the core's losses", {
  cases <- utils::read.csv(file.path(fixture_dir(), "cases.csv"), stringsAsFactors = FALSE)
  cases <- cases[!cases$weighted, ]
  losses <- fixture_losses()
  x <- read_fx("x")
  for (i in seq_len(nrow(cases))) {
    case <- cases[i, ]
    y <- read_fx(paste0(case$case, "_y"))
    model <- fixture_model(case, losses[[case$case]])
    core <- evaluate(model, x, y, batch_size = nrow(x), verbose = 0)[["loss"]]
    loss <- losses[[case$case]]
    if (is.character(loss)) loss <- mirrored:::as_loss(loss)
    ref <- loss(y, predict(model, x, verbose = 0))
    expect_equal(core, ref, tolerance = 1e-5, label = paste(case$case, "core"), expected.label = "R reference")
  }
})

test_that("loss objects are called as loss(y_true, y_pred, sample_weight) with Keras' reductions", {
  y_true <- rbind(c(0, 1), c(0, 0), c(1, 1))
  y_pred <- rbind(c(0.6, 0.4), c(0.4, 0.6), c(2, -1))
  per <- loss_huber(y_true, y_pred, reduction = "none")
  # Hand-computed: |e| = (0.6, 0.6), (0.4, 0.6), (1, 2).
  expect_equal(per, c(0.18, (0.08 + 0.18) / 2, (0.5 + 1.5) / 2))
  huber <- loss_huber()
  expect_equal(huber(y_true, y_pred), mean(per))
  w <- c(2, 0, 0.5)
  # sum_over_batch_size divides by the number of samples, not the weights' sum.
  expect_equal(huber(y_true, y_pred, sample_weight = w), sum(w * per) / 3)
  expect_equal(loss_huber(reduction = "sum")(y_true, y_pred, w), sum(w * per))
  expect_equal(loss_huber(reduction = "mean_with_sample_weight")(y_true, y_pred, w), sum(w * per) / sum(w))
  expect_equal(loss_huber(reduction = NULL)(y_true, y_pred, w), w * per)
  expect_equal(huber$delta, 1)
  expect_equal(huber$name, "huber_loss")
  expect_s3_class(huber, "mirrored_loss")
  expect_output(print(loss_binary_focal_crossentropy(gamma = 3)), "BinaryFocalCrossentropy.*gamma = 3")
  expect_error(huber(y_true, y_pred, sample_weight = c(1, 2)), class = "mirrored_value_error")
  expect_error(loss_huber(delta = -1), "delta", class = "mirrored_value_error")
  expect_error(loss_huber(deltaa = 2), "deltaa", class = "mirrored_value_error")
  expect_error(loss_poisson(reduction = "avg"), class = "mirrored_value_error")
  expect_error(loss_categorical_crossentropy(label_smoothing = 2), "label_smoothing", class = "mirrored_value_error")
})

test_that("ignore_class masks samples and averages over the others, as Keras does", {
  p <- rbind(c(0.7, 0.2, 0.1), c(0.1, 0.8, 0.1), c(0.3, 0.3, 0.4), c(0.2, 0.2, 0.6))
  y <- c(0, 255, 2, 255)
  got <- loss_sparse_categorical_crossentropy(y, p, ignore_class = 255)
  # Keras normalises the clipped probabilities (rows sum to 1 here).
  expect_equal(got, mean(-log(c(0.7, 0.4))), tolerance = 1e-7)
  expect_equal(loss_sparse_categorical_crossentropy(y, p, ignore_class = 255, reduction = "none"),
               c(-log(0.7), 0, -log(0.4), 0), tolerance = 1e-7)
  sce <- loss_sparse_categorical_crossentropy(ignore_class = 255)
  expect_equal(sce(y, p, sample_weight = c(1, 5, 3, 5)), (-log(0.7) - 3 * log(0.4)) / 2, tolerance = 1e-7)
  expect_equal(sce(c(255, 255), p[1:2, ]), 0)
  expect_error(loss_sparse_categorical_crossentropy(c(0, 3), p[1:2, ]), class = "mirrored_value_error")
})

test_that("hand-computed values of the new losses", {
  y_true <- rbind(c(0, 1), c(0, 0))
  y_pred <- rbind(c(0.6, 0.4), c(0.4, 0.6))
  n <- function(f, ...) f(y_true, y_pred, ..., reduction = "none")
  expect_equal(n(loss_mean_absolute_error), c(0.6, 0.5))
  expect_equal(n(loss_hinge), c((1.6 + 0.6) / 2, (1.4 + 1.6) / 2))  # 0/1 mapped to -1/1
  expect_equal(n(loss_squared_hinge), c((1.6^2 + 0.6^2) / 2, (1.4^2 + 1.6^2) / 2))
  expect_equal(n(loss_log_cosh), c(mean(log(cosh(c(0.6, 0.6)))), mean(log(cosh(c(0.4, 0.6))))))
  expect_equal(loss_categorical_hinge(rbind(c(0, 1)), rbind(c(0.6, 0.4))), 1.2)
  expect_equal(loss_poisson(rbind(c(1, 2)), rbind(c(0.5, 2)), reduction = "none"),
               mean(c(0.5 - log(0.5 + 1e-7), 2 - 2 * log(2 + 1e-7))))
  expect_equal(loss_kl_divergence(rbind(c(0.5, 0.5)), rbind(c(0.9, 0.1))),
               0.5 * log(0.5 / 0.9) + 0.5 * log(0.5 / 0.1))
  expect_equal(loss_cosine_similarity(rbind(c(0, 1), c(1, 1)), rbind(c(1, 0), c(2, 2)), reduction = "none"),
               c(0, -1))
  expect_equal(loss_mean_absolute_percentage_error(rbind(c(2, 4)), rbind(c(1, 5))), 100 * mean(c(0.5, 0.25)))
  # A prediction of 0 is raised to 1e-7 before the log.
  expect_equal(loss_mean_squared_logarithmic_error(rbind(c(1, 3)), rbind(c(0, 3))), (log(1 + 1e-7) - log(2))^2 / 2)
  # Focal factors: (1 - p_t)^gamma times the crossentropy (Keras' docstring values).
  bf <- loss_binary_focal_crossentropy(matrix(c(0, 1, 0, 0), 2, byrow = TRUE),
                                       matrix(c(0.6, 0.4, 0.4, 0.6), 2, byrow = TRUE), reduction = "none")
  expect_equal(bf, c(0.3298647, 0.2057984), tolerance = 1e-6)
  ls <- loss_binary_crossentropy(matrix(1), matrix(0.8), label_smoothing = 0.2)
  expect_equal(ls, -(0.9 * log(0.8) + 0.1 * log(0.2)))
  cs <- loss_categorical_crossentropy(rbind(c(1, 0, 0)), rbind(c(0.7, 0.2, 0.1)), label_smoothing = 0.3)
  expect_equal(cs, -sum(c(0.8, 0.1, 0.1) * log(c(0.7, 0.2, 0.1))))
})

test_that("every loss gives NaN for a NaN prediction, in R and in the core", {
  p <- rbind(c(0.2, NaN, 0.3), c(0.3, 0.3, 0.4))
  t <- rbind(c(0, 1, 0), c(1, 0, 0))
  for (f in list(loss_huber, loss_mean_absolute_error, loss_mean_absolute_percentage_error,
                 loss_mean_squared_logarithmic_error, loss_log_cosh, loss_kl_divergence, loss_poisson,
                 loss_cosine_similarity, loss_hinge, loss_squared_hinge, loss_categorical_hinge,
                 loss_binary_focal_crossentropy, loss_categorical_focal_crossentropy,
                 loss_binary_crossentropy, loss_categorical_crossentropy, loss_mean_squared_error)) {
    expect_true(is.nan(f(t, p)), label = f()$class_name)
  }
  expect_true(is.nan(loss_sparse_categorical_crossentropy(c(1, 0), p)))
  # In the core: weights whose products overflow make the softmax NaN; the
  # loss is NaN, not a clipped finite value.
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(2, activation = "softmax")
  set_weights(model, list(matrix(c(3e38, 0, 3e38, 0), 2), c(0, 0)))
  for (loss in list(loss_categorical_focal_crossentropy(), loss_categorical_crossentropy(), loss_kl_divergence(),
                    loss_binary_focal_crossentropy(), loss_mean_squared_logarithmic_error())) {
    compile(model, optimizer = "sgd", loss = loss)
    res <- evaluate(model, matrix(c(10, 10), 1), matrix(c(1, 0), 1), verbose = 0)
    expect_true(is.nan(res[["loss"]]), label = loss$class_name)
  }
})

test_that("compile() accepts Keras' loss names", {
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(2)
  for (nm in c("huber", "mae", "MAE", "mape", "msle", "kld", "kl_divergence", "log_cosh", "poisson",
               "cosine_similarity", "hinge", "squared_hinge", "categorical_hinge",
               "binary_focal_crossentropy", "categorical_focal_crossentropy", "bce")) {
    compile(model, optimizer = "sgd", loss = nm)
    expect_identical(model$loss$string, nm)
  }
  expect_error(compile(model, optimizer = "sgd", loss = "logcosh"), "logcosh", class = "mirrored_value_error")
})

test_that("sample_weight 2 with SGD equals the unweighted run at twice the learning rate", {
  skip_if_not(fit_takes_sample_weight(), "fit() has no sample_weight yet")
  x <- read_fx("x")
  y <- read_fx("huber_y")
  case <- list(case = "huber", units = 2, activation = "linear", learning_rate = 0.05)
  a <- fixture_model(case, loss_huber())
  fit(a, x, y, sample_weight = rep(2, nrow(x)), batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  case$learning_rate <- 0.1
  b <- fixture_model(case, loss_huber())
  fit(b, x, y, batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
  expect_equal(get_weights(a), get_weights(b), tolerance = 1e-6)
})

# The losses of tools/make-keras-fixtures-losses.py's KERAS_WRITTEN (and of
# check-keras-interop.py's R_LOSSES): class, and arguments as Keras' config.
written_losses <- list(
  list("Huber", list(name = "huber_loss")), list("mae", NULL),
  list("MeanAbsolutePercentageError", list(name = "mean_absolute_percentage_error")), list("msle", NULL),
  list("LogCosh", list(name = "log_cosh")), list("KLDivergence", list(name = "kl_divergence")),
  list("Poisson", list(name = "pois")), list("CosineSimilarity", list(name = "cosine_similarity")),
  list("Hinge", list(name = "hinge")), list("SquaredHinge", list(name = "squared_hinge")),
  list("CategoricalHinge", list(name = "categorical_hinge")),
  list("BinaryFocalCrossentropy", list(from_logits = TRUE, label_smoothing = 0.1, apply_class_balancing = TRUE,
                                       alpha = 0.3, gamma = 1.5)),
  list("CategoricalFocalCrossentropy", list(from_logits = FALSE, label_smoothing = 0.2, alpha = 0.4, gamma = 3)),
  list("BinaryCrossentropy", list(from_logits = FALSE, label_smoothing = 0.2)),
  list("CategoricalCrossentropy", list(from_logits = TRUE, label_smoothing = 0.1)),
  list("SparseCategoricalCrossentropy", list(from_logits = TRUE, ignore_class = -1L)))

expect_written_losses <- function(model) {
  losses <- lapply(model$compiled_outputs, function(o) o$loss)
  expect_length(losses, length(written_losses))
  for (k in seq_along(losses)) {
    want <- written_losses[[k]]
    l <- losses[[k]]
    if (is.null(want[[2]])) {
      expect_identical(l$string, want[[1]])
      next
    }
    expect_identical(l$class_name, want[[1]])
    for (a in names(want[[2]])) expect_equal(l[[a]], want[[2]][[a]], label = paste(want[[1]], a))
  }
}

test_that("Keras-written losses load with their arguments", {
  m <- load_model(file.path(fixture_dir(), "keras_losses.keras"))
  expect_written_losses(m)
  # Keras' Huber config has no delta: it loads as Keras reloads it (1).
  expect_equal(m$compiled_outputs[[1]]$loss$delta, 1)
})

test_that("every loss saves in Keras' layout and loads back", {
  losses <- list(loss_huber(delta = 0.5), "mae", loss_mean_absolute_percentage_error(), "msle", loss_log_cosh(),
                 loss_kl_divergence(), loss_poisson(name = "pois"), loss_cosine_similarity(), loss_hinge(),
                 loss_squared_hinge(), loss_categorical_hinge(),
                 loss_binary_focal_crossentropy(apply_class_balancing = TRUE, alpha = 0.3, gamma = 1.5,
                                                from_logits = TRUE, label_smoothing = 0.1),
                 loss_categorical_focal_crossentropy(alpha = 0.4, gamma = 3, label_smoothing = 0.2),
                 loss_binary_crossentropy(label_smoothing = 0.2),
                 loss_categorical_crossentropy(from_logits = TRUE, label_smoothing = 0.1),
                 loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1L))
  inp <- keras_input(shape = 3)
  m <- keras_model(inp, lapply(seq_along(losses), function(k) inp |> layer_dense(3, name = paste0("out", k))))
  compile(m, optimizer = "sgd", loss = losses)
  path <- tempfile(fileext = ".keras")
  save_model(m, path)
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cfg <- mirrored:::parse_json_bytes(readBin(file.path(dir, "config.json"), "raw", 1e7), "c")$compile_config$loss
  # Keras' serialize_keras_object() layout, get_config()'s key order.
  expect_equal(cfg[[12]], list(module = "keras.losses", class_name = "BinaryFocalCrossentropy",
                               config = list(name = "binary_focal_crossentropy", reduction = "sum_over_batch_size",
                                             from_logits = TRUE, label_smoothing = 0.1, axis = -1L,
                                             apply_class_balancing = TRUE, alpha = 0.3, gamma = 1.5),
                               registered_name = NULL))
  expect_equal(cfg[[16]]$config, list(name = "sparse_categorical_crossentropy", reduction = "sum_over_batch_size",
                                      from_logits = TRUE, ignore_class = -1L))
  expect_equal(cfg[[1]]$config, list(name = "huber_loss", reduction = "sum_over_batch_size", delta = 0.5))
  expect_equal(cfg[[2]], "mae")
  back <- load_model(path)
  expect_written_losses(back)
  expect_equal(back$compiled_outputs[[1]]$loss$delta, 0.5)
})

# ignore_class's divisor and hinge's label mapping are decided on the whole
# global batch (batches of 7 split 3 + 2 + 2 hold different numbers of
# ignored rows): 1, 2 and 3 replicas train to the same weights and log the
# same losses.
test_that("per-batch loss parameters give the same numbers on any replica count", {
  x <- read_fx("x")
  y_void <- read_fx("sparse_ignore_void_y")
  y_bin <- read_fx("hinge_y")
  run <- function(n, loss, y, units) {
    strategy <- suppressMessages(mirrored_strategy(paste0("/cpu:", seq_len(n) - 1)))
    with(strategy$scope(), {
      model <- keras_model_sequential(input_shape = 3) |> layer_dense(units)
      set_weights(model, list(matrix(seq(-0.5, 0.5, length.out = 3 * units), 3), rep(0.1, units)))
      compile(model, optimizer = optimizer_sgd(0.3), loss = loss)
    })
    h <- fit(model, x, y, batch_size = 7, epochs = 2, shuffle = FALSE, verbose = 0)
    list(w = get_weights(model), loss = h$metrics$loss)
  }
  for (case in list(list(loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1), y_void, 4),
                    list(loss_hinge(), y_bin, 2))) {
    one <- run(1, case[[1]], case[[2]], case[[3]])
    for (n in 2:3) {
      other <- run(n, case[[1]], case[[2]], case[[3]])
      expect_equal(other$loss, one$loss, tolerance = 1e-6)
      expect_equal(other$w, one$w, tolerance = 1e-6)
    }
  }
})
