# Helpers of the op_* tests: tracing a function on batched inputs, running
# its graph, and checking its gradient against central finite differences.

trace_fn <- function(fn, ..., shapes = NULL, what = "the test function") {
  vals <- list(...)
  shapes <- shapes %||% lapply(vals, function(v) c(NA, (dim(v) %||% length(v))[-1]))
  mirrored:::trace_function(fn, lapply(shapes, function(s) list(shape = s)), what = what, call = NULL)
}

eval_graph <- function(tr, ...) mirrored:::cpp_traced_eval(tr$json, list(...), list())[[1]]

# The gradient of sum(w * fn(values)) (w a fixed random array of the
# output's shape) from the graph's VJP, against central differences of the
# float32 forward computed in double: step h = `step`, agreement within
# abs(vjp - fd) <= tol * (1 + abs(fd)). The inputs are batched (their first
# dim is the rows) unless `shapes` says otherwise.
expect_grad_fd <- function(fn, ..., step = 1e-2, tol = 5e-3, shapes = NULL, wrt = NULL) {
  vals <- list(...)
  tr <- trace_fn(fn, ..., shapes = shapes)
  y <- eval_graph(tr, ...)
  set.seed(42)
  w <- array(stats::runif(length(y), 0.5, 1.5), dim(y) %||% length(y))
  if (is.null(dim(y))) w <- as.vector(w)
  g <- mirrored:::cpp_traced_vjp(tr$json, vals, list(), list(w))$inputs
  obj <- function(v) sum(w * do.call(eval_graph, c(list(tr), v)))
  for (k in wrt %||% seq_along(vals)) {
    fd <- vals[[k]]
    for (j in seq_along(vals[[k]])) {
      vp <- vals
      vm <- vals
      vp[[k]][j] <- vp[[k]][j] + step
      vm[[k]][j] <- vm[[k]][j] - step
      fd[j] <- (obj(vp) - obj(vm)) / (2 * step)
    }
    err <- abs(as.vector(g[[k]]) - as.vector(fd))
    testthat::expect_true(all(err <= tol * (1 + abs(as.vector(fd)))),
                          info = paste0("input ", k, ": max error ", format(max(err)),
                                        "; vjp ", toString(signif(as.vector(g[[k]]), 4)),
                                        "; fd ", toString(signif(as.vector(fd), 4))))
  }
  invisible(g)
}

# Eager results are float32 arithmetic: compared with R's double within a
# float32 tolerance.
expect_f32 <- function(object, expected, tolerance = 1e-6) {
  testthat::expect_equal(object, expected, tolerance = tolerance)
}
