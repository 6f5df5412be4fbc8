# Models nested as layers: callable models, their weights (shared between
# calls, started from the inner model's), summary()/model$layers, the 1 vs 3
# replica equivalence, .keras files in Keras 3's layout and Keras-written
# fixtures. References are plain-R computations in double precision.

dense_ref <- function(x, w, b) sweep(x %*% w, 2, b, "+")
relu <- function(z) pmax(z, 0)

test_that("models are callable functions that keep working as models", {
  i <- keras_input(shape = 3, name = "nm_in")
  inner <- keras_model(i, layer_dense(i, units = 2, name = "nm_d"), name = "nm_inner")
  expect_true(is.function(inner))
  expect_s3_class(inner, "mirrored_model")
  expect_s3_class(inner, "mirrored_functional")
  expect_equal(inner$name, "nm_inner")
  expect_length(inner$layers, 2)
  expect_output(print(inner), "nm_inner")
  inner$stop_training <- TRUE
  expect_true(inner$stop_training)
  inner$stop_training <- FALSE
  x <- keras_input(shape = 3)
  y <- inner(x)
  expect_equal(dim(y), c(NA, 2L))
  seq <- keras_model_sequential(input_shape = 2, name = "nm_seq") |> layer_dense(units = 1, name = "nm_sd")
  expect_s3_class(seq, "mirrored_sequential")
  expect_equal(dim(seq(y)), c(NA, 1L))
})

test_that("a nested model predicts what its layers compute by hand", {
  set_random_seed(3)
  i <- keras_input(shape = 3, name = "hb_in")
  h <- layer_dense(i, units = 4, activation = "relu", name = "hb_h")
  inner <- keras_model(i, layer_dense(h, units = 2, name = "hb_o"), name = "hb_inner")
  x <- keras_input(shape = 3, name = "hb_x")
  out <- layer_dense(inner(x), units = 1, name = "hb_head")
  outer <- keras_model(x, out, name = "hb_outer")
  w <- get_weights(outer)
  expect_length(w, 6)
  set.seed(2)
  xx <- matrix(rnorm(30), 10)
  ref <- dense_ref(dense_ref(relu(dense_ref(xx, w[[1]], w[[2]])), w[[3]], w[[4]]), w[[5]], w[[6]])
  expect_equal(predict(outer, xx, verbose = 0), ref, tolerance = 1e-5)
  # The inner model and the outer one start from the same weights.
  expect_equal(get_weights(inner), w[1:4])
  expect_equal(predict(inner, xx, verbose = 0),
               dense_ref(relu(dense_ref(xx, w[[1]], w[[2]])), w[[3]], w[[4]]), tolerance = 1e-5)
  # In a sequential model, added or given in `layers`.
  s1 <- keras_model_sequential(input_shape = 3, name = "hb_s1")
  s1$add(inner)
  s1$add(layer_dense(units = 1, name = "hb_s1d"))
  s2 <- keras_model_sequential(layers = list(inner, layer_dense(units = 1, name = "hb_s2d")), name = "hb_s2")
  for (s in list(s1, s2)) {
    ws <- get_weights(s)
    expect_equal(ws[1:4], w[1:4])
    expect_equal(predict(s, xx, verbose = 0),
                 dense_ref(dense_ref(relu(dense_ref(xx, w[[1]], w[[2]])), w[[3]], w[[4]]), ws[[5]], ws[[6]]),
                 tolerance = 1e-5)
    expect_length(s$layers, 2)
    expect_s3_class(s$layers[[1]], "mirrored_functional")
    expect_equal(s$layers[[1]]$name, "hb_inner")
  }
})

test_that("summary() and model$layers show a nested model as one layer, as Keras prints it", {
  i <- keras_input(shape = 3, name = "sm_in")
  inner <- keras_model(i, layer_dense(layer_dense(i, units = 4, name = "sm_d1"), units = 2, name = "sm_d2"),
                       name = "smi")
  head <- keras_model_sequential(input_shape = 2, name = "smh") |> layer_dense(units = 2, name = "sm_s1")
  x <- keras_input(shape = 3, name = "sx")
  z <- head(layer_add(list(inner(x), inner(x)), name = "sm_add"))
  outer <- keras_model(x, z, name = "sm_outer")
  expect_equal(vapply(outer$layers, function(l) l$name, ""), c("sx", "smi", "sm_add", "smh"))
  expect_identical(outer$layers[[2]], inner)
  expect_identical(outer$layers[[4]], head)
  out <- capture.output(summary(outer))
  # Keras 3.15.1 prints these rows for the same model (its table wraps the
  # same way).
  at <- function(text) grep(text, out, fixed = TRUE)[1]
  expect_match(out[at("smi (Functional)")], "│ \\(None, 2\\) +│ +26 │ sx\\[0\\]\\[0\\],")
  expect_match(out[at("smi (Functional)") + 1], "│ sx\\[0\\]\\[0\\] +│$")
  expect_match(out[at("smh (Sequential)")], "│ \\(None, 2\\) +│ +6 │ sm_add\\[0\\]\\[0\\]")
  expect_match(out[at("sm_add (Add)")], "smi\\[0\\]\\[0\\],")
  expect_match(out[at("sm_add (Add)") + 1], "smi\\[1\\]\\[0\\]")
  expect_true(any(grepl("Total params: 32 ", out, fixed = TRUE)))
  expect_equal(outer$output_names, "smh")
  # A sequential model holding a model: no "Connected to" column.
  s <- keras_model_sequential(input_shape = 3, name = "sm_seq", layers = list(inner, layer_dense(units = 1, name = "sm_o")))
  out <- capture.output(summary(s))
  expect_match(out[at("smi (Functional)")], "│ \\(None, 2\\) +│ +26 │$")
  expect_false(any(grepl("Connected to", out)))
})

test_that("a model called twice has one set of weights and sums both calls' gradients", {
  set_random_seed(5)
  i <- keras_input(shape = 3, name = "tw_in")
  inner <- keras_model(i, layer_dense(i, units = 2, name = "tw_d"), name = "tw_inner")
  x1 <- keras_input(shape = 3, name = "tw_x1")
  x2 <- keras_input(shape = 3, name = "tw_x2")
  outer <- keras_model(list(x1, x2), layer_add(list(inner(x1), inner(x2)), name = "tw_add"), name = "tw_outer")
  w0 <- get_weights(outer)
  expect_length(w0, 2)
  expect_true(any(grepl("Total params: 8 ", capture.output(summary(outer)), fixed = TRUE)))
  set.seed(4)
  n <- 6
  a <- matrix(rnorm(n * 3), n); b <- matrix(rnorm(n * 3), n); y <- matrix(rnorm(n * 2), n)
  lr <- 0.1
  outer |> compile(optimizer = optimizer_sgd(learning_rate = lr), loss = "mse")
  fit(outer, list(a, b), y, batch_size = n, epochs = 1, shuffle = FALSE, verbose = 0)
  # out = (a + b) W + 2 b0; mse over n x 2 values: dL/dout = 2 (out - y) / (2 n).
  out <- dense_ref(a + b, w0[[1]], 2 * w0[[2]])
  g_out <- 2 * (out - y) / (n * 2)
  gw <- t(a + b) %*% g_out
  gb <- 2 * colSums(g_out)
  w1 <- get_weights(outer)
  expect_equal(w1[[1]], w0[[1]] - lr * gw, tolerance = 1e-5)
  expect_equal(as.numeric(w1[[2]]), as.numeric(w0[[2]] - lr * gb), tolerance = 1e-5)
  # After fit() the inner model object holds the trained weights.
  expect_equal(get_weights(inner), w1)
})

test_that("a trained model nested in a new one keeps what it learned (transfer learning)", {
  set_random_seed(8)
  base <- keras_model_sequential(input_shape = 4, name = "tl_base") |>
    layer_dense(units = 3, activation = "relu", name = "tl_d")
  base |> compile(optimizer = optimizer_sgd(0.1), loss = "mse")
  set.seed(8)
  xx <- matrix(rnorm(40), 10)
  fit(base, xx, matrix(rnorm(30), 10), epochs = 3, verbose = 0)
  trained <- get_weights(base)
  x <- keras_input(shape = 4, name = "tl_x")
  model <- keras_model(x, layer_dense(base(x), units = 1, name = "tl_head"), name = "tl_model")
  w <- get_weights(model)
  expect_equal(w[1:2], trained)
  expect_equal(predict(model, xx, verbose = 0),
               dense_ref(relu(dense_ref(xx, trained[[1]], trained[[2]])), w[[3]], w[[4]]), tolerance = 1e-5)
  # Training the new model does not move the base model while it runs; at
  # the end of fit() the base model holds the new weights.
  model |> compile(optimizer = optimizer_sgd(0.1), loss = "mse")
  fit(model, xx, matrix(rnorm(10), 10), epochs = 2, verbose = 0)
  expect_false(isTRUE(all.equal(get_weights(model)[1:2], trained)))
  expect_equal(get_weights(base), get_weights(model)[1:2])
})

test_that("training a model holding models is the same on 1 and 3 replicas", {
  run <- function(devices) {
    set_random_seed(12)
    strategy <- mirrored_strategy(devices = devices)
    with(strategy$scope(), {
      i <- keras_input(shape = 4, name = "rp_in")
      inner <- keras_model(i, layer_dense(i, units = 3, activation = "tanh", name = "rp_d"), name = "rp_inner")
      head <- keras_model_sequential(input_shape = 3, name = "rp_head") |> layer_dense(units = 2, name = "rp_h")
      a <- keras_input(shape = 4, name = "rp_a")
      b <- keras_input(shape = 4, name = "rp_b")
      model <- keras_model(list(a, b), head(layer_add(list(inner(a), inner(b)))), name = "rp_model")
    })
    model |> compile(optimizer = optimizer_adam(0.01), loss = "mse")
    set.seed(1)
    n <- 17  # batches of 8, 8 and 1: on 3 replicas the last leaves two with no rows
    xa <- matrix(rnorm(n * 4), n); xb <- matrix(rnorm(n * 4), n)
    h <- fit(model, list(xa, xb), matrix(rnorm(n * 2), n), batch_size = 8, epochs = 3, shuffle = FALSE, verbose = 0)
    list(w = get_weights(model), loss = h$metrics$loss)
  }
  one <- run("/cpu:0")
  three <- run(c("/cpu:0", "/cpu:1", "/cpu:2"))
  expect_length(one$w, 4)
  for (k in seq_along(one$w)) expect_lt(max(abs(one$w[[k]] - three$w[[k]])), 1e-5)
  expect_equal(one$loss, three$loss, tolerance = 1e-5)
})

test_that("models holding models round-trip through .keras files in Keras 3's layout", {
  set_random_seed(9)
  i <- keras_input(shape = 3, name = "rt_in")
  h <- layer_dense(i, units = 4, activation = "relu", name = "rt_h")
  inner <- keras_model(i, list(layer_dense(h, units = 2, name = "rt_a"), layer_dense(h, units = 1, name = "rt_b")),
                       name = "rt_inner")
  head <- keras_model_sequential(input_shape = 2, name = "rt_head") |> layer_dense(units = 2, name = "rt_s")
  x <- keras_input(shape = 3, name = "rt_x")
  x2 <- keras_input(shape = 3, name = "rt_x2")
  o1 <- inner(x)
  o2 <- inner(x2)
  model <- keras_model(list(x, x2), list(head(layer_add(list(o1[[1]], o2[[1]]), name = "rt_add")), o2[[2]]),
                       name = "rt_model")
  model |> compile(optimizer = optimizer_adam(0.01), loss = list("mse", "mse"))
  set.seed(9)
  xa <- matrix(rnorm(24), 8); xb <- matrix(rnorm(24), 8)
  fit(model, list(xa, xb), list(matrix(rnorm(16), 8), matrix(rnorm(8), 8)), epochs = 2, verbose = 0)
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  cfg <- mirrored:::parse_json_bytes(mirrored:::read_keras_source(path)$members[["config.json"]], "config.json")$config
  entry <- cfg$layers[[3]]
  expect_equal(entry$class_name, "Functional")
  expect_equal(entry$registered_name, "Functional")
  expect_equal(entry$name, "rt_inner")
  expect_length(entry$config$layers, 4)
  expect_length(entry$inbound_nodes, 2)
  expect_equal(entry$inbound_nodes[[2]]$args[[1]]$config$keras_history, list("rt_x2", 0L, 0L))
  expect_equal(cfg$layers[[5]]$class_name, "Sequential")
  # Keras counts a nested Functional model's calls from 1 in output_layers.
  expect_equal(cfg$output_layers, list(list("rt_head", 0L, 0L), list("rt_inner", 2L, 1L)))
  back <- load_model(path)
  p <- predict(model, list(xa, xb), verbose = 0)
  expect_equal(predict(back, list(xa, xb), verbose = 0), p, tolerance = 1e-6)
  expect_equal(get_weights(back), get_weights(model))
  # The loaded nested model object holds the loaded weights.
  expect_equal(get_weights(back$layers[[3]]), get_weights(model)[1:6])
  expect_equal(capture.output(summary(back))[-1], capture.output(summary(model))[-1])
  # Weights files nest the same way, and load back.
  wpath <- tempfile(fileext = ".weights.h5")
  save_model_weights(model, wpath)
  set_random_seed(1)
  fresh <- load_model(path)
  fresh$set_weights(lapply(get_weights(fresh), function(w) w * 0))
  load_model_weights(fresh, wpath)
  expect_equal(get_weights(fresh), get_weights(model))
  # A sequential model holding a sequential model.
  s <- keras_model_sequential(input_shape = 3, name = "rt_outer_seq", layers = list(
    keras_model_sequential(name = "rt_body") |> layer_dense(units = 4, name = "rt_bd"),
    layer_dense(units = 1, name = "rt_od")))
  spath <- tempfile(fileext = ".keras")
  save_model(s, spath)
  sb <- load_model(spath)
  expect_equal(predict(sb, xa, verbose = 0), predict(s, xa, verbose = 0), tolerance = 1e-6)
  expect_equal(sb$layers[[1]]$name, "rt_body")
})

test_that("Keras-written models holding models load and predict as Keras does", {
  dir <- test_path("fixtures", "keras")
  csv <- function(f) unname(as.matrix(utils::read.csv(file.path(dir, f), header = FALSE)))
  # tools/make-keras-func-fixtures.py: a Functional model of two outputs
  # called twice and a Sequential one, nested in a Functional model.
  m <- load_model(file.path(dir, "func_nested.keras"))
  expect_equal(vapply(m$layers, function(l) l$name, ""), c("x", "x2", "inner", "add", "head"))
  expect_length(get_weights(m), 8)
  p <- predict(m, list(csv("func_nested_x1.csv"), csv("func_nested_x2.csv")), verbose = 0)
  expect_equal(p[[1]], csv("func_nested_y1.csv"), tolerance = 1e-5)
  expect_equal(p[[2]], csv("func_nested_y2.csv"), tolerance = 1e-5)
  s <- load_model(file.path(dir, "func_nested_seq.keras"))
  expect_equal(s$layers[[1]]$name, "body")
  expect_equal(predict(s, csv("func_nested_seq_x1.csv"), verbose = 0), csv("func_nested_seq_y1.csv"),
               tolerance = 1e-5)
})

test_that("calling a model on the wrong inputs is a classed error naming the model", {
  i1 <- keras_input(shape = 3, name = "er_in1")
  i2 <- keras_input(shape = 2, name = "er_in2")
  two <- keras_model(list(i1, i2), layer_add(list(layer_dense(i1, units = 1, name = "er_d"),
                                                   layer_dense(i2, units = 1, name = "er_d2"))), name = "er_two")
  i <- keras_input(shape = 3, name = "er_in")
  one <- keras_model(i, layer_dense(i, units = 2, name = "er_d1"), name = "er_one")
  x <- keras_input(shape = 3)
  e <- expect_error(one(keras_input(shape = 4)), class = "mirrored_shape_error")
  expect_match(conditionMessage(e), "er_one")
  expect_match(conditionMessage(e), "\\(None, 4\\)")
  e <- expect_error(two(x), class = "mirrored_value_error")
  expect_match(conditionMessage(e), "takes 2 inputs")
  expect_error(two(list(x, keras_input(shape = 5))), class = "mirrored_shape_error")
  expect_equal(dim(one(matrix(1, 2, 3))), c(2L, 2L))
  expect_error(one(matrix(1, 2, 4)), class = "mirrored_error")
  expect_error(one(1:3), class = "mirrored_value_error")
  expect_error(one(x, training = TRUE), class = "mirrored_not_yet_error")
  expect_error(keras_model_sequential(input_shape = 3, layers = list(two)), class = "mirrored_value_error")
  s <- keras_model_sequential(input_shape = 3, name = "er_seq") |> layer_dense(units = 2, name = "er_sd")
  expect_error(s$add(s), class = "mirrored_value_error")
  expect_error(keras_model_sequential(input_shape = 4, layers = list(one)), class = "mirrored_shape_error")
  passthrough <- keras_model(i, list(i, layer_dense(i, units = 1, name = "er_pd")), name = "er_pass")
  expect_error(passthrough(x), class = "mirrored_not_yet_error")
})

test_that("layers of nested models are named within their model, as in Keras", {
  set_random_seed(6)
  mk <- function(nm) {
    i <- keras_input(shape = 3, name = paste0(nm, "_in"))
    keras_model(i, layer_dense(i, units = 2, name = "ns_same"), name = nm)
  }
  a <- mk("ns_a")
  b <- mk("ns_b")
  x <- keras_input(shape = 3, name = "ns_x")
  m <- keras_model(x, layer_add(list(a(x), b(x)), name = "ns_add"), name = "ns_m")
  set.seed(6)
  xx <- matrix(rnorm(12), 4)
  expect_equal(predict(m, xx, verbose = 0), predict(a, xx, verbose = 0) + predict(b, xx, verbose = 0),
               tolerance = 1e-5)
  path <- tempfile(fileext = ".keras")
  save_model(m, path)
  expect_equal(predict(load_model(path), xx, verbose = 0), predict(m, xx, verbose = 0), tolerance = 1e-6)
  # Two different layers (or models) of the same model still need two names.
  d <- layer_dense(units = 2, name = "ns_a")
  expect_error(keras_model(x, layer_add(list(a(x), d(x)))), class = "mirrored_value_error")
})

test_that("models nest at several levels (weights, fit, files, configs)", {
  set_random_seed(2)
  i <- keras_input(shape = 3, name = "dp_in1")
  m1 <- keras_model(i, layer_dense(i, units = 2, activation = "tanh", name = "dp_d1"), name = "dp_l1")
  j <- keras_input(shape = 3, name = "dp_in2")
  m2 <- keras_model(j, layer_dense(m1(j), units = 2, name = "dp_d2"), name = "dp_l2")
  x <- keras_input(shape = 3, name = "dp_x")
  m3 <- keras_model(x, layer_dense(m2(x), units = 1, name = "dp_d3"), name = "dp_l3")
  w <- get_weights(m3)
  expect_length(w, 6)
  expect_equal(w[1:4], get_weights(m2))
  expect_equal(w[1:2], get_weights(m1))
  set.seed(2)
  xx <- matrix(rnorm(12), 4)
  ref <- dense_ref(dense_ref(tanh(dense_ref(xx, w[[1]], w[[2]])), w[[3]], w[[4]]), w[[5]], w[[6]])
  expect_equal(predict(m3, xx, verbose = 0), ref, tolerance = 1e-5)
  m3 |> compile(optimizer = "sgd", loss = "mse")
  fit(m3, xx, matrix(rnorm(4), 4), verbose = 0)
  # Both levels below received the trained weights.
  expect_equal(get_weights(m1), get_weights(m3)[1:2])
  expect_equal(get_weights(m2), get_weights(m3)[1:4])
  path <- tempfile(fileext = ".keras")
  save_model(m3, path)
  back <- load_model(path)
  expect_equal(predict(back, xx, verbose = 0), predict(m3, xx, verbose = 0), tolerance = 1e-6)
  expect_equal(back$layers[[2]]$layers[[2]]$name, "dp_l1")
  expect_equal(get_weights(back$layers[[2]]$layers[[2]]), get_weights(m1))
  again <- from_config(get_config(m3))
  expect_equal(vapply(again$layers, function(l) l$name, ""), c("dp_x", "dp_l2", "dp_d3"))
  expect_length(get_weights(again), 6)
})
