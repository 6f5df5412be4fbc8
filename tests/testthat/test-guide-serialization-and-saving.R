# keras3's guide "Save, serialize, and export models"
# (vignettes-src/serialization_and_saving.Rmd), its R chunks as written,
# with mirrored loaded instead of keras3. Files go to a temporary directory.
# The guide's `keras3:::py_func2(function(x) x^2, ...)` (a Python function
# made from R, internal to keras3) is the plain R function here.

test_that("Saving: save_model() and load_model() reconstruct the model identically", {
  withr::local_dir(withr::local_tempdir())
  get_model <- function() {
    # Create a simple model.
    inputs <- keras_input(shape(32))
    outputs <- inputs |> layer_dense(1)
    model <-  keras_model(inputs, outputs)
    model |> compile(optimizer = optimizer_adam(), loss = "mean_squared_error")
    model
  }

  model <- get_model()

  # Train the model.
  test_input <- random_uniform(c(128, 32))
  test_target <- random_uniform(c(128, 1))
  out <- capture.output(model |> fit(test_input, test_target))

  # Calling `save('my_model.keras')` creates a zip archive `my_model.keras`.
  model |> save_model("my_model.keras")

  # It can be used to reconstruct the model identically.
  reconstructed_model <- load_model("my_model.keras")

  # Let's check:
  expect_no_error(stopifnot(all.equal(
    model |> predict(test_input),
    reconstructed_model |> predict(test_input)
  )))
  # the optimizer state comes back too: one more epoch gives the same weights
  out <- capture.output({
    model |> fit(test_input, test_target, epochs = 1, shuffle = FALSE)
    reconstructed_model |> fit(test_input, test_target, epochs = 1, shuffle = FALSE)
  })
  expect_equal(get_weights(model), get_weights(reconstructed_model), tolerance = 1e-6)
})

test_that("Custom objects: a layer with a sublayer, serialize_keras_object() in get_config() and from_config()", {
  layer_custom <- Layer(
    "CustomLayer",
    initialize = function(sublayer, ...) {
      super$initialize(...)
      self$sublayer <- sublayer
    },
    call = function(x) {
      self$sublayer(x)
    },
    get_config = function() {
      base_config <- super$get_config()
      config <- list(
        sublayer = serialize_keras_object(self$sublayer)
      )
      c(base_config, config)
    },
    from_config = function(cls, config) {
      sublayer_config <- config$sublayer
      sublayer <- deserialize_keras_object(sublayer_config)
      cls(sublayer, !!!config)
    }
  )
  expect_true(is.function(layer_custom))

  # Used in a model, its config round-trips
  inputs <- keras_input(shape(4))
  outputs <- inputs |> layer_custom(layer_dense(units = 2))
  model <- keras_model(inputs, outputs)
  x <- matrix(runif(8), 2)
  expect_equal(dim(predict(model, x, verbose = 0)), c(2L, 2L))
  # the sub-layer's weights are the custom layer's, and it computes with them
  w <- get_weights(model)
  expect_equal(lengths(lapply(w, dim)), c(2L, 1L))
  expect_equal(predict(model, x, verbose = 0), x %*% w[[1]] + rep(w[[2]], each = 2), tolerance = 1e-6)
  new_model <- from_config(get_config(model),
                           custom_objects = list(CustomLayer = layer_custom))
  expect_equal(count_params(new_model), count_params(model))
})

# The guide's "Registering custom objects" chunk: the custom layer, the
# registered function, get_model() and train_model().
guide_registered_objects <- function() {
  # Clear all previously registered custom objects
  set_custom_objects(clear = TRUE)


  layer_custom <- Layer(
    "CustomLayer",
    initialize = function(self, factor) {
      super$initialize()
      self$factor = factor
    },

    call = function(self, x) {
      x * self$factor
    },

    get_config = function(self) {
      list(factor = self$factor)
    }
  )

  # Upon registration, you can optionally specify a package or a name.
  # If left blank, the package defaults to "Custom" and the name defaults to
  # the class name.
  layer_custom <- register_keras_serializable(layer_custom, package = "MyLayers")

  custom_fn <- function(x) x^2   # keras3:::py_func2(function(x) x^2, name = "custom_fn", convert = TRUE)

  custom_fn <-
    register_keras_serializable(custom_fn, name="custom_fn", package="my_package")


  # Create the model.
  get_model <- function() {
    inputs <- keras_input(shape(4))
    mid <- inputs |> layer_custom(0.5)
    outputs <- mid |> layer_dense(1, activation = custom_fn)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = "rmsprop", loss = "mean_squared_error")
    model
  }


  # Train the model.
  train_model <- function(model) {
    input <- random_uniform(c(4, 4))
    target <- random_uniform(c(4, 1))
    model |> fit(input, target, verbose = FALSE, epochs = 1)
    model
  }

  test_input <- random_uniform(c(4, 4))
  test_target <- random_uniform(c(4, 1))
  list(layer_custom = layer_custom, custom_fn = custom_fn, get_model = get_model,
       train_model = train_model, test_input = test_input)
}

test_that("Registering custom objects (preferred): load_model() needs no custom_objects", {
  withr::local_dir(withr::local_tempdir())
  withr::defer(set_custom_objects(clear = TRUE))
  c(layer_custom, custom_fn, get_model, train_model, test_input) %<-% guide_registered_objects()

  model <- get_model() |> train_model()
  model |> save_model("custom_model.keras", overwrite = TRUE)

  # Now, we can simply load without worrying about our custom objects.
  reconstructed_model <- load_model("custom_model.keras")

  # Let's check:
  expect_no_error(stopifnot(all.equal(
    model |> predict(test_input, verbose = FALSE),
    reconstructed_model |> predict(test_input, verbose = FALSE)
  )))
  expect_true(all(c("MyLayers>CustomLayer", "my_package>custom_fn") %in%
                    names(get_custom_objects())))
})

test_that("Passing custom objects to load_model()", {
  withr::local_dir(withr::local_tempdir())
  withr::defer(set_custom_objects(clear = TRUE))
  c(layer_custom, custom_fn, get_model, train_model, test_input) %<-% guide_registered_objects()

  model <- get_model() |> train_model()

  # Calling `save_model('my_model.keras')` creates a zip archive `my_model.keras`.
  model |> save_model("custom_model.keras", overwrite = TRUE)

  # Upon loading, pass a named list containing the custom objects used in the
  # `custom_objects` argument of `load_model()`.
  reconstructed_model <-  load_model(
   "custom_model.keras",
    custom_objects = list(CustomLayer = layer_custom,
                          custom_fn = custom_fn),
  )

  # Let's check:
  expect_no_error(stopifnot(all.equal(
    model |> predict(test_input, verbose = FALSE),
    reconstructed_model |> predict(test_input, verbose = FALSE)
  )))
})

test_that("Using a custom object scope", {
  withr::local_dir(withr::local_tempdir())
  withr::defer(set_custom_objects(clear = TRUE))
  c(layer_custom, custom_fn, get_model, train_model, test_input) %<-% guide_registered_objects()

  model <- get_model() |> train_model()
  model |> save_model("custom_model.keras", overwrite = TRUE)

  # Pass the custom objects dictionary to a custom object scope and place
  # the `keras.models.load_model()` call within the scope.
  custom_objects <- list(CustomLayer = layer_custom, custom_fn = custom_fn)

  with_custom_object_scope(custom_objects, {
    reconstructed_model <- load_model("custom_model.keras")
  })

  # Let's check:
  expect_no_error(stopifnot(all.equal(
    model |> predict(test_input, verbose = FALSE),
    reconstructed_model |> predict(test_input, verbose = FALSE)
  )))

  # In-memory model cloning
  new_model <- clone_model(model)
  expect_equal(length(get_weights(new_model)), length(get_weights(model)))
  expect_equal(sapply(new_model$layers, \(l) l$name), sapply(model$layers, \(l) l$name))
})

test_that("get_config() and from_config(): a layer, a Sequential model and a functional model", {
  layer <- layer_dense(, 3, activation="relu")
  layer_config <- get_config(layer)
  out <- capture.output(str(layer_config))
  expect_equal(layer_config$units, 3L)
  expect_equal(layer_config$activation, "relu")

  new_layer <- from_config(layer_config)
  expect_equal(get_config(new_layer)$units, 3L)

  model <- keras_model_sequential(input_shape = c(32)) |>
    layer_dense(1)
  config <- get_config(model)
  new_model <- from_config(config)
  expect_equal(count_params(new_model), 33)

  inputs <- keras_input(c(32))
  outputs <- inputs |> layer_dense(1)
  model <- keras_model(inputs, outputs)
  config <- get_config(model)
  new_model <- from_config(config)
  expect_equal(count_params(new_model), 33)
})

test_that("save_model_config() and load_model_config()", {
  withr::local_dir(withr::local_tempdir())
  model <- keras_model_sequential(input_shape = c(32)) |>
    layer_dense(1)
  save_model_config(model, "model_config.json")
  new_model <- load_model_config("model_config.json")
  expect_equal(count_params(new_model), 33)
  expect_true(jsonlite_like <- grepl("\"class_name\"", paste(readLines("model_config.json", warn = FALSE), collapse = "")))
  unlink("model_config.json")
})

test_that("Arbitrary object serialization and deserialization: a regularizer", {
  my_reg <- regularizer_l1(0.005)
  config <- serialize_keras_object(my_reg)
  out <- capture.output(str(config))
  expect_equal(config$class_name, "L1")
  expect_equal(config$config$l1, 0.005, tolerance = 1e-7)
  expect_true("module" %in% names(config))

  new_reg <- deserialize_keras_object(config)
  expect_output(print(new_reg))
  expect_equal(serialize_keras_object(new_reg), config)
})

test_that("APIs for in-memory weight transfer: layer to layer, functional to subclassed, with a stateless layer", {
  create_layer <- function() {
    layer <- layer_dense(, 64, activation = "relu", name = "dense_2")
    layer$build(shape(NA, 784))
    layer
  }

  layer_1 <- create_layer()
  layer_2 <- create_layer()

  # Copy weights from layer 1 to layer 2
  layer_2 |> set_weights(get_weights(layer_1))
  expect_equal(get_weights(layer_2), get_weights(layer_1))

  # Create a simple functional model
  inputs <- keras_input(shape=c(784), name="digits")
  outputs <- inputs |>
    layer_dense(64, activation = "relu", name = "dense_1") |>
    layer_dense(64, activation = "relu", name = "dense_2") |>
    layer_dense(10, name = "predictions")
  functional_model <- keras_model(inputs = inputs, outputs = outputs,
                                 name = "3_layer_mlp")

  # Define a subclassed model with the same architecture
  SubclassedModel <- new_model_class(
    "SubclassedModel",
    initialize = function(output_dim, name = NULL) {
      super$initialize(name = name)
      self$output_dim <- output_dim |> as.integer()
      self$dense_1 <- layer_dense(, 64, activation = "relu",
                                  name = "dense_1")
      self$dense_2 <- layer_dense(, 64, activation = "relu",
                                  name = "dense_2")
      self$dense_3 <- layer_dense(, self$output_dim,
                                  name = "predictions")
    },

    call = function(inputs) {
      inputs |>
        self$dense_1() |>
        self$dense_2() |>
        self$dense_3()
    },

    get_config = function(self) {
      list(output_dim = self$output_dim,
           name = self$name)
    }
  )


  subclassed_model <- SubclassedModel(10)
  # Call the subclassed model once to create the weights.
  subclassed_model(op_ones(c(1, 784))) |> invisible()

  # Copy weights from functional_model to subclassed_model.
  set_weights(subclassed_model, get_weights(functional_model))

  expect_no_error(stopifnot(all.equal(
    get_weights(functional_model),
    get_weights(subclassed_model)
  )))

  # The case of stateless layers
  input <- keras_input(shape = c(784), name = "digits")
  output <- input |>
    layer_dense(64, activation = "relu", name = "dense_1") |>
    layer_dense(64, activation = "relu", name = "dense_2") |>
    layer_dense(10, name = "predictions")
  functional_model <- keras_model(inputs, outputs,
                                  name = "3_layer_mlp")

  input <- keras_input(shape = c(784), name = "digits")
  output <- input |>
    layer_dense(64, activation = "relu", name = "dense_1") |>
    layer_dense(64, activation = "relu", name = "dense_2") |>
    # Add a dropout layer, which does not contain any weights.
    layer_dropout(0.5) |>
    layer_dense(10, name = "predictions")

  functional_model_with_dropout <-
    keras_model(input, output, name = "3_layer_mlp")

  set_weights(functional_model_with_dropout,
              get_weights(functional_model))
  x <- matrix(runif(2 * 784), 2)
  expect_equal(predict(functional_model_with_dropout, x, verbose = 0),
               predict(functional_model, x, verbose = 0), tolerance = 1e-6)
})

test_that("APIs for saving weights to disk: save_model_weights() and load_model_weights()", {
  withr::local_dir(withr::local_tempdir())
  sequential_model = keras_model_sequential(input_shape = c(784),
                                            input_name = "digits") |>
    layer_dense(64, activation = "relu", name = "dense_1") |>
    layer_dense(64, activation = "relu", name = "dense_2") |>
    layer_dense(10, name = "predictions")
  sequential_model |> save_model_weights("my_model.weights.h5")
  w <- get_weights(sequential_model)
  set_weights(sequential_model, lapply(w, \(a) a * 0))
  sequential_model |> load_model_weights("my_model.weights.h5")
  expect_equal(get_weights(sequential_model), w)
})

test_that("freeze_weights() of a nested layer keeps the order of the variables", {
  layer_nested_dense <- Layer(
    "NestedDenseLayer",
    initialize = function(units, name = NULL) {
      super$initialize(name = name)
      self$dense_1 <- layer_dense(, units, name = "dense_1")
      self$dense_2 <- layer_dense(, units, name = "dense_2")
    },
    call = function(inputs) {
      inputs |>
        self$dense_1() |>
        self$dense_2()
    }
  )


  nested_model <- keras_model_sequential(input_shape = c(784)) |>
    layer_nested_dense(10, "nested")

  expect_length(get_weights(nested_model), 4)
  (variable_names <- sapply(nested_model$weights, \(v) v$path))

  out <- capture.output(cat("\nChanging trainable status of one of the nested layers...\n"))
  freeze_weights(get_layer(nested_model, "nested")$dense_1)

  (variable_names_2 <- sapply(nested_model$weights, \(v) v$path))
  out <- capture.output(cat("variable ordering changed: ", any(variable_names != variable_names_2)))
  expect_length(variable_names, 4)
  expect_equal(variable_names_2, variable_names)
})

test_that("Transfer learning example: load weights, then build a Sequential model from the extracted layers", {
  withr::local_dir(withr::local_tempdir())
  create_functional_model <- function() {
    inputs <- keras_input(shape = c(784), name = "digits")
    outputs <- inputs |>
      layer_dense(64, activation = "relu", name = "dense_1") |>
      layer_dense(64, activation = "relu", name = "dense_2") |>
      layer_dense(10, name = "predictions")
    keras_model(inputs, outputs, name = "3_layer_mlp")
  }

  functional_model <- create_functional_model()
  functional_model |> save_model_weights("pretrained.weights.h5")

  # In a separate program:
  pretrained_model <- create_functional_model()
  pretrained_model |> load_model_weights("pretrained.weights.h5")
  expect_equal(get_weights(pretrained_model), get_weights(functional_model))

  # Create a new model by extracting layers from the original model:
  extracted_layers <- pretrained_model$layers |> head(-1)
  model <- keras_model_sequential(layers = extracted_layers) |>
    layer_dense(5, name = "dense_3")
  out <- capture.output(summary(model))
  expect_true(any(grepl("dense_3", out)))
  expect_equal(count_params(model), 784 * 64 + 64 + 64 * 64 + 64 + 64 * 5 + 5)
  expect_equal(get_weights(model)[1:4], get_weights(functional_model)[1:4])
})

# The appendix's registered MyDense layer ("MyLayers>KernelMult").
guide_my_dense <- function() {
  register_keras_serializable(
    package = "MyLayers", name = "KernelMult",
    object = Layer(
      "MyDense",
      initialize = function(units,
                            ...,
                            kernel_regularizer = NULL,
                            kernel_initializer = NULL,
                            nested_model = NULL) {
        super$initialize(...)
        self$hidden_units <- units
        self$kernel_regularizer <- kernel_regularizer
        self$kernel_initializer <- kernel_initializer
        self$nested_model <- nested_model
      },
      get_config = function() {
        config <- super$get_config()
        # Update the config with the custom layer's parameters
        config <- modifyList(config, list(
          units = self$hidden_units,
          kernel_regularizer = self$kernel_regularizer,
          kernel_initializer = self$kernel_initializer,
          nested_model = self$nested_model
        ))
        config
      },
      build = function(input_shape) {
        input_units <- tail(input_shape, 1)
        self$kernel <- self$add_weight(
          name = "kernel",
          shape = shape(input_units, self$hidden_units),
          regularizer = self$kernel_regularizer,
          initializer = self$kernel_initializer,
        )
      },
      call = function(inputs) {
        op_matmul(inputs, self$kernel)
      }
    )
  )
}

test_that("Appendix: defining the config methods (a registered MyDense, serialized and deserialized)", {
  withr::defer(set_custom_objects(clear = TRUE))
  layer_my_dense <- guide_my_dense()

  layer <- layer_my_dense(units = 16,
                          kernel_regularizer = "l1",
                          kernel_initializer = "ones")
  layer3 <- layer_my_dense(units = 64, nested_model = layer)

  config <- serialize_keras_object(layer3)
  out <- capture.output(str(config))
  expect_equal(config$registered_name, "MyLayers>KernelMult")
  expect_equal(config$class_name, "MyDense")

  new_layer <- deserialize_keras_object(config)
  expect_output(print(new_layer))
  expect_equal(new_layer$hidden_units, 64)
})

test_that("Appendix: a registered layer with from_config() deserializing its sublayers", {
  withr::defer(set_custom_objects(clear = TRUE))
  layer_my_dense <- guide_my_dense()
  layer <- layer_my_dense(units = 16,
                          kernel_regularizer = "l1",
                          kernel_initializer = "ones")

  layer_custom_model <- register_keras_serializable(
    package = "ComplexModels",
    object = Layer(
      "CustomModel",
      initialize = function(first_layer, second_layer = NULL, ...) {
        super$initialize(...)
        self$first_layer <- first_layer
        self$second_layer <- second_layer %||% layer_dense(, 8)
      },

      get_config = function() {
        config <- super$get_config()
        config <- modifyList(config, list(
          first_layer = self$first_layer,
          second_layer = self$second_layer
        ))
        config
      },

      from_config = function(config) {
        config$first_layer %<>% deserialize_keras_object()
        config$second_layer %<>% deserialize_keras_object()
        # note that the class is available in methods under the classname symbol,
        # (`CustomModel` for this class), and also under the symbol `__class__`.
        # `from_config()` also provides `cls` for the class; these are equivalent:
        # - CustomModel(!!!config)
        # - `__class__`(!!!config)
        # - cls(!!!config)
        cls(!!!config)
        # CustomModel(!!!config)
      },
      call = function(self, inputs) {
        inputs |>
          self$first_layer() |>
          self$second_layer()
      }
    )
  )

  # Let's make our first layer the custom layer from the previous example (MyDense)
  inputs <- keras_input(c(32))
  outputs <-  inputs |> layer_custom_model(first_layer=layer)
  model <- keras_model(inputs, outputs)

  config <- get_config(model)
  new_model <- from_config(config)
  expect_equal(count_params(new_model), count_params(model))
  expect_equal(count_params(model), 32 * 16 + 16 * 8 + 8)
})

test_that("Appendix: how custom objects are serialized (registered_name, module)", {
  withr::defer(set_custom_objects(clear = TRUE))
  layer_my_dense <- guide_my_dense()
  layer <- layer_my_dense(
    units = 16,
    kernel_regularizer = regularizer_l1_l2(l1 = 1e-5, l2 = 1e-4),
    kernel_initializer = "ones",
  )
  config <- serialize_keras_object(layer)
  out <- capture.output(str(config))
  expect_equal(config$registered_name, "MyLayers>KernelMult")
  expect_equal(config$class_name, "MyDense")
  expect_null(config$module)
  expect_equal(config$config$kernel_regularizer$class_name, "L1L2")
})
