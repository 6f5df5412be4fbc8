# Keras-written models of every layer family (tools/make-keras-fixtures.py,
# files layers_*): each loads, predicts what Keras predicted, and saved again
# by mirrored loads with the same weights, config and predictions.

read_fixture <- function(name) {
  fx <- test_path("fixtures", "keras")
  x <- as.matrix(utils::read.csv(file.path(fx, paste0(name, "_x.csv")), header = FALSE))
  shape <- scan(file.path(fx, paste0(name, "_xshape.txt")), quiet = TRUE)
  if (length(shape) > 1) x <- array_reshape(x, c(nrow(x), shape))
  want <- as.matrix(utils::read.csv(file.path(fx, paste0(name, "_y.csv")), header = FALSE))
  list(model = load_model(file.path(fx, paste0(name, ".keras"))), x = x, want = unname(want))
}

flat_rows <- function(p) unname(matrix(p, nrow = dim(p)[1]))

for (name in c("layers_conv2d", "layers_conv1d", "layers_reshaping", "layers_merging",
               "layers_activations", "layers_normalization", "layers_embedding")) {
  test_that(paste("the Keras-written", name, "model loads and predicts as Keras did"), {
    f <- read_fixture(name)
    got <- flat_rows(predict(f$model, f$x, verbose = 0))
    expect_equal(got, f$want, tolerance = 1e-5)
    path <- tempfile(fileext = ".keras")
    save_model(f$model, path)
    again <- load_model(path)
    expect_identical(get_weights(again), get_weights(f$model))
    expect_identical(get_config(again), get_config(f$model))
    expect_identical(flat_rows(predict(again, f$x, verbose = 0)), got)
  })
}
