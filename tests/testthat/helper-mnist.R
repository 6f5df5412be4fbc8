# Real MNIST digits shipped with the package, flattened row by row and
# scaled to 0..1; loaded once per test run.
mnist_cache <- new.env(parent = emptyenv())
mnist_scaled <- function() {
  if (is.null(mnist_cache$data)) {
    m <- dataset_mnist_sample()
    mnist_cache$data <- list(
      x_train = array_reshape(m$train$x, c(-1, 784)) / 255, y_train = m$train$y,
      x_test = array_reshape(m$test$x, c(-1, 784)) / 255, y_test = m$test$y)
  }
  mnist_cache$data
}

mlp <- function(units = c(256, 256), out = 10, input = 784, activation = "relu") {
  inputs <- keras_input(shape = input)
  x <- inputs
  for (u in units) x <- layer_dense(x, units = u, activation = activation)
  keras_model(inputs, layer_dense(x, units = out))
}

# Plain-R forward pass of a Dense chain from get_weights().
r_forward <- function(weights, x, activations) {
  h <- x
  for (k in seq_along(activations)) {
    h <- sweep(h %*% weights[[2 * k - 1]], 2, weights[[2 * k]], "+")
    h <- switch(activations[[k]], relu = pmax(h, 0), linear = h, tanh = tanh(h),
                sigmoid = 1 / (1 + exp(-h)),
                softmax = { e <- exp(h - apply(h, 1, max)); e / rowSums(e) })
  }
  h
}
