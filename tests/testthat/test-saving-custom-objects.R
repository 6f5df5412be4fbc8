# keras3's custom-object registry and serialization helpers.

test_that("the registry, its scope and registered names work as keras3's", {
  old <- set_custom_objects(list(), clear = TRUE)
  on.exit(set_custom_objects(old, clear = TRUE))
  double_it <- function(x) 2 * x
  expect_identical(register_keras_serializable(double_it), double_it)
  expect_setequal(names(get_custom_objects()), c("Custom>double_it", "double_it"))
  expect_identical(get_registered_name(double_it), "Custom>double_it")
  expect_identical(get_registered_object("Custom>double_it"), double_it)
  expect_null(get_registered_object("nothing"))
  register_keras_serializable(identity, name = "ident", package = "mine")
  expect_identical(get_registered_object("mine>ident"), identity)
  expect_identical(with_custom_object_scope(list(tmp = sqrt), get_registered_object("tmp")), sqrt)
  expect_null(get_registered_object("tmp"))  # the scope ended
  prev <- set_custom_objects(list(a = sqrt), clear = TRUE)
  expect_true("Custom>double_it" %in% names(prev))
  expect_identical(names(get_custom_objects()), "a")
  expect_error(set_custom_objects(list(3)), class = "mirrored_value_error")
  expect_error(register_keras_serializable(identity, name = "a>b"), class = "mirrored_value_error")
})

test_that("a registered custom layer class is found when a model config is loaded", {
  old <- set_custom_objects(list(), clear = TRUE)
  on.exit(set_custom_objects(old, clear = TRUE))
  Twice <- Layer("Twice", call = function(inputs) inputs * 2)
  inp <- keras_input(3)
  model <- keras_model(inp, inp |> Twice() |> layer_dense(2))
  path <- tempfile(fileext = ".json")
  expect_invisible(save_model_config(model, path))
  register_keras_serializable(Twice)
  m2 <- load_model_config(path)
  expect_identical(vapply(m2$layers, function(l) l$name, ""), vapply(model$layers, function(l) l$name, ""))
  # Weights are fresh: copy them and the predictions agree.
  set_weights(m2, get_weights(model))
  x <- matrix(runif(6), 2)
  expect_equal(predict(m2, x, verbose = 0), predict(model, x, verbose = 0))
  # The JSON text, an existing file kept without overwrite, a non-model config.
  expect_match(save_model_config(model), "\"class_name\"")
  before <- readBin(path, "raw", file.size(path))
  expect_error(save_model_config(model, path), class = "mirrored_io_error")
  expect_identical(readBin(path, "raw", file.size(path)), before)
  bad <- tempfile(fileext = ".json")
  writeLines("{\"class_name\": \"Dense\", \"config\": {}}", bad)
  expect_error(load_model_config(bad), "not of a model", class = "mirrored_io_error")
  writeLines("not json", bad)
  expect_error(load_model_config(bad), class = "mirrored_error")
  expect_error(load_model_config(tempfile()), class = "mirrored_io_error")
})

test_that("a registered custom loss is found by load_model() without custom_objects", {
  old <- set_custom_objects(list(), clear = TRUE)
  on.exit(set_custom_objects(old, clear = TRUE))
  my_mae <- function(y_true, y_pred) op_mean(op_abs(y_true - y_pred), axis = -1)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = my_mae)
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  expect_error(load_model(path), "custom_objects", class = "mirrored_error")
  register_keras_serializable(my_mae)
  m2 <- load_model(path)
  x <- matrix(runif(4), 2)
  expect_equal(evaluate(m2, x, c(0, 1), verbose = 0), evaluate(model, x, c(0, 1), verbose = 0))
  # An argument's object comes before the registry's.
  expect_no_error(load_model(path, custom_objects = list(my_mae = my_mae)))
})

test_that("serialize_keras_object() and deserialize_keras_object() round-trip", {
  layer <- layer_dense(units = 3, activation = "relu", name = "d3")
  cfg <- serialize_keras_object(layer)
  expect_identical(cfg$class_name, "Dense")
  expect_identical(cfg$module, "keras.layers")
  l2 <- deserialize_keras_object(cfg)
  expect_identical(get_config(l2)$units, 3L)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  mc <- serialize_keras_object(model)
  expect_identical(mc$class_name, "Sequential")
  expect_s3_class(deserialize_keras_object(mc), "mirrored_model")
  oc <- serialize_keras_object(optimizer_adam(learning_rate = 0.01))
  expect_identical(oc$class_name, "Adam")
  expect_s3_class(deserialize_keras_object(oc), "mirrored_optimizer")
  # regularizers, constraints and initializers, as Keras writes them
  for (obj in list(regularizer_l1_l2(0.1, 0.2), regularizer_orthogonal(0.5, "columns"),
                   constraint_maxnorm(3, axis = 2), constraint_nonneg(),
                   initializer_random_normal(0.5, 2, seed = 7), initializer_zeros())) {
    k <- serialize_keras_object(obj)
    expect_true(k$module %in% c("keras.regularizers", "keras.constraints", "keras.initializers"))
    back <- deserialize_keras_object(k)
    expect_identical(class(back), class(obj))
    expect_equal(serialize_keras_object(back), k)
  }
  expect_equal(serialize_keras_object(constraint_maxnorm(3, axis = 2))$config$axis, 1L)  # Keras' 0-based axis
  expect_error(deserialize_keras_object(list(module = "keras.regularizers", class_name = "L3", config = list())),
               class = "mirrored_value_error", regexp = "L3")
  expect_error(serialize_keras_object(42), class = "mirrored_not_yet_error")
  expect_error(deserialize_keras_object(list(a = 1)), class = "mirrored_value_error")
  expect_error(deserialize_keras_object(cfg, bogus = 1), class = "mirrored_value_error")
})

test_that("a custom layer's get_config() holding what JSON cannot is a classed error naming the key", {
  layer_holds_fn <- Layer("HoldsFn",
    initialize = function(f = identity, ...) {
      super$initialize(...)
      self$f <- f
    },
    call = function(x) x,
    get_config = function() list(f = self$f))
  expect_error(layer_holds_fn(), class = "mirrored_value_error", regexp = "returns a function in")
})
