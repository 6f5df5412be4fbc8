# The functional API: callable layers, several inputs and outputs, shared
# layers, and their .keras files. Numbers are checked against plain-R
# references (double precision) and finite differences.

dense_ref <- function(x, w, b) sweep(x %*% w, 2, b, "+")

keras_file_config <- function(path) {
  src <- mirrored:::read_keras_source(path)
  mirrored:::parse_json_bytes(src$members[["config.json"]], "config.json")
}

test_that("layers are callable functions that keep their fields", {
  dense <- layer_dense(units = 4, name = "callable_dense")
  expect_true(is.function(dense))
  expect_s3_class(dense, "mirrored_layer")
  expect_equal(dense$name, "callable_dense")
  expect_equal(dense$config$units, 4L)
  expect_output(print(dense), "<Dense name=callable_dense>")
  x <- keras_input(shape = 3)
  y <- dense(x)
  expect_equal(dim(y), c(NA, 4L))
  a <- keras_input(shape = 4)
  s <- layer_add()(list(y, a))
  expect_equal(dim(s), c(NA, 4L))
  e <- expect_error(dense(1:3), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "batch axis")
  expect_error(dense(x, training = TRUE), class = "mirrored_not_yet_error")
  # The callable form is accepted wherever layers are.
  m <- keras_model_sequential(input_shape = 3, layers = list(layer_dense(units = 2, name = "seq_a")))
  m$add(layer_dense(units = 1, name = "seq_b"))
  expect_equal(vapply(m$layers, function(l) l$name, ""), c("seq_a", "seq_b"))
  expect_true(is.function(m$layers[[1]]))
  expect_equal(get_config(m$layers[[1]])$units, 2L)
  expect_error(keras_model_sequential(list(layer_dense(units = 1))), class = "mirrored_value_error")
  m2 <- keras_model_sequential(input_batch_shape = list(NULL, 5)) %>% layer_dense(units = 2)
  expect_equal(m2$input_shape, 5L)
  expect_error(keras_model_sequential(input_shape = 3, input_tensor = 1), class = "mirrored_not_yet_error")
})

test_that("to_categorical() follows Keras", {
  expect_equal(to_categorical(c(0, 1, 2, 3), num_classes = 4), diag(4))
  m <- to_categorical(c(2, 0))
  expect_equal(m, rbind(c(0, 0, 1), c(1, 0, 0)))
  a <- to_categorical(matrix(c(0, 2, 1, 1), 2))
  expect_equal(dim(a), c(2L, 2L, 3L))
  expect_equal(a[2, 1, ], c(0, 0, 1))
  expect_equal(a[1, 2, ], c(0, 1, 0))
  expect_equal(dim(to_categorical(matrix(c(0, 1, 1), 3, 1))), c(3L, 2L))  # a trailing 1 is dropped
  expect_equal(to_categorical(factor(c("b", "a"))), rbind(c(0, 1), c(1, 0)))
  expect_error(to_categorical(c(0, 5), num_classes = 3), class = "mirrored_value_error")
  expect_error(to_categorical(c(0.5)), class = "mirrored_value_error")
})

test_that("x of another per-sample shape than the input is a shape error naming x", {
  model <- keras_model_sequential(input_shape = 784) |> layer_dense(units = 2)
  model |> compile(optimizer = "sgd", loss = "mse")
  x3 <- array(0, c(4, 28, 28))
  for (f in list(function() predict(model, x3, verbose = 0),
                 function() evaluate(model, x3, matrix(0, 4, 2), verbose = 0),
                 function() fit(model, x3, matrix(0, 4, 2), verbose = 0))) {
    e <- expect_error(f(), class = "mirrored_shape_error")
    expect_match(conditionMessage(e), "`x`.*\\(28, 28\\).*\\(784\\)")
  }
  ds <- tensor_slices_dataset(list(x3, matrix(0, 4, 2))) |> dataset_batch(2)
  expect_error(fit(model, ds, verbose = 0), class = "mirrored_shape_error")
  # Element shapes known only by iterating (an R map): the core checks them.
  mapped <- ds |> dataset_map(function(x, y) list(x, y))
  e <- expect_error(fit(model, mapped, verbose = 0), class = "mirrored_shape_error")
  expect_match(conditionMessage(e), "\\(None, 28, 28\\).*\\(None, 784\\)")
  # A trailing dimension of 1 is added or dropped, as Keras does.
  m1 <- keras_model_sequential(input_shape = c(3, 1)) |> layer_flatten() |> layer_dense(units = 1)
  expect_equal(dim(predict(m1, matrix(1, 2, 3), verbose = 0)), c(2L, 1L))
})

two_io_model <- function(named_outputs = FALSE) {
  a <- keras_input(shape = 3, name = "in_a")
  b <- keras_input(shape = 2, name = "in_b")
  h <- layer_dense(units = 4, activation = "tanh", name = "h_a")(a)
  g <- layer_dense(units = 4, name = "h_b")(b)
  s <- layer_add(list(h, g))
  o1 <- layer_dense(units = 2, name = "reg")(s)
  o2 <- layer_dense(units = 3, name = "cls")(h)
  outs <- if (named_outputs) list(r = o1, c = o2) else list(o1, o2)
  keras_model(list(a, b), outs)
}

test_that("several inputs and outputs: the loss is the weighted sum of the outputs' losses", {
  set_random_seed(3)
  model <- two_io_model()
  model |> compile(optimizer = "sgd",
                   loss = list("mse", loss_sparse_categorical_crossentropy(from_logits = TRUE)),
                   metrics = list(list("mae"), list("accuracy")), loss_weights = c(0.7, 0.3))
  n <- 13
  xa <- matrix(runif(n * 3), n); xb <- matrix(runif(n * 2), n)
  ya <- matrix(rnorm(n * 2), n); yb <- sample(0:2, n, TRUE)
  p <- predict(model, list(xa, xb), verbose = 0)
  expect_type(p, "list")
  expect_equal(dim(p[[1]]), c(n, 2L))
  expect_equal(dim(p[[2]]), c(n, 3L))
  # Named inputs and outputs are matched by name, in any order.
  ev <- evaluate(model, list(in_b = xb, in_a = xa), list(cls = yb, reg = ya), verbose = 0)
  expect_named(ev, c("cls_accuracy", "cls_loss", "loss", "reg_loss", "reg_mae"))
  l_reg <- mean((p[[1]] - ya)^2)
  lg <- p[[2]]
  l_cls <- mean(log(rowSums(exp(lg))) - lg[cbind(seq_len(n), yb + 1)])
  expect_equal(ev$reg_loss, l_reg, tolerance = 1e-5)
  expect_equal(ev$cls_loss, l_cls, tolerance = 1e-5)
  expect_equal(ev$loss, 0.7 * l_reg + 0.3 * l_cls, tolerance = 1e-5)
  expect_equal(ev$reg_mae, mean(abs(p[[1]] - ya)), tolerance = 1e-5)
  expect_equal(ev$cls_accuracy, mean(max.col(lg, "first") - 1 == yb), tolerance = 1e-6)
  h <- fit(model, list(xa, xb), list(ya, yb), epochs = 2, batch_size = 5, verbose = 0,
           validation_split = 0.25)
  expect_named(h$metrics, c("cls_accuracy", "cls_loss", "loss", "reg_loss", "reg_mae",
                            "val_cls_accuracy", "val_cls_loss", "val_loss", "val_reg_loss",
                            "val_reg_mae"))
  # Callbacks monitor an output's loss.
  es <- callback_early_stopping(monitor = "val_reg_loss", patience = 0)
  expect_no_error(fit(model, list(xa, xb), list(ya, yb), epochs = 2, verbose = 0,
                      validation_data = list(list(xa, xb), list(ya, yb)), callbacks = list(es)))
})

test_that("a named list of outputs names predict()'s list, the losses and the logs", {
  set_random_seed(4)
  model <- two_io_model(named_outputs = TRUE)
  model |> compile(optimizer = "adam", loss = list(c = "sparse_categorical_crossentropy", r = "mse"),
                   metrics = list(r = "mae"), loss_weights = list(c = 2))
  n <- 6
  xa <- matrix(runif(n * 3), n); xb <- matrix(runif(n * 2), n)
  p <- predict(model, list(in_a = xa, in_b = xb), verbose = 0)
  expect_named(p, c("r", "c"))
  ev <- evaluate(model, list(xa, xb), list(r = matrix(0, n, 2), c = rep(1, n)), verbose = 0)
  expect_named(ev, c("c_loss", "loss", "r_loss", "r_mae"))
  expect_equal(ev$loss, 2 * ev$c_loss + ev$r_loss, tolerance = 1e-5)
})

test_that("wrong counts and names of inputs, outputs and losses are classed errors naming the argument", {
  model <- two_io_model()
  e <- expect_error(compile(model, optimizer = "sgd", loss = list("mse")), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "`loss`.*2")
  e <- expect_error(compile(model, optimizer = "sgd", loss = list(nope = "mse")), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "`loss`.*nope")
  expect_error(compile(model, optimizer = "sgd", loss = "mse", metrics = list("mae")),
               class = "mirrored_value_error")
  model |> compile(optimizer = "sgd", loss = "mse")
  xa <- matrix(0, 4, 3); xb <- matrix(0, 4, 2)
  e <- expect_error(predict(model, xa, verbose = 0), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "`x`")
  expect_error(predict(model, list(xa), verbose = 0), class = "mirrored_value_error")
  e <- expect_error(predict(model, list(in_a = xa, other = xb), verbose = 0), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "other")
  expect_error(predict(model, list(xa, xb[1:3, ]), verbose = 0), class = "mirrored_value_error")
  e <- expect_error(predict(model, list(xa, matrix(0, 4, 5)), verbose = 0), class = "mirrored_shape_error")
  expect_match(conditionMessage(e), "x\\[\\[2\\]\\].*\\(5\\).*\\(2\\)")
  expect_error(fit(model, list(xa, xb), matrix(0, 4, 2), verbose = 0), class = "mirrored_value_error")
  # An input that the outputs do not depend on.
  a <- keras_input(shape = 2); b <- keras_input(shape = 2)
  e <- expect_error(keras_model(list(a, b), layer_dense(a, units = 1)), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "not connected")
})

test_that("a shared layer has one set of weights and the sum of its calls' gradients", {
  set_random_seed(5)
  x <- keras_input(shape = 3)
  d <- layer_dense(units = 3, activation = "tanh", name = "shared_d")
  y <- d(d(x))
  out <- layer_dense(units = 2, name = "head")(y)
  model <- keras_model(x, out)
  w <- get_weights(model)
  expect_length(w, 4)  # shared_d's kernel and bias once, then head's
  n <- 7
  xs <- matrix(rnorm(n * 3), n)
  ys <- matrix(rnorm(n * 2), n)
  fwd <- function(w) {
    h <- tanh(dense_ref(tanh(dense_ref(xs, w[[1]], w[[2]])), w[[1]], w[[2]]))
    dense_ref(h, w[[3]], w[[4]])
  }
  loss <- function(w) mean((fwd(w) - ys)^2)
  expect_equal(predict(model, xs, verbose = 0), fwd(w), tolerance = 1e-5)
  # One SGD step of learning rate 1 over the whole batch: w - grad.
  model |> compile(optimizer = optimizer_sgd(learning_rate = 1), loss = "mse")
  fit(model, xs, ys, batch_size = n, epochs = 1, shuffle = FALSE, verbose = 0)
  g <- Map(function(a, b) a - b, w, get_weights(model))
  h <- 1e-5
  for (k in 1:2) {
    fd <- w[[k]]
    for (i in seq_along(fd)) {
      wp <- w; wm <- w
      wp[[k]][i] <- wp[[k]][i] + h
      wm[[k]][i] <- wm[[k]][i] - h
      fd[i] <- (loss(wp) - loss(wm)) / (2 * h)
    }
    expect_equal(as.numeric(g[[k]]), as.numeric(fd), tolerance = 1e-4)
  }
  expect_output(summary(model), "shared_d\\[1\\]\\[0\\]")
  expect_equal(vapply(model$layers, function(l) l$name, ""), c(model$layers[[1]]$name, "shared_d", "head"))
  expect_equal(model$output_names, "head")
  # Called on inputs that need other weights: a shape error naming the layer.
  z <- keras_input(shape = 5)
  e <- expect_error(keras_model(list(x, z), list(d(z), y)), class = "mirrored_shape_error")
  expect_match(conditionMessage(e), "shared_d")
})

test_that("multi-input, multi-output, shared-layer training is the same on 1 and 3 replicas", {
  run <- function(devices) {
    set_random_seed(11)
    strategy <- mirrored_strategy(devices = devices)
    with(strategy$scope(), {
      a <- keras_input(shape = 4, name = "ra")
      b <- keras_input(shape = 4, name = "rb")
      d <- layer_dense(units = 4, activation = "relu", name = "rd")
      s <- layer_add(list(d(a), d(b)))
      o1 <- layer_dense(units = 2, name = "ro1")(s)
      o2 <- layer_dense(units = 3, name = "ro2")(d(s))
      model <- keras_model(list(a, b), list(o1, o2))
    })
    model |> compile(optimizer = optimizer_adam(0.01),
                     loss = list("mse", loss_sparse_categorical_crossentropy(from_logits = TRUE)),
                     loss_weights = c(0.5, 1.5), metrics = list(list(), list("accuracy")))
    set.seed(1)
    n <- 17  # batches of 8, 8 and 1: on 3 replicas the last leaves two with no rows
    xa <- matrix(rnorm(n * 4), n); xb <- matrix(rnorm(n * 4), n)
    h <- fit(model, list(xa, xb), list(matrix(rnorm(n * 2), n), sample(0:2, n, TRUE)),
             batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
    list(w = get_weights(model), loss = h$metrics$loss)
  }
  one <- run("/cpu:0")
  three <- run(c("/cpu:0", "/cpu:1", "/cpu:2"))
  for (k in seq_along(one$w)) expect_lt(max(abs(one$w[[k]] - three$w[[k]])), 1e-5)
  expect_equal(one$loss, three$loss, tolerance = 1e-5)
})

test_that("datasets feed several inputs and outputs (nested or flat elements)", {
  set_random_seed(6)
  model <- two_io_model()
  model |> compile(optimizer = "sgd", loss = list("mse", "sparse_categorical_crossentropy"))
  n <- 8
  xa <- matrix(runif(n * 3), n); xb <- matrix(runif(n * 2), n)
  ya <- matrix(runif(n * 2), n); yb <- sample(0:2, n, TRUE)
  ds <- tensor_slices_dataset(list(xa, xb, ya, yb)) |> dataset_batch(4)
  ev_ds <- evaluate(model, ds, verbose = 0)
  ev <- evaluate(model, list(xa, xb), list(ya, yb), verbose = 0)
  expect_equal(ev_ds, ev, tolerance = 1e-6)
  expect_error(evaluate(model, tensor_slices_dataset(list(xa, ya)) |> dataset_batch(4), verbose = 0),
               class = "mirrored_value_error")
  # Nested elements, as Keras takes them: list(list(a, b), list(y1, y2)) or named.
  nested <- tensor_slices_dataset(list(list(xa, xb), list(ya, yb))) |> dataset_shuffle(8, seed = 1) |>
    dataset_batch(3)
  expect_equal(evaluate(model, nested, verbose = 0), ev, tolerance = 1e-6)
  named <- tensor_slices_dataset(list(x = list(in_a = xa, in_b = xb), y = list(reg = ya, cls = yb))) |>
    dataset_batch(8)
  expect_equal(evaluate(model, named, verbose = 0), ev, tolerance = 1e-6)
  p <- predict(model, tensor_slices_dataset(list(list(xa, xb))) |> dataset_batch(5), verbose = 0)
  expect_equal(p, predict(model, list(xa, xb), verbose = 0))
  swapped <- tensor_slices_dataset(list(list(in_b = xb, in_a = xa), list(ya, yb))) |> dataset_batch(8)
  e <- expect_error(evaluate(model, swapped, verbose = 0), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "in_a")
  e <- expect_error(evaluate(model, tensor_slices_dataset(list(list(xa), list(ya, yb))) |> dataset_batch(8),
                             verbose = 0), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "2 inputs")
})

test_that("multi-input, multi-output and shared-layer models round-trip through .keras files", {
  set_random_seed(7)
  a <- keras_input(shape = 3, name = "sa")
  b <- keras_input(shape = 3, name = "sb")
  d <- layer_dense(units = 3, activation = "tanh", name = "sd")
  o1 <- layer_dense(units = 2, name = "so1")(layer_add(list(d(a), d(b))))
  o2 <- d(d(b))
  model <- keras_model(list(a, b), list(o1, o2))
  model |> compile(optimizer = "adam", loss = list("mse", "mse"), metrics = list(list("mae"), list()),
                   loss_weights = c(1, 0.25))
  xa <- matrix(runif(15), 5); xb <- matrix(runif(15), 5)
  fit(model, list(xa, xb), list(matrix(0, 5, 2), matrix(0, 5, 3)), epochs = 1, verbose = 0)
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  cfg <- keras_file_config(path)
  entry <- Filter(function(e) identical(e$name, "sd"), cfg$config$layers)[[1]]
  expect_length(entry$inbound_nodes, 4)
  back <- load_model(path)
  expect_equal(predict(back, list(xa, xb), verbose = 0), predict(model, list(xa, xb), verbose = 0),
               tolerance = 1e-6)
  expect_equal(evaluate(back, list(xa, xb), list(matrix(0, 5, 2), matrix(0, 5, 3)), verbose = 0),
               evaluate(model, list(xa, xb), list(matrix(0, 5, 2), matrix(0, 5, 3)), verbose = 0),
               tolerance = 1e-6)
})

test_that("Keras-written multi-input, multi-output and shared-layer files load and predict as Keras did", {
  dir <- test_path("fixtures", "keras")
  csv <- function(f) unname(as.matrix(utils::read.csv(file.path(dir, f), header = FALSE)))
  two <- load_model(file.path(dir, "func_two_io.keras"))
  xs <- list(csv("func_two_io_x1.csv"), csv("func_two_io_x2.csv"))
  p <- predict(two, xs, verbose = 0)
  expect_equal(p[[1]], csv("func_two_io_y1.csv"), tolerance = 1e-5)
  expect_equal(p[[2]], csv("func_two_io_y2.csv"), tolerance = 1e-5)
  # Its compile config: losses, metrics and weights per output.
  expect_equal(vapply(two$compiled_outputs, function(o) o$weight, 1), c(0.5, 2))
  ev <- evaluate(two, xs, list(matrix(0, 16, 2), rep(1, 16)), verbose = 0)
  expect_equal(ev$loss, 0.5 * ev$reg_loss + 2 * ev$cls_loss, tolerance = 1e-5)
  expect_equal(ev$reg_loss, mean(p[[1]]^2), tolerance = 1e-5)
  shared <- load_model(file.path(dir, "func_shared.keras"))
  expect_length(get_weights(shared), 4)
  expect_equal(predict(shared, list(csv("func_shared_x1.csv"), csv("func_shared_x2.csv")), verbose = 0),
               csv("func_shared_y1.csv"), tolerance = 1e-5)
})

test_that("named outputs (Keras' dict outputs) round-trip and load from Keras", {
  dir <- test_path("fixtures", "keras")
  csv <- function(f) unname(as.matrix(utils::read.csv(file.path(dir, f), header = FALSE)))
  m <- load_model(file.path(dir, "func_dict_outputs.keras"))
  x <- csv("func_dict_outputs_x1.csv")
  p <- predict(m, x, verbose = 0)
  expect_named(p, c("p", "q"))
  expect_equal(p$p, csv("func_dict_outputs_p.csv"), tolerance = 1e-5)
  expect_equal(p$q, csv("func_dict_outputs_q.csv"), tolerance = 1e-5)
  expect_equal(vapply(m$compiled_outputs, function(o) o$weight, 1), c(1, 3))
  path <- tempfile(fileext = ".keras")
  save_model(m, path)
  expect_named(keras_file_config(path)$config$output_layers, c("p", "q"))
  back <- load_model(path)
  expect_equal(predict(back, x, verbose = 0), p, tolerance = 1e-6)
  y <- list(q = matrix(0, 16, 1), p = matrix(0, 16, 2))
  expect_equal(evaluate(back, x, y, verbose = 0), evaluate(m, x, y, verbose = 0), tolerance = 1e-6)
})

