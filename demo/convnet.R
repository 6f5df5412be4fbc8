# keras3's "Simple MNIST convnet" on the MNIST digits that ship with mirrored
# (the vignette "Image classification with convolutional networks"): two
# Conv2D/MaxPooling2D blocks, dropout, batch 128, 12 epochs, 10% of the 10,000
# training digits held out for validation; test accuracy on the canonical
# 10,000-digit test set. The second part of `make demo`, or
# demo("convnet", package = "mirrored").
library(mirrored)

set_random_seed(1)
num_classes <- 10
input_shape <- c(28, 28, 1)
c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist_sample()
x_train <- array_reshape(x_train / 255, c(-1, 28, 28, 1))
x_test <- array_reshape(x_test / 255, c(-1, 28, 28, 1))
y_train <- to_categorical(y_train, num_classes)
y_test <- to_categorical(y_test, num_classes)

# Every GPU when there are any, else the CPU (one replica, all its threads).
strategy <- mirrored_strategy()
cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync))
with(strategy$scope(), {
  model <- keras_model_sequential(input_shape = input_shape) |>
    layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_conv_2d(filters = 64, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_flatten() |>
    layer_dropout(rate = 0.5) |>
    layer_dense(units = num_classes, activation = "softmax")
  model |> compile(loss = "categorical_crossentropy", optimizer = "adam", metrics = "accuracy")
})
summary(model)
started <- Sys.time()
history <- model |> fit(x_train, y_train, batch_size = 128, epochs = 12, validation_split = 0.1,
                        verbose = 2)
seconds <- as.numeric(Sys.time() - started, units = "secs")
score <- model |> evaluate(x_test, y_test, verbose = 0)
cat(sprintf("Test loss: %.4f\nTest accuracy: %.4f\n", score$loss, score$accuracy))
cat(sprintf("Training: %.1f s (%.1f ms/step)\n", seconds,
            1000 * seconds / (12 * ceiling(nrow(x_train) * 0.9 / 128))))
if (score$accuracy < 0.975) {
  stop(sprintf("test accuracy %.4f is below 0.975 (Keras 3 on the same digits: 0.977-0.980)",
               score$accuracy), call. = FALSE)
}
