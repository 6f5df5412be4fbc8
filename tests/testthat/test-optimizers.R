# The optimizer side of training against Keras 3 fixtures
# (tools/make-keras-fixtures-optimizers.py): every optimizer (defaults and a
# non-default config), clipping, gradient accumulation, EMA and schedules,
# two epochs of four steps from fixed weights; < 1e-5 after all steps.

f32 <- function(x) vapply(x, mirrored:::as_float32, 0)

fixture_opt <- local({
  cache <- NULL
  function() {
    if (is.null(cache)) {
      path <- test_path("fixtures", "optimizers", "optimizers.json")
      cache <<- mirrored:::cpp_json_parse(paste(readLines(path, warn = FALSE), collapse = "\n"), path)
    }
    cache
  }
})

fixture_arrays <- function(flat, shapes) {
  Map(function(v, s) {
    v <- unlist(v)
    s <- unlist(s)
    if (length(s) == 2) matrix(v, s[[1]], s[[2]], byrow = TRUE) else array(v)
  }, flat, shapes)
}

opt_model <- function(fx, strategy = NULL) {
  make <- function() keras_model_sequential(input_shape = 3) |>
    layer_dense(4, activation = "tanh") |> layer_dense(2)
  model <- if (is.null(strategy)) make() else with(strategy$scope(), make())
  set_weights(model, fixture_arrays(fx$weights, fx$shapes))
  model
}

opt_data <- function(fx) {
  list(x = matrix(unlist(fx$x), ncol = 3, byrow = TRUE), y = matrix(unlist(fx$y), ncol = 2, byrow = TRUE))
}

expect_weights_close <- function(got, want_flat, tol = 1e-5, label = "") {
  for (k in seq_along(got)) {
    g <- got[[k]]
    g <- if (is.matrix(g)) as.numeric(t(g)) else as.numeric(g)
    expect_lt(max(abs(g - unlist(want_flat[[k]]))), tol, label = paste(label, "weight", k))
  }
}

train_case <- function(fx, r_call, strategy = NULL) {
  model <- opt_model(fx, strategy)
  compile(model, optimizer = eval(parse(text = r_call)), loss = "mse")
  d <- opt_data(fx)
  fit(model, d$x, d$y, batch_size = fx$batch_size, epochs = fx$epochs, shuffle = FALSE, verbose = 0)
  model
}

test_that("each optimizer, clipping, accumulation, EMA and schedule matches Keras 3 after 8 steps", {
  fx <- fixture_opt()
  expect_gte(length(fx$cases), 30)
  for (case in fx$cases) {
    model <- train_case(fx, case$r)
    expect_weights_close(get_weights(model), case$weights, label = case$name)
    expect_equal(model$optimizer$iterations, case$iterations, label = case$name)
  }
})

test_that("global_clipnorm gives the same weights on 1, 2 and 4 replicas (and Keras')", {
  fx <- fixture_opt()
  case <- Filter(function(c) c$name == "sgd_global_clipnorm", fx$cases)[[1]]
  ws <- lapply(list("/cpu:0", c("/cpu:0", "/cpu:1"), paste0("/cpu:", 0:3)), function(devices) {
    strategy <- suppressMessages(mirrored_strategy(devices = devices))
    get_weights(train_case(fx, case$r, strategy))
  })
  for (w in ws) expect_weights_close(w, case$weights, label = "global_clipnorm")
  for (k in seq_along(ws[[1]])) {
    expect_lt(max(abs(ws[[2]][[k]] - ws[[1]][[k]])), 1e-6)
    expect_lt(max(abs(ws[[3]][[k]] - ws[[1]][[k]])), 1e-6)
  }
})

test_that("gradient accumulation and clipnorm agree on 1 and 3 replicas", {
  fx <- fixture_opt()
  case <- Filter(function(c) c$name == "nadam_accumulation_clip", fx$cases)[[1]]
  strategy <- suppressMessages(mirrored_strategy(devices = paste0("/cpu:", 0:2)))
  expect_weights_close(get_weights(train_case(fx, case$r, strategy)), case$weights,
                       label = "accumulation on 3 replicas")
})

test_that("Keras-written optimizer state (schedule, EMA, accumulation, Nadam, Lamb) loads and trains on", {
  fx <- fixture_opt()
  d <- opt_data(fx)
  for (s in fx$saved) {
    model <- load_model(test_path("fixtures", "optimizers", paste0(s$name, ".keras")))
    fit(model, d$x, d$y, batch_size = fx$batch_size, epochs = 1, shuffle = FALSE, verbose = 0)
    expect_weights_close(get_weights(model), s$weights, label = s$name)
    expect_equal(model$optimizer$iterations, s$iterations, label = s$name)
  }
})

test_that("a saved model keeps its optimizer, schedule and slots and trains on identically", {
  fx <- fixture_opt()
  d <- opt_data(fx)
  calls <- c("optimizer_nadam(0.01, gradient_accumulation_steps = 2, use_ema = TRUE)",
             "optimizer_ftrl(0.1, l1_regularization_strength = 0.01)",
             "optimizer_lamb(learning_rate_schedule_cosine_decay(0.01, 5), clipvalue = 0.1)")
  for (r_call in calls) {
    a <- train_case(fx, r_call)
    path <- tempfile(fileext = ".keras")
    save_model(a, path)
    b <- load_model(path)
    expect_equal(b$optimizer$class_name, a$optimizer$class_name)
    expect_equal(b$optimizer$config$common, a$optimizer$config$common)
    fit(a, d$x, d$y, batch_size = 4, epochs = 1, shuffle = FALSE, verbose = 0)
    fit(b, d$x, d$y, batch_size = 4, epochs = 1, shuffle = FALSE, verbose = 0)
    for (k in seq_along(get_weights(a))) expect_identical(get_weights(b)[[k]], get_weights(a)[[k]], label = r_call)
  }
})

test_that("optimizer arguments are checked like Keras'", {
  expect_error(optimizer_sgd(clipnorm = 1, clipvalue = 1), class = "mirrored_value_error",
               regexp = "Only one of")
  expect_error(optimizer_adam(gradient_accumulation_steps = 1), class = "mirrored_value_error",
               regexp = "gradient_accumulation_steps")
  expect_error(optimizer_lion(ema_momentum = 2), class = "mirrored_value_error", regexp = "ema_momentum")
  expect_error(optimizer_adagrad(bogus = 1), class = "mirrored_value_error", regexp = "bogus")
  expect_error(optimizer_rmsprop(loss_scale_factor = 2), class = "mirrored_value_error",
               regexp = "loss_scale_factor")
  expect_error(optimizer_sgd(learning_rate = "a"), class = "mirrored_value_error", regexp = "learning_rate")
  opt <- optimizer_sgd(learning_rate_schedule_exponential_decay(0.1, 10, 0.5))
  expect_error(opt$learning_rate <- 0.2, class = "mirrored_value_error", regexp = "schedule")
  expect_equal(opt$learning_rate, f32(0.1))
})

test_that("callback_learning_rate_scheduler() passes 0-based epochs and the current rate", {
  fx <- fixture_opt()
  d <- opt_data(fx)
  seen <- list()
  model <- opt_model(fx)
  compile(model, optimizer = optimizer_sgd(0.1), loss = "mse")
  sched <- function(epoch, lr) {
    seen[[length(seen) + 1]] <<- c(epoch, lr)
    lr / 2
  }
  out <- capture.output(h <- fit(model, d$x, d$y, batch_size = 4, epochs = 3, shuffle = FALSE, verbose = 0,
                                 callbacks = list(callback_learning_rate_scheduler(sched, verbose = 1))))
  expect_equal(vapply(seen, `[`, 0, 1), c(0, 1, 2))
  expect_equal(vapply(seen, `[`, 0, 2), f32(c(0.1, 0.05, 0.025)), tolerance = 1e-7)
  expect_equal(h$metrics$learning_rate, f32(c(0.05, 0.025, 0.0125)), tolerance = 1e-7)
  # Keras hands the schedule float(float32 0.1) and prints what it returns.
  expect_true(any(grepl("Epoch 1: LearningRateScheduler setting learning rate to 0.05000000074505806.", out,
                        fixed = TRUE)))
  expect_error(callback_learning_rate_scheduler(1), class = "mirrored_value_error")
})

test_that("unknown optimizer arguments are errors", {
  expect_error(optimizer_adam(lr = 0.1), class = "mirrored_value_error", regexp = "lr")
  expect_error(optimizer_sgd(0.1, 0.9, FALSE, NULL, NULL, NULL, NULL, FALSE, 0.99, NULL, "sgd", 3),
               class = "mirrored_value_error", regexp = "unnamed")
})
