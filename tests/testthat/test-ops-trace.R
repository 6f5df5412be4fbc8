# Tracing R functions written with op_* into graphs (docs/traced-graphs.md
# §2): the JSON and shapes of a traced loss, R's operators and `[` on traced
# tensors, and the trace errors that name the user's line.

test_that("a traced MSE gives the graph's JSON, its shapes and the value of plain R", {
  mse <- function(y_true, y_pred) op_mean(op_square(y_true - y_pred), axis = -1)
  tr <- trace_fn(mse, shapes = list(c(NA, 3), c(NA, 3)))
  g <- tr$graph
  expect_equal(length(g$nodes), 3)
  expect_equal(vapply(g$nodes, `[[`, "", "op"), c("subtract", "square", "mean"))
  expect_equal(g$nodes[[3]]$attrs, list(axis = -1L, keepdims = FALSE))
  expect_match(tr$json, '"inputs": [{"shape": [null, 3]}, {"shape": [null, 3]}]', fixed = TRUE)
  expect_match(tr$json, '{"op": "subtract", "in": [["input", 0], ["input", 1]]', fixed = TRUE)
  expect_match(tr$json, '"outputs": [["node", 2]]', fixed = TRUE)
  expect_equal(tr$outputs, list(list(shape = NA_integer_, dtype = "float32")))
  yt <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  yp <- matrix(c(1.5, 2, 3, 4, 5, 7), 2)
  expect_equal(as.vector(eval_graph(tr, yt, yp)), rowMeans((yt - yp)^2), tolerance = 1e-6)
  # d/dy_pred of mean((t - p)^2) = 2 (p - t) / 3
  g <- mirrored:::cpp_traced_vjp(tr$json, list(yt, yp), list(), list(c(1, 1)))$inputs
  expect_equal(g[[2]], 2 * (yp - yt) / 3, tolerance = 1e-6)
  expect_equal(g[[1]], -2 * (yp - yt) / 3, tolerance = 1e-6)
})

test_that("traced tensors print like keras3's KerasTensor and give their shape with dim()", {
  seen <- NULL
  f <- function(y_true, y_pred) {
    seen <<- list(out = capture.output(print(y_pred)), dim = dim(y_pred),
                  sum_dim = dim(op_sum(y_pred, axis = 2)), lengths = length(op_sum(y_pred)),
                  rank1 = format(op_sum(y_pred, axis = 2)), rank0 = format(op_argmax(op_sum(y_pred, axis = 1))))
    y_pred
  }
  trace_fn(f, shapes = list(c(NA, 4), c(NA, 4)))
  expect_equal(seen$out, "<KerasTensor shape=(None, 4), dtype=float32>")
  expect_equal(seen$dim, c(NA, 4L))
  expect_equal(seen$sum_dim, NA_integer_)
  expect_equal(seen$lengths, 1L)
  expect_equal(seen$rank1, "<KerasTensor shape=(None,), dtype=float32>")
  expect_equal(seen$rank0, "<KerasTensor shape=(), dtype=int32>")
})

test_that("R's operators on traced tensors are the graph's ops and R numbers become constants", {
  f <- function(a, b) (a * 2 + b) / (1 - b) ^ 2 - -a
  tr <- trace_fn(f, shapes = list(c(NA, 2), c(NA, 2)))
  expect_equal(vapply(tr$graph$nodes, `[[`, "", "op"),
               c("multiply", "add", "subtract", "power", "divide", "negative", "subtract"))
  expect_equal(tr$graph$constants[[1]]$values, I(2))
  a <- matrix(c(0.5, -1, 2, 3), 2)
  b <- matrix(c(0.1, 0.2, -0.3, 0.4), 2)
  expect_equal(eval_graph(tr, a, b), (a * 2 + b) / (1 - b)^2 + a, tolerance = 1e-6)
  cmp <- function(a, b) list(a > b, a <= 0.5, a == b, a != b, !(a < b), (a > 0) & (b > 0), (a > 0) | (b > 0))
  for (k in 1:7) {
    tk <- trace_fn(function(a, b) cmp(a, b)[[k]], shapes = list(c(NA, 2), c(NA, 2)))
    expect_equal(eval_graph(tk, a, b), cmp(a, b)[[k]] + 0, info = paste("comparison", k))
  }
  tr2 <- trace_fn(function(a, b) sqrt(abs(a)) + exp(b) + log(abs(a) + 1) + log1p(abs(b)) + tanh(a) + sign(b) +
                    log(abs(a) + 1, base = 2),
                  shapes = list(c(NA, 2), c(NA, 2)))
  expect_equal(eval_graph(tr2, a, b), sqrt(abs(a)) + exp(b) + log(abs(a) + 1) + log1p(abs(b)) + tanh(a) + sign(b) +
                 log(abs(a) + 1, base = 2), tolerance = 1e-6)
  tr3 <- trace_fn(function(a, b) sum(a) + max(b) - min(a) + mean(b), shapes = list(c(NA, 2), c(NA, 2)))
  expect_equal(eval_graph(tr3, a, b), sum(a) + max(b) - min(a) + mean(b), tolerance = 1e-6)
})

test_that("a traced sparse cross-entropy from logits matches plain R, with its gradient", {
  sce <- function(y_true, y_pred) {
    -op_take_along_axis(op_log_softmax(y_pred), y_true, axis = -1, zero_indexed = TRUE)
  }
  tr <- trace_fn(sce, shapes = list(c(NA, 1), c(NA, 4)))
  expect_equal(vapply(tr$graph$nodes, `[[`, "", "op"), c("log_softmax", "take_along_axis", "negative"))
  expect_equal(tr$graph$nodes[[2]]$attrs, list(axis = -1L))
  expect_equal(tr$outputs[[1]]$shape, c(NA, 1L))
  logits <- matrix(c(1, 2, 0.5, -1, 3, 0, 2, 2), 2)
  ids <- matrix(c(2, 0), 2)
  ref <- vapply(1:2, function(i) {
    z <- logits[i, ]
    log(sum(exp(z))) - z[ids[i] + 1]
  }, 0)
  expect_equal(as.vector(eval_graph(tr, ids, logits)), ref, tolerance = 1e-6)
  expect_grad_fd(sce, ids, logits, wrt = 2)
})

test_that("`[` on traced tensors slices non-batch axes with keras3's 1-based semantics", {
  x <- array(seq_len(2 * 3 * 4) / 10, c(2, 3, 4))
  cases <- list(
    list(function(t) t[, 2, ], function(v) v[, 2, ]),
    list(function(t) t[, 2:3, 4], function(v) v[, 2:3, 4]),
    list(function(t) t[, , -1], function(v) v[, , 4]),
    list(function(t) t[, 1:2, 2:4], function(v) v[, 1:2, 2:4, drop = FALSE]))
  for (k in seq_along(cases)) {
    tr <- trace_fn(cases[[k]][[1]], shapes = list(c(NA, 3, 4)))
    expect_equal(eval_graph(tr, x), cases[[k]][[2]](x), tolerance = 1e-6, info = paste("case", k))
  }
  expect_grad_fd(function(t) t[, 2:3, 4], x)
  expect_error(trace_fn(function(t) t[1, 2, 3], shapes = list(c(NA, 3, 4))),
               class = "mirrored_trace_error", regexp = "batch axis")
  expect_error(trace_fn(function(t) t[, c(1, 3), 1], shapes = list(c(NA, 3, 4))),
               class = "mirrored_trace_error", regexp = "contiguous")
  expect_error(trace_fn(function(t) t[, 4, 1], shapes = list(c(NA, 3, 4))),
               class = "mirrored_trace_error", regexp = "out of range")
})

# The user's functions below live in a parsed file with source references,
# so that the errors name their lines.
trace_src <- function(text) {
  exprs <- parse(text = text, keep.source = TRUE, srcfile = srcfilecopy("user-loss.R", text))
  eval(exprs[[1]], globalenv())
}

test_that("trace errors name the user's function, line and why", {
  yp <- list(list(shape = c(NA, 3)), list(shape = c(NA, 3)))
  tg <- function(fn) mirrored:::trace_function(fn, yp, what = "the loss function `my_loss`", call = NULL)
  f_if <- trace_src("function(y_true, y_pred) {\n  a <- 1\n  if (y_pred > 0) y_pred else -y_pred\n}")
  e <- expect_error(tg(f_if), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "the loss function `my_loss`, at user-loss.R#3: if (y_pred > 0)", fixed = TRUE)
  expect_match(conditionMessage(e), "`if` reads the value of a traced tensor", fixed = TRUE)
  f_num <- trace_src("function(y_true, y_pred) {\n  v <- as.numeric(y_pred)\n  v\n}")
  e <- expect_error(tg(f_num), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "user-loss.R#2: as.numeric(y_pred)", fixed = TRUE)
  expect_match(conditionMessage(e), "as.numeric() reads the value", fixed = TRUE)
  f_col <- trace_src("function(y_true, y_pred) {\n\n  colSums(y_pred)\n}")
  e <- expect_error(tg(f_col), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "user-loss.R#3: colSums(y_pred)", fixed = TRUE)
  expect_match(conditionMessage(e), "`colSums()` is not an op", fixed = TRUE)
  f_cum <- trace_src("function(y_true, y_pred) cumsum(y_pred)")
  e <- expect_error(tg(f_cum), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "user-loss.R#1: cumsum(y_pred): `cumsum()` is not an op", fixed = TRUE)
  f_len <- trace_src("function(y_true, y_pred) {\n  n <- length(y_pred)\n  y_pred / n\n}")
  e <- expect_error(tg(f_len), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "user-loss.R#2: length(y_pred): length() of a tensor with a batch axis", fixed = TRUE)
  f_ret <- trace_src("function(y_true, y_pred) 0")
  e <- expect_error(tg(f_ret), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "must return a tensor", fixed = TRUE)
  # A shape error of the core names the op's node and the user's line.
  f_shape <- trace_src("function(y_true, y_pred) {\n  h <- y_true * 2\n  op_matmul(h, matrix(1, 4, 2))\n}")
  e <- expect_error(tg(f_shape), class = "mirrored_shape_error")
  expect_s3_class(e, "mirrored_trace_error")
  expect_match(conditionMessage(e), "user-loss.R#3: op_matmul(h, matrix(1, 4, 2))", fixed = TRUE)
  expect_match(conditionMessage(e), "do not multiply", fixed = TRUE)
  f_arg <- trace_src("function(y_true, y_pred) op_mean(y_pred, axs = 2)")
  e <- expect_error(tg(f_arg), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "`op_mean()`: unused argument (axs = 2)", fixed = TRUE)
  # Without source references the line is the deparsed call.
  f_plain <- eval(parse(text = "function(y_true, y_pred) as.logical(y_pred)", keep.source = FALSE)[[1]])
  e <- expect_error(tg(f_plain), class = "mirrored_trace_error")
  expect_match(conditionMessage(e), "at as.logical(y_pred): as.logical() reads", fixed = TRUE)
})

test_that("trace_function() takes weights the function closes over, and returns an input or a weight as an output", {
  wt <- list(list(name = "kernel", shape = c(3L, 2L),
                  initializer = list(class_name = "Zeros", config = setNames(list(), character())),
                  trainable = TRUE))
  ti <- mirrored:::trace_function(function(x) x, list(list(shape = c(NA, 3))), what = "t", call = NULL)
  expect_equal(ti$graph$outputs, list(list("input", 0L)))
  self <- new.env()
  wt[[1]]$bind <- function(t) self$kernel <- t
  tr <- mirrored:::trace_function(function(x) op_relu(op_matmul(x, self$kernel)),
                               list(list(shape = c(NA, 3))), weights = wt, what = "t", call = NULL)
  expect_equal(tr$graph$weights[[1]]$name, "kernel")
  expect_equal(vapply(tr$graph$nodes, `[[`, "", "op"), c("matmul", "relu"))
  expect_equal(tr$graph$nodes[[1]]$`in`, list(list("input", 0L), list("weight", 0L)))
  expect_equal(tr$outputs[[1]]$shape, c(NA, 2L))
  x <- matrix(c(1, -2, 0.5, 3, 1, -1), 2)
  k <- matrix(c(0.1, 0.2, -0.3, 0.4, 0.5, -0.6), 3)
  y <- mirrored:::cpp_traced_eval(tr$json, list(x), list(k))[[1]]
  expect_equal(y, pmax(x %*% k, 0), tolerance = 1e-6)
  gw <- mirrored:::cpp_traced_vjp(tr$json, list(x), list(k), list(matrix(1, 2, 2)))$weights[[1]]
  expect_equal(gw, t(x) %*% ((x %*% k > 0) * 1), tolerance = 1e-6)
  tw <- mirrored:::trace_function(function(x) self$kernel, list(list(shape = c(NA, 3))), weights = wt,
                               what = "t", call = NULL)
  expect_equal(tw$graph$nodes[[1]]$op, "reshape")
})
