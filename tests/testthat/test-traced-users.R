# Traced graphs in the step through the glue (issue 15): graphs written by
# hand as JSON (the R tracer makes them once it lands): a layer from a config
# carrying mirrored_graph, and losses and metrics sent with a `graph` field.

dense_graph <- '{"inputs": [{"shape": [null, 4]}],
  "weights": [{"name": "w", "shape": [4, 3], "initializer": "glorot_uniform", "trainable": true},
              {"name": "b", "shape": [3], "initializer": "zeros", "trainable": true}],
  "nodes": [{"op": "matmul", "in": [["input", 0], ["weight", 0]]},
            {"op": "add", "in": [["node", 0], ["weight", 1]]},
            {"op": "relu", "in": [["node", 1]]}],
  "outputs": [["node", 2]]}'
mse_graph <- '{"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "subtract", "in": [["input", 1], ["input", 0]]},
            {"op": "square", "in": [["node", 0]]},
            {"op": "mean", "in": [["node", 1]], "attrs": {"axis": -1}}],
  "outputs": [["node", 2]]}'
mae_graph <- '{"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}],
  "nodes": [{"op": "subtract", "in": [["input", 0], ["input", 1]]},
            {"op": "abs", "in": [["node", 0]]},
            {"op": "mean", "in": [["node", 1]], "attrs": {"axis": -1}}],
  "outputs": [["node", 2]]}'

# Sends `model`'s compile settings again with output 1's loss and metric
# `metric` (by position) replaced by traced graphs (JSON text; NULL: kept).
compile_traced <- function(model, loss = NULL, metric = NULL, at = 1L) {
  outputs <- mirrored:::outputs_core_spec(model)
  if (!is.null(loss)) outputs[[1]]$loss <- list(name = "custom_loss", graph = loss)
  if (!is.null(metric)) outputs[[1]]$metrics[[at]]$graph <- metric
  mirrored:::with_core(mirrored:::cpp_model_compile(model$ptr(), model$optimizer$core_spec(),
                                                    outputs, mirrored:::model_frozen_nodes(model), FALSE))
}

traced_data <- function() {
  x <- matrix(cos(seq_len(40 * 4) * 0.37), 40, 4)
  y <- matrix(sin(seq_len(40 * 3) * 0.11), 40, 3)
  list(x = x, y = y)
}

dense_mse_model <- function() {
  inp <- keras_input(shape = 4)
  model <- keras_model(inp, layer_dense(inp, 3, activation = "relu"))
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse", metrics = "mae")
}

test_that("a layer whose config carries mirrored_graph runs the graph and trains like Dense", {
  set_random_seed(1)
  layer <- mirrored:::new_layer("Scale", list(units = 3L,
    mirrored_graph = mirrored:::cpp_json_parse(dense_graph, "graph")), list())
  expect_equal(layer$class_name, "Scale")
  expect_named(layer$config, c("name", "trainable", "dtype", "units", "mirrored_graph"))
  inp <- keras_input(shape = 4)
  traced <- keras_model(inp, mirrored:::compose_layer(inp, layer))
  compile(traced, optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse", metrics = "mae")
  dense <- dense_mse_model()
  w0 <- get_weights(dense)
  expect_equal(lapply(get_weights(traced), dim), lapply(w0, dim))
  set_weights(traced, w0)
  d <- traced_data()
  h1 <- fit(dense, d$x, d$y, batch_size = 8, epochs = 2, shuffle = FALSE, verbose = 0)
  h2 <- fit(traced, d$x, d$y, batch_size = 8, epochs = 2, shuffle = FALSE, verbose = 0)
  expect_false(isTRUE(all.equal(get_weights(dense), w0)))
  expect_equal(get_weights(traced), get_weights(dense), tolerance = 1e-6)
  expect_equal(h2$metrics, h1$metrics, tolerance = 1e-6)
  # The graph travels in the config: a .keras file loads it back without R code.
  f <- withr::local_tempfile(fileext = ".keras")
  save_model(traced, f)
  loaded <- load_model(f)
  expect_equal(loaded$layers[[2]]$class_name, "Scale")
  expect_equal(predict(loaded, d$x, verbose = 0), predict(traced, d$x, verbose = 0))
})

test_that("compile's loss and metric lists take a traced graph, on 1 and 2 replicas", {
  set_random_seed(2)
  builtin <- dense_mse_model()
  traced <- dense_mse_model()
  strategy <- suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1")))
  with(strategy$scope(), {
    two <- dense_mse_model()
  })
  w0 <- get_weights(builtin)
  set_weights(traced, w0)
  set_weights(two, w0)
  compile_traced(traced, loss = mse_graph, metric = mae_graph)
  compile_traced(two, loss = mse_graph, metric = mae_graph)
  d <- traced_data()
  w <- seq(0.5, 2, length.out = 40)
  train <- function(m) fit(m, d$x, d$y, sample_weight = w, batch_size = 7, epochs = 2,
                           shuffle = FALSE, verbose = 0)
  h1 <- train(builtin)
  for (m in list(traced, two)) {
    h2 <- train(m)
    expect_equal(get_weights(m), get_weights(builtin), tolerance = 1e-6)
    expect_equal(h2$metrics, h1$metrics, tolerance = 1e-6)
    expect_equal(evaluate(m, d$x, d$y, verbose = 0), evaluate(builtin, d$x, d$y, verbose = 0),
                 tolerance = 1e-6)
  }
  # The graphs are what runs: sums over the 3 columns instead of means give
  # 3 times the built-in loss and metric.
  sum_of <- function(g) sub('"op": "mean"', '"op": "sum"', g, fixed = TRUE)
  compile_traced(traced, loss = sum_of(mse_graph), metric = sum_of(mae_graph))
  want <- evaluate(builtin, d$x, d$y, verbose = 0)
  got <- evaluate(traced, d$x, d$y, verbose = 0)
  expect_equal(unlist(got), 3 * unlist(want), tolerance = 1e-6)
})

test_that("traced graphs that cannot be a loss or a layer are classed errors", {
  model <- dense_mse_model()
  one_input <- '{"inputs": [{"shape": [null, 3]}],
    "nodes": [{"op": "square", "in": [["input", 0]]}], "outputs": [["node", 0]]}'
  expect_error(compile_traced(model, loss = one_input), "custom_loss.*2 inputs",
               class = "mirrored_value_error")
  expect_error(compile_traced(model, loss = "{not json"), class = "mirrored_error")
  unbatched <- '{"inputs": [{"shape": [null, 4]}],
    "nodes": [{"op": "sum", "in": [["input", 0]]}], "outputs": [["node", 0]]}'
  expect_error(mirrored:::new_layer("Scale",
                 list(mirrored_graph = mirrored:::cpp_json_parse(unbatched, "graph")), list()),
               "Scale 'scale.*batch axis", class = "mirrored_shape_error")
})
