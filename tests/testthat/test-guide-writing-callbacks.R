# keras3's guide "Writing your own callbacks"
# (vignettes-src/writing_your_own_callbacks.Rmd), its R chunks as written,
# with mirrored loaded instead of keras3. dataset_mnist() reads real MNIST
# digits (a 2,000/1,000 subset of the ones mirrored ships, written as IDX
# files) since there is no network; the guide keeps 1,000 of each anyway.

guide_callbacks_setup <- function(env = parent.frame()) {
  local_guide_mnist(.local_envir = env)

  # Define the Keras model to add callbacks to
  get_model <- function() {
    model <- keras_model_sequential()
    model |> layer_dense(units = 1)
    model |> compile(
      optimizer = optimizer_rmsprop(learning_rate = 0.1),
      loss = "mean_squared_error",
      metrics = "mean_absolute_error"
    )
    model
  }

  # Load example MNIST data and pre-process it
  mnist <- dataset_mnist()

  flatten_and_rescale <- function(x) {
    x <- array_reshape(x, c(-1, 784))
    x <- x / 255
    x
  }

  mnist$train$x <- flatten_and_rescale(mnist$train$x)
  mnist$test$x  <- flatten_and_rescale(mnist$test$x)

  # limit to 1000 samples
  n <- 1000
  mnist$train$x <- mnist$train$x[1:n,]
  mnist$train$y <- mnist$train$y[1:n]
  mnist$test$x  <- mnist$test$x[1:n,]
  mnist$test$y  <- mnist$test$y[1:n]

  list(get_model = get_model, mnist = mnist)
}

# The guide's "Usage of logs list" callback class.
guide_loss_and_mae_callback <- function() {
  Callback(
    "LossAndErrorPrintingCallback",

    on_train_batch_end = function(batch, logs = NULL)
      cat(sprintf("Up to batch %i, the average loss is %7.2f.\n",
                  batch,  logs$loss)),

    on_test_batch_end = function(batch, logs = NULL)
      cat(sprintf("Up to batch %i, the average loss is %7.2f.\n",
                  batch, logs$loss)),

    on_epoch_end = function(epoch, logs = NULL)
      cat(sprintf(
        "The average loss for epoch %2i is %9.2f and mean absolute error is %7.2f.\n",
        epoch, logs$loss, logs$mean_absolute_error
      ))
  )
}

guide_custom_callback <- function() {
  show <- function(msg, logs) {
    cat(glue::glue(msg, .envir = parent.frame()),
        "got logs: ", sep = "; ")
    str(logs); cat("\n")
  }

  Callback(
    "CustomCallback",
    on_train_begin         = \(logs = NULL)        show("Starting training", logs),
    on_epoch_begin         = \(epoch, logs = NULL) show("Start epoch {epoch} of training", logs),
    on_train_batch_begin   = \(batch, logs = NULL) show("...Training: start of batch {batch}", logs),
    on_train_batch_end     = \(batch, logs = NULL) show("...Training: end of batch {batch}",  logs),
    on_epoch_end           = \(epoch, logs = NULL) show("End epoch {epoch} of training", logs),
    on_train_end           = \(logs = NULL)        show("Stop training", logs),


    on_test_begin          = \(logs = NULL)        show("Start testing", logs),
    on_test_batch_begin    = \(batch, logs = NULL) show("...Evaluating: start of batch {batch}", logs),
    on_test_batch_end      = \(batch, logs = NULL) show("...Evaluating: end of batch {batch}", logs),
    on_test_end            = \(logs = NULL)        show("Stop testing", logs),

    on_predict_begin       = \(logs = NULL)        show("Start predicting", logs),
    on_predict_end         = \(logs = NULL)        show("Stop predicting", logs),
    on_predict_batch_begin = \(batch, logs = NULL) show("...Predicting: start of batch {batch}", logs),
    on_predict_batch_end   = \(batch, logs = NULL) show("...Predicting: end of batch {batch}", logs),
  )

}

test_that("A basic example: every callback method fires, with the logs the guide shows", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  expect_equal(dim(mnist$train$x), c(1000L, 784L))
  expect_equal(dim(mnist$test$x), c(1000L, 784L))

  callback_custom <- guide_custom_callback()

  model <- get_model()
  out <- capture.output(model |> fit(
    mnist$train$x, mnist$train$y,
    batch_size = 128,
    epochs = 2,
    verbose = 0,
    validation_split = 0.5,
    callbacks = list(callback_custom())
  ))
  n <- function(pattern) sum(grepl(pattern, out, fixed = TRUE))
  # 500 training rows in 4 batches, 500 validation rows in 4 batches, 2 epochs
  expect_equal(n("Starting training; got logs: "), 1)
  expect_equal(n("Start epoch 1 of training; got logs: "), 1)
  expect_equal(n("Start epoch 2 of training"), 1)
  expect_equal(n("...Training: start of batch"), 8)
  expect_equal(n("...Training: end of batch"), 8)
  expect_equal(n("...Training: end of batch 4; got logs: List of 2"), 2)
  expect_equal(n("...Training: start of batch 5"), 0)
  expect_equal(n("Start testing"), 2)
  expect_equal(n("...Evaluating: start of batch"), 8)
  expect_equal(n("...Evaluating: end of batch 4; got logs: List of 2"), 2)
  expect_equal(n("Stop testing; got logs: List of 2"), 2)
  expect_equal(n("End epoch 1 of training; got logs: List of 4"), 1)
  expect_equal(n("End epoch 2 of training; got logs: List of 4"), 1)
  expect_equal(n("Stop training; got logs: List of 4"), 1)
  expect_true(any(grepl("^ \\$ val_mean_absolute_error: num", out)))
  expect_true(any(grepl("^ \\$ mean_absolute_error *: num", out)))
  # the order of the hooks
  expect_match(out[1], "^Starting training")
  expect_lt(which(grepl("Stop testing", out))[1], which(grepl("End epoch 1", out)))
  expect_true(grepl("^Stop training", out[max(which(nzchar(out) & !grepl("^ ", out)))]))

  out <- capture.output(res <- model |> evaluate(
    mnist$test$x, mnist$test$y,
    batch_size = 128, verbose = 0,
    callbacks = list(callback_custom())
  ))
  n <- function(pattern) sum(grepl(pattern, out, fixed = TRUE))
  # 1000 rows: 8 batches
  expect_equal(n("Start testing; got logs: "), 1)
  expect_equal(n("...Evaluating: start of batch"), 8)
  expect_equal(n("...Evaluating: end of batch 8; got logs: List of 2"), 1)
  expect_equal(n("Stop testing; got logs: List of 2"), 1)
  expect_equal(n("Training"), 0)

})

test_that("A basic example: predict() calls the predict hooks, batch by batch", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  callback_custom <- guide_custom_callback()
  model <- get_model()
  out <- capture.output(res <- model |> predict(
    mnist$test$x,
    batch_size = 128, verbose = 0,
    callbacks = list(callback_custom())
  ))
  n <- function(pattern) sum(grepl(pattern, out, fixed = TRUE))
  expect_equal(n("Start predicting; got logs: "), 1)
  expect_equal(n("...Predicting: start of batch"), 8)
  expect_equal(n("...Predicting: end of batch"), 8)
  expect_equal(n("Stop predicting; got logs: "), 1)
  expect_equal(dim(res), c(1000L, 1L))
  # keras3's on_predict_batch_end logs carry the batch's outputs.
  seen <- list()
  keep <- callback_lambda(on_predict_batch_end = function(batch, logs) seen[[batch]] <<- logs$outputs)
  res2 <- predict(model, mnist$test$x, batch_size = 128, verbose = 0, callbacks = list(keep))
  expect_length(seen, 8)
  expect_equal(dim(seen[[8]]), c(1000L - 7L * 128L, 1L))
  expect_equal(do.call(rbind, seen), res2)
})

test_that("A basic example: hooks without logs get an empty named list, printed as the guide shows", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  callback_custom <- guide_custom_callback()
  model <- get_model()
  out <- capture.output(model |> fit(
    mnist$train$x, mnist$train$y,
    batch_size = 128, epochs = 1, verbose = 0, validation_split = 0.5,
    callbacks = list(callback_custom())
  ))
  expect_equal(out[1], "Starting training; got logs:  Named list()")
  expect_equal(out[3], "Start epoch 1 of training; got logs:  Named list()")
  expect_true(any(out == "...Training: start of batch 1; got logs:  Named list()"))
  expect_true(any(out == "Start testing; got logs:  Named list()"))
})

test_that("Usage of logs list: running averages printed per batch and per epoch", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  callback_print_loss_and_mae <- guide_loss_and_mae_callback()

  model <- get_model()
  out <- capture.output(model |> fit(
    mnist$train$x, mnist$train$y,
    epochs = 2, verbose = 0, batch_size = 128,
    callbacks = list(callback_print_loss_and_mae())
  ))
  # 1000 rows / 128: 8 batches a epoch, as in the guide's output
  expect_equal(sum(grepl("^Up to batch [1-8], the average loss is +[0-9.]+\\.$", out)), 16)
  expect_equal(sum(grepl("^Up to batch 9", out)), 0)
  expect_match(out[9], "^The average loss for epoch  1 is +[0-9.]+ and mean absolute error is +[0-9.]+\\.$")
  expect_match(out[18], "^The average loss for epoch  2 is")
  # the epoch's loss is the running average at its last batch
  last_batch <- as.numeric(sub(".* is +([0-9.]+)\\.$", "\\1", out[8]))
  epoch_loss <- as.numeric(sub(".*epoch  1 is +([0-9.]+) and.*", "\\1", out[9]))
  expect_equal(last_batch, epoch_loss)
  loss2 <- as.numeric(sub(".*epoch  2 is +([0-9.]+) and.*", "\\1", out[18]))
  expect_lt(loss2, epoch_loss)

  out <- capture.output(res <- model |> evaluate(
    mnist$test$x, mnist$test$y,
    verbose = 0, batch_size = 128,
    callbacks = list(callback_print_loss_and_mae())
  ))
  expect_length(out, 8)
  expect_match(out, "^Up to batch [1-8], the average loss is")
})

test_that("Early stopping at minimum loss: a Callback with initialize(), super$initialize() and new fields", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  callback_print_loss_and_mae <- guide_loss_and_mae_callback()

  callback_early_stopping_at_min_loss <- Callback(
    "EarlyStoppingAtMinLoss",
    `__doc__` =
      "Stop training when the loss is at its min, i.e. the loss stops decreasing.

      Arguments:
          patience: Number of epochs to wait after min has been hit. After this
          number of no improvement, training stops.
      ",

    initialize = function(patience = 0) {
      super$initialize()
      self$patience <- patience
      # best_weights to store the weights at which the minimum loss occurs.
      self$best_weights <- NULL
    },

    on_train_begin = function(logs = NULL) {
      # The number of epoch it has waited when loss is no longer minimum.
      self$wait <- 0
      # The epoch the training stops at.
      self$stopped_epoch <- 0
      # Initialize the best as infinity.
      self$best <- Inf
    },

    on_epoch_end = function(epoch, logs = NULL) {
      current <- logs$loss
      if (current < self$best) {
        self$best <- current
        self$wait <- 0L
        # Record the best weights if current results is better (less).
        self$best_weights <- get_weights(self$model)
      } else {
        add(self$wait) <- 1L
        if (self$wait >= self$patience) {
          self$stopped_epoch <- epoch
          self$model$stop_training <- TRUE
          cat("Restoring model weights from the end of the best epoch.\n")
          model$set_weights(self$best_weights)
        }
      }
    },

    on_train_end = function(logs = NULL)
      if (self$stopped_epoch > 0)
        cat(sprintf("Epoch %05d: early stopping\n", self$stopped_epoch + 1))
  )
  `add<-` <- `+`


  model <- get_model()
  out <- capture.output(history <- model |> fit(
    mnist$train$x,
    mnist$train$y,
    epochs = 30,
    batch_size = 64,
    verbose = 0,
    callbacks = list(callback_print_loss_and_mae(),
                     callback_early_stopping_at_min_loss())
  ))
  epoch_lines <- grep("^The average loss for epoch", out, value = TRUE)
  losses <- as.numeric(sub(".* is +([0-9.]+) and.*", "\\1", epoch_lines))
  n_epochs <- length(losses)
  # stops at the first epoch whose loss does not improve (patience 0)
  expect_lt(n_epochs, 30)
  expect_true(n_epochs >= 2)
  expect_true(all(diff(losses[-n_epochs]) < 0))
  expect_gte(losses[n_epochs], losses[n_epochs - 1])
  expect_equal(sum(grepl("^Up to batch", out)), 16 * n_epochs)  # 1000 / 64
  expect_equal(sum(out == "Restoring model weights from the end of the best epoch."), 1)
  expect_equal(out[length(out)], sprintf("Epoch %05d: early stopping", n_epochs + 1))
  expect_length(history$metrics$loss, n_epochs)
})

test_that("Learning rate scheduling: a Callback setting self$model$optimizer$learning_rate", {
  c(get_model, mnist) %<-% guide_callbacks_setup()
  callback_print_loss_and_mae <- guide_loss_and_mae_callback()

  callback_custom_learning_rate_scheduler <- Callback(
    "CustomLearningRateScheduler",
    `__doc__` =
    "Learning rate scheduler which sets the learning rate according to schedule.

      Arguments:
          schedule: a function that takes an epoch index
              (integer, indexed from 0) and current learning rate
              as inputs and returns a new learning rate as output (float).
      ",

    initialize = function(schedule) {
      super$initialize()
      self$schedule <- schedule
    },

    on_epoch_begin = function(epoch, logs = NULL) {
      ## When in doubt about what types of objects are in scope (e.g., self$model)
      ## use a debugger to interact with the actual objects at the console!
      # browser()

      if (!"learning_rate" %in% names(self$model$optimizer))
        stop('Optimizer must have a "learning_rate" attribute.')

      # # Get the current learning rate from model's optimizer.
      # use as.numeric() to convert the keras variablea to an R numeric
      lr <- as.numeric(self$model$optimizer$learning_rate)
      # # Call schedule function to get the scheduled learning rate.
      scheduled_lr <- self$schedule(epoch, lr)
      # # Set the value back to the optimizer before this epoch starts
      optimizer <- self$model$optimizer
      optimizer$learning_rate <- scheduled_lr
      cat(sprintf("\nEpoch %03d: Learning rate is %6.4f.\n", epoch, scheduled_lr))
    }
  )

  LR_SCHEDULE <- tibble::tribble(
    ~start_epoch, ~learning_rate,
               0,            0.1,
               3,           0.05,
               6,           0.01,
               9,          0.005,
              12,          0.001,
    )

  last <- function(x) x[length(x)]
  lr_schedule <- function(epoch, learning_rate) {
    "Helper function to retrieve the scheduled learning rate based on epoch."
    with(LR_SCHEDULE, learning_rate[last(which(epoch >= start_epoch))])
  }

  model <- get_model()
  out <- capture.output(history <- model |> fit(
    mnist$train$x,
    mnist$train$y,
    epochs = 14,
    batch_size = 64,
    verbose = 0,
    callbacks = list(
      callback_print_loss_and_mae(),
      callback_custom_learning_rate_scheduler(lr_schedule)
    )
  ))
  lr_lines <- grep("^Epoch [0-9]{3}: Learning rate is", out, value = TRUE)
  expect_length(lr_lines, 14)
  expect_equal(lr_lines[1], "Epoch 001: Learning rate is 0.1000.")
  expect_equal(lr_lines[3], "Epoch 003: Learning rate is 0.0500.")
  expect_equal(lr_lines[6], "Epoch 006: Learning rate is 0.0100.")
  expect_equal(lr_lines[14], "Epoch 014: Learning rate is 0.0010.")
  expect_equal(as.numeric(model$optimizer$learning_rate), 0.001, tolerance = 1e-6)
  expect_equal(sum(grepl("^The average loss for epoch", out)), 14)
})
