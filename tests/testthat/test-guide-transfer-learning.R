# keras3's guide "Transfer learning & fine-tuning"
# (vignettes-src/transfer_learning.Rmd), its R chunks as written, with
# mirrored loaded instead of keras3.
# No network and no Python: application_xception() (ImageNet weights) and
# TFDS's cats_vs_dogs are not available, so after asserting that the missing
# pieces raise mirrored_not_yet_error, the end-to-end sections run with a
# small convolutional base (with BatchNormalization, as Xception) and
# generated 150x150x3 "images" of two classes.

test_that("Freezing layers: the trainable attribute and the weights of Dense and BatchNormalization", {
  layer <- layer_dense(units = 3)
  layer$build(shape(NULL, 4))  # Create the weights

  expect_equal(length(layer$weights), 2)
  expect_equal(length(layer$trainable_weights), 2)
  expect_equal(length(layer$non_trainable_weights), 0)

  layer <- layer_batch_normalization()
  layer$build(shape(NA, 4))  # Create the weights

  expect_equal(length(layer$weights), 4)
  expect_equal(length(layer$trainable_weights), 2)
  expect_equal(length(layer$non_trainable_weights), 2)

  layer <- layer_dense(units = 3)
  layer$build(shape(NULL, 4))  # Create the weights
  layer$trainable <- FALSE  # Freeze the layer

  expect_equal(length(layer$weights), 2)
  expect_equal(length(layer$trainable_weights), 0)
  expect_equal(length(layer$non_trainable_weights), 2)
})

test_that("Freezing layers: a frozen layer's weights do not change in fit()", {
  # Make a model with 2 layers
  layer1 <- layer_dense(units = 3, activation = "relu")
  layer2 <- layer_dense(units = 3, activation = "sigmoid")
  model <- keras_model_sequential(input_shape = 3) |>
    layer1() |>
    layer2()

  # Freeze the first layer
  layer1$trainable <- FALSE

  # Keep a copy of the weights of layer1 for later reference
  # (get_weights() returns a list of R arrays,
  #  layer$weights returns a list of KerasVariables)
  initial_layer1_weights_values <- get_weights(layer1)
  initial_layer2_weights_values <- get_weights(layer2)

  # Train the model
  model |> compile(optimizer = "adam", loss = "mse")
  out <- capture.output(
    model |> fit(random_normal(c(2, 3)), random_normal(c(2, 3)), epochs = 1))

  # Check that the weights of layer1 have not changed during training
  final_layer1_weights_values <- get_weights(layer1)

  expect_true(isTRUE(all.equal(initial_layer1_weights_values,
                               final_layer1_weights_values)))
  expect_false(isTRUE(all.equal(initial_layer2_weights_values, get_weights(layer2))))
})

test_that("Recursive setting of the trainable attribute", {
  inner_model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(units = 3, activation = "relu") |>
    layer_dense(units = 3, activation = "relu")

  model <- keras_model_sequential(input_shape = 3) |>
    inner_model() |>
    layer_dense(units = 3, activation = "sigmoid")

  model$trainable <- FALSE  # Freeze the outer model

  expect_false(inner_model$trainable)  # All layers in `model` are now frozen
  expect_false(inner_model$layers[[1]]$trainable)  # `trainable` is propagated recursively
  expect_length(model$trainable_weights, 0)
  expect_length(model$non_trainable_weights, 6)
})

# A stand-in for Xception without its top: convolutions with batch
# normalization, 150x150x3 in, a 4-D feature map out.
small_base_model <- function() {
  inputs <- keras_input(c(150, 150, 3))
  outputs <- inputs |>
    layer_conv_2d(8, 3, strides = 3) |>
    layer_batch_normalization() |>
    layer_activation_relu() |>
    layer_conv_2d(16, 3, strides = 2) |>
    layer_batch_normalization() |>
    layer_activation_relu()
  keras_model(inputs, outputs, name = "base")
}

test_that("The typical transfer-learning workflow: base model (application_xception), frozen, called with training = FALSE", {
  # not yet in mirrored: application_xception()
  expect_error(
    base_model <- application_xception(
      weights = 'imagenet', # Load weights pre-trained on ImageNet.
      input_shape = c(150, 150, 3),
      include_top = FALSE  # Do not include the ImageNet classifier at the top.
    ), class = "mirrored_not_yet_error")
  base_model <- small_base_model()

  base_model$trainable <- FALSE

  inputs <- keras_input(shape = c(150, 150, 3))
  # We make sure that the base_model is running in inference mode here,
  # by passing `training <- FALSE`. This is important for fine-tuning, as you will
  # learn in a few paragraphs.
  outputs <- inputs |>
    base_model(training = FALSE) |>
    # Convert features of shape `base_model$output_shape[-1]` to vectors
    layer_global_average_pooling_2d() |>
    # A Dense classifier with a single unit (binary classification)
    layer_dense(1)

  model <- keras_model(inputs, outputs)
  expect_equal(guide_dims(shape(outputs)), c(NA, 1L))
  expect_length(model$trainable_weights, 2)
})

# Two classes of 150x150x3 images, grey levels 0..255: class 1 brighter
# in the left half.
make_images <- function(n, seed) {
  set.seed(seed)
  y <- rep(0:1, length.out = n)
  x <- array(runif(n * 150 * 150 * 3, 0, 200), c(n, 150, 150, 3))
  x[y == 1, , 1:75, ] <- x[y == 1, , 1:75, ] + 55
  list(x, y)
}

test_that("Getting the data (TFDS), resizing and augmentation layers are not yet available", {
  # The guide loads cats_vs_dogs through Python's tensorflow_datasets.
  expect_error(py_require("tensorflow-datasets"), class = "mirrored_not_yet_error")

  # Standardizing the data: not yet in mirrored: layer_resizing()
  expect_error(resize_fn <- layer_resizing(width = 150, height = 150),
               class = "mirrored_not_yet_error")

  # Using random data augmentation: not yet in mirrored: layer_random_flip() / rotation
  expect_error(
    data_augmentation <- keras_model_sequential() |>
      layer_random_flip("horizontal") |>
      layer_random_rotation(.1),
    class = "mirrored_not_yet_error")

  # all_dims() (the guide's first_image <- images[1, all_dims(), drop = TRUE])
  expect_error(all_dims(), class = "mirrored_not_yet_error")
})

test_that("Visualizing and batching the dataset: dataset_take, as_array_iterator, iterate, batch, prefetch", {
  train_ds <- tensor_slices_dataset(make_images(16, 1))

  png(withr::local_tempfile(fileext = ".png"))
  par(mfrow = c(3, 3), mar = c(1,0,1.5,0))
  seen <- 0
  train_ds |>
    dataset_take(9) |>
    as_array_iterator() |>
    iterate(function(batch) {
      c(image, label) %<-% batch
      plot(as.raster(image, max = 255L))
      title(sprintf(
        "label: %s   size: %s",
        label, paste(dim(image), collapse = " x ")))
      seen <<- seen + 1
    })
  dev.off()
  expect_equal(seen, 9)

  batch_size <- 64
  train_ds <- train_ds |>
    dataset_batch(batch_size) |>
    dataset_prefetch()

  batch <- train_ds |>
    dataset_take(1) |>
    as_iterator() |>
    iter_next()

  c(images, labels) %<-% batch
  expect_equal(dim(images), c(16L, 150L, 150L, 3L))
  expect_equal(as.vector(labels), rep(0:1, 8))
})

test_that("Build a model, train the top layer, then fine-tune the entire model with training = FALSE", {
  c(x, y) %<-% make_images(48, 2)
  train_ds <- tensor_slices_dataset(list(x[1:32, , , ], y[1:32]))
  validation_ds <- tensor_slices_dataset(list(x[33:40, , , ], y[33:40]))
  test_ds <- tensor_slices_dataset(list(x[41:48, , , ], y[41:48]))
  batch_size <- 16   # 64 in the guide
  train_ds <- train_ds |> dataset_batch(batch_size) |> dataset_prefetch()
  validation_ds <- validation_ds |> dataset_batch(batch_size) |> dataset_prefetch()
  test_ds <- test_ds |> dataset_batch(batch_size) |> dataset_prefetch()

  base_model <- small_base_model()   # application_xception() in the guide

  # Freeze the base_model
  base_model$trainable <- FALSE

  # Create new model on top
  inputs <- keras_input(shape = c(150, 150, 3))

  # Pre-trained Xception weights requires that input be scaled
  # from (0, 255) to a range of (-1., +1.), the rescaling layer
  # outputs: `(inputs * scale) + offset`
  scale_layer <- layer_rescaling(scale = 1 / 127.5, offset = -1)
  x <- scale_layer(inputs)

  # The base model contains batchnorm layers. We want to keep them in inference mode
  # when we unfreeze the base model for fine-tuning, so we make sure that the
  # base_model is running in inference mode here.
  outputs <- x |>
    base_model(training = FALSE) |>
    layer_global_average_pooling_2d() |>
    layer_dropout(0.2) |>
    layer_dense(1)

  model <- keras_model(inputs, outputs)

  out <- capture.output(summary(model, show_trainable = TRUE))
  expect_true(any(grepl("Trainable", out)))
  expect_true(any(grepl("Trainable params: 17 ", out, fixed = TRUE)))

  # Train the top layer
  model |> compile(
    optimizer = optimizer_adam(),
    loss = loss_binary_crossentropy(from_logits = TRUE),
    metrics = list(metric_binary_accuracy())
  )

  base_before <- get_weights(base_model)
  epochs <- 1
  out <- capture.output(
    h1 <- model |> fit(train_ds, epochs = epochs, validation_data = validation_ds))
  expect_true(all(c("binary_accuracy", "loss", "val_binary_accuracy", "val_loss") %in%
                    names(h1$metrics)))
  # the frozen base, BatchNormalization's moving statistics included, is unchanged
  expect_equal(get_weights(base_model), base_before)

  # Do a round of fine-tuning of the entire model
  base_model$trainable <- TRUE
  out <- capture.output(summary(model, show_trainable = TRUE))
  expect_true(any(grepl("Trainable params: 1,457 ", out, fixed = TRUE)))

  model |> compile(
    optimizer = optimizer_adam(1e-5), # Low learning rate
    loss = loss_binary_crossentropy(from_logits = TRUE),
    metrics = list(metric_binary_accuracy())
  )

  epochs <- 1
  out <- capture.output(
    h2 <- model |> fit(train_ds, epochs = epochs, validation_data = validation_ds))
  after <- get_weights(base_model)
  # the kernels moved; BatchNormalization stayed in inference mode
  # (training = FALSE), so its moving mean and variance did not
  expect_false(isTRUE(all.equal(after[[1]], base_before[[1]])))
  bn <- base_model$layers[[3]]
  bn_w <- get_weights(bn)
  expect_equal(bn_w[[3]], base_before[[5]])   # moving_mean
  expect_equal(bn_w[[4]], base_before[[6]])   # moving_variance

  out <- capture.output(res <- model |> evaluate(test_ds))
  expect_named(res, c("binary_accuracy", "loss"), ignore.order = TRUE)
})
