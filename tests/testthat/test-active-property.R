# active_property() / mark_active(): class members that are properties.

test_that("an active_property() member of a Layer() is a property of its instances", {
  layer_scale <- Layer("ScaleProp",
    initialize = function(factor = 2, ...) {
      super$initialize(...)
      private$f <- factor
    },
    call = function(x) x * private$f,
    factor = active_property(function(value) {
      if (missing(value)) return(private$f)
      private$f <- value
    })
  )
  layer <- layer_scale(factor = 3)
  user <- layer_object(layer)$user
  expect_equal(user$factor, 3)
  user$factor <- 5
  expect_equal(user$factor, 5)
  inputs <- keras_input(shape = 2)
  model <- keras_model(inputs, layer(inputs))
  expect_equal(predict(model, matrix(1, 1, 2), verbose = 0), matrix(5, 1, 2))
})

test_that("mark_active() members of Callback() and Loss() classes are properties", {
  callback_count <- Callback("Counting",
    on_epoch_end = function(epoch, logs = NULL) self$n <- (self$n %||% 0) + 1,
    epochs_seen = mark_active(function() self$n %||% 0)
  )
  cb <- callback_count()
  model <- keras_model_sequential(input_shape = 1) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = "mse")
  fit(model, matrix(1:4), matrix(1:4), epochs = 3, verbose = 0, callbacks = list(cb))
  expect_equal(cb$epochs_seen, 3)
  expect_error(cb$epochs_seen <- 1)

  loss_scaled <- Loss("ScaledMse",
    initialize = function(scale = 1, ...) {
      super$initialize(...)
      private$s <- scale
    },
    call = function(y_true, y_pred) op_mean(op_square(y_true - y_pred)) * private$s,
    scale = mark_active(function() private$s),
    private = list(s = 1)
  )
  l <- loss_scaled(scale = 4)
  expect_equal(l$user$scale, 4)
  expect_equal(as.numeric(l(matrix(0, 2, 2), matrix(1, 2, 2))), 4)
})

test_that("active_property() takes functions only", {
  expect_error(active_property(1), class = "mirrored_value_error", regexp = "fn")
  expect_error(mark_active("a"), class = "mirrored_value_error", regexp = "x")
})
