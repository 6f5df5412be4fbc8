# Mixed precision's R API (issue 14): dtype policies, layers' dtype,
# compile(auto_scale_loss), optimizer_loss_scale(), saving and loading.

# Runs `code` under the global policy `policy`, restoring the old one.
with_policy <- function(policy, code) {
  old <- config_dtype_policy()
  config_set_dtype_policy(policy)
  on.exit(config_set_dtype_policy(old))
  force(code)
}

policy_of <- function(layer) layer$config$dtype$config$name

test_that("the global policy is set, read and restored as Keras' is", {
  expect_identical(config_dtype_policy()$name, "float32")
  old <- config_dtype_policy()
  expect_null(config_set_dtype_policy("mixed_bfloat16"))
  p <- config_dtype_policy()
  expect_s3_class(p, "mirrored_dtype_policy")
  expect_identical(unclass(p), list(name = "mixed_bfloat16", compute_dtype = "bfloat16",
                                    variable_dtype = "float32"))
  expect_output(print(p), "mixed_bfloat16")
  config_set_dtype_policy("mixed_float16")
  expect_identical(config_dtype_policy()$compute_dtype, "float16")
  config_set_dtype_policy(old)  # a policy object is accepted
  expect_identical(config_dtype_policy()$name, "float32")
})

test_that("layers take the global policy when made, or their own dtype", {
  before <- layer_dense(units = 2)
  with_policy("mixed_bfloat16", {
    d <- layer_dense(units = 2)
    own <- layer_dense(units = 2, dtype = "float32")
    model <- keras_model_sequential(input_shape = 3)
  })
  expect_identical(policy_of(before), "float32")
  expect_identical(policy_of(d), "mixed_bfloat16")
  expect_identical(policy_of(own), "float32")
  expect_identical(model$dtype_policy, "mixed_bfloat16")
  expect_identical(policy_of(layer_conv_2d(filters = 2, kernel_size = 3, dtype = "mixed_float16")),
                   "mixed_float16")
  # A policy object works as a layer's dtype; Keras' serialized form is kept.
  p <- with_policy("mixed_float16", config_dtype_policy())
  expect_identical(layer_dense(units = 1, dtype = p)$config$dtype,
                   list(module = "keras", class_name = "DTypePolicy",
                        config = list(name = "mixed_float16"), registered_name = NULL))
})

test_that("bad policies are classed errors naming the function and argument", {
  e <- expect_error(config_set_dtype_policy("float8"), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "config_set_dtype_policy.*policy.*float8")
  e <- expect_error(config_set_dtype_policy("bfloat16"), class = "mirrored_not_yet_error")
  expect_match(conditionMessage(e), "bfloat16")
  expect_error(config_set_dtype_policy(c("float32", "mixed_float16")), class = "mirrored_value_error")
  expect_error(config_set_dtype_policy(NULL), class = "mirrored_value_error")
  e <- expect_error(layer_dense(units = 2, dtype = "mixed_float32"), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "layer_dense.*dtype.*mixed_float32")
  expect_error(layer_dense(units = 2, dtype = 16), class = "mirrored_value_error")
  expect_error(layer_dense(units = 2, dtype = "int8_from_float32"), class = "mirrored_not_yet_error")
  expect_identical(config_dtype_policy()$name, "float32")  # unchanged by the failures
})

test_that("compile(auto_scale_loss) wraps the optimizer of mixed_float16 models only", {
  f16 <- with_policy("mixed_float16", keras_model_sequential(input_shape = 3) |> layer_dense(units = 2))
  suppressMessages(compile(f16, optimizer = "adam", loss = "mse"))
  expect_s3_class(f16$optimizer, "mirrored_loss_scale_optimizer")
  expect_identical(f16$optimizer$name, "loss_scale_optimizer")
  expect_identical(f16$optimizer$inner_optimizer$class_name, "Adam")
  expect_identical(f16$optimizer$dynamic_scale, 32768)
  expect_identical(f16$optimizer$step_counter, 0)
  suppressMessages(compile(f16, optimizer = "adam", loss = "mse", auto_scale_loss = FALSE))
  expect_identical(f16$optimizer$class_name, "Adam")
  lso <- optimizer_loss_scale(optimizer_sgd(), initial_scale = 8)
  suppressMessages(compile(f16, optimizer = lso, loss = "mse"))
  expect_identical(f16$optimizer, lso)  # not wrapped twice
  bf16 <- with_policy("mixed_bfloat16", keras_model_sequential(input_shape = 3) |> layer_dense(units = 2))
  suppressMessages(compile(bf16, optimizer = "adam", loss = "mse"))
  expect_identical(bf16$optimizer$class_name, "Adam")
  expect_error(compile(bf16, optimizer = "adam", loss = "mse", auto_scale_loss = NA),
               class = "mirrored_value_error")
})

test_that("optimizer_loss_scale() checks its arguments and has Keras' get_config()", {
  opt <- optimizer_loss_scale(optimizer_adam(learning_rate = 0.01), initial_scale = 1024,
                              dynamic_growth_steps = 10)
  cfg <- get_config(opt)
  expect_identical(attr(cfg, "__class__"), "LossScaleOptimizer")
  expect_named(cfg, c("name", "inner_optimizer", "initial_scale", "dynamic_growth_steps"))
  expect_identical(cfg$name, "loss_scale_optimizer")
  expect_identical(cfg$initial_scale, 1024)
  expect_identical(cfg$dynamic_growth_steps, 10L)
  expect_identical(cfg$inner_optimizer$class_name, "Adam")
  expect_equal(cfg$inner_optimizer$config$learning_rate, 0.01, tolerance = 1e-7)
  expect_equal(opt$learning_rate, 0.01)
  opt$learning_rate <- 0.5  # forwarded to the inner optimizer, as in Keras
  expect_identical(opt$inner_optimizer$learning_rate, 0.5)
  expect_error(optimizer_loss_scale(optimizer_adam(), initial_scale = 0), class = "mirrored_value_error")
  expect_error(optimizer_loss_scale(optimizer_adam(), initial_scale = Inf), class = "mirrored_value_error")
  expect_error(optimizer_loss_scale(optimizer_adam(), dynamic_growth_steps = 0),
               class = "mirrored_value_error")
  expect_error(optimizer_loss_scale(optimizer_adam(), dynamic_growth_steps = 1.5),
               class = "mirrored_value_error")
  e <- expect_error(optimizer_loss_scale(optimizer_adam(), clipnorm = 1), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "clipnorm.*inner_optimizer")
  expect_silent(optimizer_loss_scale(optimizer_adam(), use_ema = FALSE, ema_momentum = 0.99))
  e <- expect_error(optimizer_loss_scale("adam"), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "inner_optimizer")
  expect_error(optimizer_loss_scale(opt), class = "mirrored_value_error")
  e <- expect_error(optimizer_loss_scale(optimizer_adam(), growth_steps = 2), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "growth_steps")
})

test_that("a short mixed_bfloat16 fit reaches the accuracy of float32", {
  d <- mnist_scaled()
  rows <- 1:600
  test <- 1:500
  run <- function(policy) {
    set_random_seed(7)
    model <- with_policy(policy, mlp(units = 64))
    model |> compile(optimizer = optimizer_adam(learning_rate = 3e-3),
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                     metrics = "accuracy")
    fit(model, d$x_train[rows, ], d$y_train[rows], epochs = 3, batch_size = 32, verbose = 0)
    list(model = model, acc = evaluate(model, d$x_test[test, ], d$y_test[test], verbose = 0)$accuracy)
  }
  note <- NULL
  expect_no_message(f32 <- run("float32"))
  bf16 <- withCallingHandlers(run("mixed_bfloat16"), mirrored_precision_note = function(m) {
    note <<- c(note, conditionMessage(m))
    invokeRestart("muffleMessage")
  })
  expect_gt(f32$acc, 0.8)
  expect_lt(abs(bf16$acc - f32$acc), 0.03)
  w32 <- get_weights(f32$model)[[1]]
  w16 <- get_weights(bf16$model)[[1]]
  if (is.null(note)) {
    # bf16 products round: the weights differ from float32's, but not by much.
    expect_false(identical(w32, w16))
    expect_lt(max(abs(w32 - w16)), 0.2)
  } else {
    # This CPU has no bf16 units: compile() said so once, and the model
    # computed in float32 (the same weights).
    expect_length(note, 1)
    expect_match(note, "mixed_bfloat16.*float32")
    expect_identical(w32, w16)
  }
})

# A mixed_float16 model with optimizer_loss_scale(1024, growth 3) trained 8
# steps of 8 rows, replica `rank` seeing an overflow at step 2.
loss_scale_run <- function(devices = "/cpu:0", rank = 0) {
  set_random_seed(1)
  x <- matrix(sin(seq_len(64 * 4)), 64)
  y <- matrix(cos(seq_len(64 * 2)), 64)
  strategy <- suppressMessages(mirrored_strategy(devices))
  with(strategy$scope(), {
    model <- with_policy("mixed_float16", {
      keras_model_sequential(input_shape = 4, layers = list(layer_dense(units = 8, activation = "relu"),
                                                            layer_dense(units = 2, dtype = "float32")))
    })
    suppressMessages(compile(model, optimizer = optimizer_loss_scale(optimizer_adam(), initial_scale = 1024,
                                                                     dynamic_growth_steps = 3), loss = "mse"))
  })
  mirrored:::inject_nonfinite_gradient(model, rank, 2)
  fit(model, x, y, epochs = 1, batch_size = 8, shuffle = FALSE, verbose = 0)
  list(model = model, x = x)
}

test_that("an overflow skips the step, halves the scale, and the scale grows back as Keras' does", {
  r <- loss_scale_run()
  # Keras' rule by hand: step 1 finite (counter 1); step 2 skipped (scale 512,
  # counter 0); steps 3-4 (counter 2); step 5 doubles (1024, 0); steps 6-7;
  # step 8 doubles (2048, 0). The skipped step does not count as an iteration.
  expect_identical(r$model$optimizer$dynamic_scale, 2048)
  expect_identical(r$model$optimizer$step_counter, 0)
  expect_identical(r$model$optimizer$iterations, 7)
  # Two replicas, the overflow on the second one only: both skip step 2.
  r2 <- loss_scale_run(c("/cpu:0", "/cpu:1"), rank = 1)
  expect_identical(r2$model$optimizer$dynamic_scale, 2048)
  expect_identical(r2$model$optimizer$iterations, 7)
  w0 <- mirrored:::replica_weights(r2$model, 0)
  expect_identical(w0, mirrored:::replica_weights(r2$model, 1))
  expect_equal(w0, mirrored:::replica_weights(r$model, 0), tolerance = 1e-5)
})

test_that("save and load keep the policies and the loss scale's state", {
  r <- loss_scale_run()
  model <- r$model
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cfg <- mirrored:::parse_json_bytes(readBin(file.path(dir, "config.json"), "raw", 1e6), "config.json")
  expect_identical(cfg$config$dtype$config$name, "mixed_float16")
  expect_identical(cfg$compile_config$optimizer$class_name, "LossScaleOptimizer")
  loaded <- suppressMessages(load_model(path))
  expect_identical(loaded$dtype_policy, "mixed_float16")
  expect_identical(vapply(loaded$layers, policy_of, ""), c("mixed_float16", "float32"))
  expect_s3_class(loaded$optimizer, "mirrored_loss_scale_optimizer")
  expect_identical(loaded$optimizer$initial_scale, 1024)
  expect_identical(loaded$optimizer$dynamic_growth_steps, 3L)
  expect_identical(loaded$optimizer$dynamic_scale, 2048)
  expect_identical(loaded$optimizer$step_counter, 0)
  expect_identical(loaded$optimizer$iterations, 7)
  expect_equal(predict(loaded, r$x, verbose = 0), predict(model, r$x, verbose = 0))
  # An auto-wrapped optimizer: the compile config records the one given.
  m2 <- with_policy("mixed_float16", keras_model_sequential(input_shape = 4) |> layer_dense(units = 2))
  suppressMessages(compile(m2, optimizer = "sgd", loss = "mse"))
  expect_identical(get_config(m2$optimizer)$inner_optimizer$class_name, "SGD")
  path2 <- tempfile(fileext = ".keras")
  save_model(m2, path2)
  dir2 <- tempfile()
  utils::unzip(path2, exdir = dir2)
  cfg2 <- mirrored:::parse_json_bytes(readBin(file.path(dir2, "config.json"), "raw", 1e6), "config.json")
  expect_identical(cfg2$compile_config$optimizer$class_name, "SGD")
  back <- suppressMessages(load_model(path2))
  expect_s3_class(back$optimizer, "mirrored_loss_scale_optimizer")
  expect_identical(back$optimizer$inner_optimizer$class_name, "SGD")
})

test_that("a mixed_float16 model saved by Keras 3 loads with its policies and predicts the same", {
  dir <- test_path("fixtures", "mixed")  # tools/make-keras-fixtures-mixed.py
  x <- as.matrix(utils::read.csv(file.path(dir, "x.csv"), header = FALSE))
  want <- as.matrix(utils::read.csv(file.path(dir, "keras_f16_pred.csv"), header = FALSE))
  state <- scan(file.path(dir, "keras_f16_state.txt"), quiet = TRUE)  # dynamic_scale, step_counter, iterations
  model <- suppressMessages(load_model(file.path(dir, "keras_f16.keras")))
  expect_identical(model$dtype_policy, "mixed_float16")
  expect_identical(vapply(model$layers, policy_of, ""), c("mixed_float16", "float32"))
  # compile_config holds Adam; auto_scale_loss wraps it again, as in Keras.
  expect_s3_class(model$optimizer, "mirrored_loss_scale_optimizer")
  expect_identical(model$optimizer$inner_optimizer$class_name, "Adam")
  # The optimizer's variables, read in Keras' layout for a LossScaleOptimizer.
  expect_identical(c(model$optimizer$dynamic_scale, model$optimizer$step_counter,
                     model$optimizer$iterations), state)
  got <- predict(model, x, verbose = 0)
  dimnames(want) <- NULL
  # Keras computed in float16: about 3 significant digits.
  expect_lt(max(abs(got - want)) / max(abs(want)), 1e-2)
})
