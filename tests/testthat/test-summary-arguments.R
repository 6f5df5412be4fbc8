# summary()'s keras3 arguments against Keras 3's own output
# (fixtures/keras/summary_*.txt, tools/make-keras-fixtures-summary.py).

summary_fixture <- function(name) {
  readLines(test_path("fixtures", "keras", paste0("summary_", name, ".txt")), encoding = "UTF-8")
}

nested_models <- function() {
  inner <- keras_model_sequential(input_shape = 4, name = "inner") |>
    layer_dense(3, name = "inner_dense") |> layer_batch_normalization(name = "bn")
  outer <- keras_model_sequential(input_shape = 4, name = "outer", layers = list(inner))
  outer |> layer_dense(2, name = "head")
  freeze_weights(outer, from = "head")
  outer
}

test_that("expand_nested and show_trainable print what Keras 3 prints", {
  out <- capture.output(summary(nested_models(), line_length = 100, expand_nested = TRUE,
                                show_trainable = TRUE))
  expect_identical(out, summary_fixture("expand_trainable"))
})

test_that("positions and line_length set the columns as in Keras 3", {
  out <- capture.output(summary(nested_models(), line_length = 70, positions = c(0.5, 0.8, 1)))
  expect_identical(out, summary_fixture("positions"))
})

test_that("layer_range lists the named layers and the whole model's totals", {
  inp <- keras_input(4, name = "x")
  out <- inp |> layer_dense(3, name = "a") |> layer_dense(3, name = "b") |> layer_dense(1, name = "c")
  f <- keras_model(inp, out, name = "f")
  got <- capture.output(summary(f, layer_range = c("a", "b"), show_trainable = TRUE, line_length = 110))
  expect_identical(got, summary_fixture("layer_range"))
})

test_that("summary()'s arguments are checked", {
  m <- nested_models()
  expect_error(summary(m, layer_range = c("a", "zz")), class = "mirrored_value_error")
  expect_error(summary(m, positions = c(0.8, 0.5, 1)), class = "mirrored_value_error")
  expect_error(summary(m, positions = c(0.5, 1)), class = "mirrored_value_error")
  expect_error(summary(m, show_trainable = "yes"), class = "mirrored_value_error")
  expect_error(summary(m, expand_nested = NA), class = "mirrored_value_error")
  expect_error(summary(m, bogus = 1), class = "mirrored_value_error")
  # NA (keras3's default): the column when some weights are non-trainable.
  expect_true(any(grepl("Trainab", capture.output(summary(m, show_trainable = NA)))))
})
