# Keras on TensorFlow computes a cross-entropy from the logits of a softmax
# or sigmoid output (Keras' `_keras_logits`): saturated outputs log their
# true loss and keep a gradient. Fixtures: tools/make-keras-fixtures-logits.py
# (Keras 3.15 / TensorFlow), trained step by step in mirrored and compared.

logits_dir <- function() test_path("fixtures", "logits")
read_logits <- function(name, header = FALSE) {
  utils::read.csv(file.path(logits_dir(), paste0(name, ".csv")), header = header, check.names = FALSE)
}
logits_matrix <- function(name) unname(as.matrix(read_logits(name)))

# The R spelling of each case's model, loss and metrics (the script's CASES).
logits_cases <- function() {
  dense <- function(units, act, ...) function(x) layer_dense(x, units, activation = act, ...)
  list(
    softmax_cce = list(dense(3, "softmax"), "categorical_crossentropy", list(metric_categorical_crossentropy())),
    softmax_scce = list(dense(3, "softmax"), "sparse_categorical_crossentropy",
                        list(metric_sparse_categorical_crossentropy(), "accuracy")),
    sigmoid_bce = list(dense(2, "sigmoid"), "binary_crossentropy", list(metric_binary_crossentropy())),
    activation_softmax = list(function(x) x |> layer_dense(3) |> layer_activation("softmax"), "categorical_crossentropy"),
    softmax_layer = list(function(x) x |> layer_dense(3) |> layer_activation_softmax(), "sparse_categorical_crossentropy"),
    sigmoid_cce = list(dense(3, "sigmoid"), "categorical_crossentropy"),
    softmax_bce = list(dense(3, "softmax"), "binary_crossentropy"),
    sigmoid_focal = list(dense(2, "sigmoid"), loss_binary_focal_crossentropy(gamma = 1.5)),
    conv_softmax_seq = list(function(x) layer_conv_1d(x, 3, 2, activation = "softmax"), "sparse_categorical_crossentropy"),
    moderate_softmax_cce = list(dense(3, "softmax"), "categorical_crossentropy"),
    mixed_softmax_cce = list(dense(3, "softmax"), "categorical_crossentropy"),
    mixed_float32_head = list(dense(3, "softmax", dtype = "float32"), "categorical_crossentropy")
  )
}

train_logits_case <- function(case, spec) {
  old <- config_dtype_policy()$name
  config_set_dtype_policy(case$policy)
  on.exit(config_set_dtype_policy(old))
  shape <- as.integer(strsplit(case$shape, " ")[[1]])
  n <- case$rows
  x <- array_reshape(logits_matrix(paste0(case$case, "_x")), c(n, shape))
  input <- keras_input(shape)
  model <- keras_model(input, spec[[1]](input))
  out <- model$output_shape %||% NULL
  y <- logits_matrix(paste0(case$case, "_y"))
  w <- get_weights(model)
  w <- lapply(seq_along(w), function(j) {
    v <- logits_matrix(sprintf("%s_w%d", case$case, j - 1))
    if (is.null(dim(w[[j]]))) as.numeric(v) else array_reshape(v, dim(w[[j]]))
  })
  set_weights(model, w)
  compile(model, optimizer = optimizer_sgd(case$learning_rate), loss = spec[[2]],
          metrics = if (length(spec) > 2) spec[[3]])
  h <- fit(model, x, y, batch_size = n, epochs = case$steps, shuffle = FALSE, verbose = 0)
  list(model = model, history = h)
}

test_that("cross-entropies of softmax and sigmoid outputs take their logits, as Keras on TensorFlow", {
  cases <- utils::read.csv(file.path(logits_dir(), "cases.csv"), stringsAsFactors = FALSE)
  specs <- logits_cases()
  expect_setequal(names(specs), cases$case)
  for (i in seq_len(nrow(cases))) {
    case <- cases[i, ]
    got <- train_logits_case(case, specs[[case$case]])
    want <- read_logits(paste0(case$case, "_history"), header = TRUE)
    expect_setequal(names(got$history$metrics), names(want))
    # Under mixed_float16 TensorFlow's softmax runs in float16 (mirrored's
    # in float32): the clipped losses agree to float16's rounding.
    tol <- if (case$policy == "float32") 1e-5 else 1e-4
    for (key in names(want)) {
      w <- want[[key]]
      g <- got$history$metrics[[key]]
      expect_true(all(abs(g - w) < tol * pmax(1, abs(w))),
                  label = sprintf("%s %s per step: %s vs Keras %s", case$case, key,
                                  paste(format(g, digits = 9), collapse = " "),
                                  paste(format(w, digits = 9), collapse = " ")))
    }
    final <- get_weights(got$model)
    for (j in seq_along(final)) {
      want_w <- as.numeric(t(logits_matrix(sprintf("%s_final%d", case$case, j - 1))))
      got_w <- as.numeric(aperm(array(final[[j]], dim = c(dim(final[[j]]) %||% length(final[[j]])))))
      expect_true(all(abs(got_w - want_w) < 1e-4 * pmax(1, abs(want_w))),
                  label = sprintf("%s weight %d: max difference %g", case$case, j, max(abs(got_w - want_w))))
    }
  }
})

test_that("a saturated softmax keeps its gradient: the logged loss is the true one and training moves", {
  x <- matrix(c(1, -1), 1)
  input <- keras_input(2)
  model <- keras_model(input, input |> layer_dense(2, activation = "softmax", use_bias = FALSE))
  set_weights(model, list(matrix(c(60, -60, -60, 60), 2)))  # logits (120, -120): p = (1, 0)
  compile(model, optimizer = optimizer_sgd(0.01), loss = "sparse_categorical_crossentropy")
  # the wrong class: -log softmax = 240, not the clipped -log(1e-7) = 16.1
  expect_equal(evaluate(model, x, 1, verbose = 0)$loss, 240, tolerance = 1e-6)
  before <- get_weights(model)[[1]]
  fit(model, x, 1, epochs = 1, verbose = 0)
  # d loss / d logits = p - onehot = (1, -1): the kernel moves by 0.01 x x^T (1, -1)
  expect_equal(get_weights(model)[[1]] - before, -0.01 * outer(c(1, -1), c(1, -1)), tolerance = 1e-3)  # float32 weights near 60
  # from_logits = TRUE on a softmax output is what the user asked for: the softmax output is the logits
  compile(model, optimizer = optimizer_sgd(0.01), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  p <- predict(model, x, verbose = 0)
  expect_equal(evaluate(model, x, 1, verbose = 0)$loss, -log(exp(p[2]) / sum(exp(p))), tolerance = 1e-6)
})
