# Losses. Objects carry the configuration to the C++ core; called with
# `y_true` and `y_pred` they compute the loss in R (a plain implementation
# the tests also use as a reference).

new_loss <- function(kind, class_name, name, from_logits, reduction, y_true, y_pred, call) {
  reduction <- check_choice(reduction, "reduction", c("sum_over_batch_size", "sum", "none"), call = call)
  obj <- structure(list(kind = kind, class_name = class_name, name = check_string(name, "name", call = call),
                        from_logits = check_bool(from_logits, "from_logits", call = call),
                        reduction = reduction),
                   class = c(paste0("mirrored_loss_", kind), "mirrored_loss"))
  if (is.null(y_true) && is.null(y_pred)) return(obj)
  if (is.null(y_true) || is.null(y_pred)) abort_value("Give both {.arg y_true} and {.arg y_pred}, or neither.", call = call)
  per_sample <- loss_per_sample(obj, y_true, y_pred, call = call)
  switch(reduction, none = per_sample, sum = sum(per_sample), mean(per_sample))
}

loss_per_sample <- function(loss, y_true, y_pred, call = sys.call(-1)) {
  p <- as.matrix(y_pred)
  eps <- 1e-7
  softmax <- function(z) { e <- exp(z - apply(z, 1, max)); e / rowSums(e) }
  switch(loss$kind,
    sparse_categorical_crossentropy = {
      y <- as.integer(y_true)
      if (length(y) != nrow(p) || anyNA(y) || any(y < 0 | y >= ncol(p))) {
        abort_value("{.arg y_true} must hold {nrow(p)} class indices in 0..{ncol(p) - 1}.", call = call)
      }
      prob <- if (loss$from_logits) softmax(p) else pmin(pmax(p / rowSums(p), eps), 1 - eps)
      if (loss$from_logits) {
        m <- apply(p, 1, max)
        (m + log(rowSums(exp(p - m)))) - p[cbind(seq_len(nrow(p)), y + 1L)]
      } else {
        -log(prob[cbind(seq_len(nrow(p)), y + 1L)])
      }
    },
    categorical_crossentropy = {
      t <- as.matrix(y_true)
      if (loss$from_logits) {
        m <- apply(p, 1, max)
        lse <- m + log(rowSums(exp(p - m)))
        rowSums(t * (lse - p))
      } else {
        prob <- pmin(pmax(p / rowSums(p), eps), 1 - eps)
        -rowSums(t * log(prob))
      }
    },
    binary_crossentropy = {
      t <- as.matrix(y_true)
      v <- if (loss$from_logits) pmax(p, 0) - p * t + log1p(exp(-abs(p))) else {
        q <- pmin(pmax(p, eps), 1 - eps)
        -(t * log(q) + (1 - t) * log(1 - q))
      }
      rowMeans(v)
    },
    mean_squared_error = rowMeans((as.matrix(y_true) - p)^2)
  )
}

#' Losses
#'
#' The functions Keras minimises. Without `y_true` and `y_pred` they return
#' a loss object for [compile.mirrored_model()]; with them they compute the
#' loss in R. Per-sample values are reduced with `reduction`:
#' `"sum_over_batch_size"` (the mean, Keras' default), `"sum"` or `"none"`.
#' In training, the loss of a global batch is the sum of its per-sample
#' losses divided by the global batch size, whatever the number of replicas.
#'
#' @param y_true Targets: class indices (0-based) for the sparse loss,
#'   otherwise an array shaped like `y_pred`.
#' @param y_pred Predictions, samples in rows.
#' @param from_logits Whether `y_pred` holds logits (TRUE) or probabilities.
#' @param ignore_class,axis,label_smoothing Not supported beyond their
#'   defaults.
#' @param ... Unused.
#' @param reduction How per-sample losses are reduced.
#' @param name Name of the loss in logs.
#' @param dtype Unused (float32).
#' @return A loss object, or the computed loss.
#' @family losses
#' @seealso [compile.mirrored_model()]
#' @examples
#' loss_sparse_categorical_crossentropy(from_logits = TRUE)
#' loss_sparse_categorical_crossentropy(c(0, 1), rbind(c(2, 1), c(0, 3)), from_logits = TRUE)
#' @export
loss_sparse_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, ignore_class = NULL,
                                                 axis = -1L, ..., reduction = "sum_over_batch_size",
                                                 name = "sparse_categorical_crossentropy", dtype = NULL) {
  check_unsupported(ignore_class = ignore_class)
  if (!identical(as.integer(axis), -1L)) abort_value("{.arg axis} must be -1.")
  new_loss("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", name, from_logits, reduction,
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0,
                                          axis = -1L, ..., reduction = "sum_over_batch_size",
                                          name = "categorical_crossentropy", dtype = NULL) {
  if (!identical(as.numeric(label_smoothing), 0)) abort_value("{.arg label_smoothing} is not supported yet; use 0.")
  new_loss("categorical_crossentropy", "CategoricalCrossentropy", name, from_logits, reduction,
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_binary_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0, axis = -1L,
                                     ..., reduction = "sum_over_batch_size", name = "binary_crossentropy",
                                     dtype = NULL) {
  if (!identical(as.numeric(label_smoothing), 0)) abort_value("{.arg label_smoothing} is not supported yet; use 0.")
  new_loss("binary_crossentropy", "BinaryCrossentropy", name, from_logits, reduction,
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_mean_squared_error <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                    name = "mean_squared_error", dtype = NULL) {
  new_loss("mean_squared_error", "MeanSquaredError", name, FALSE, reduction,
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, sys.call())
}

as_loss <- function(x, call = sys.call(-1)) {
  if (inherits(x, "mirrored_loss")) {
    if (x$reduction != "sum_over_batch_size") {
      abort_value("Training uses reduction \"sum_over_batch_size\"; got {.val {x$reduction}}.", call = call)
    }
    return(x)
  }
  known <- list(sparse_categorical_crossentropy = loss_sparse_categorical_crossentropy,
                categorical_crossentropy = loss_categorical_crossentropy,
                binary_crossentropy = loss_binary_crossentropy,
                mean_squared_error = loss_mean_squared_error, mse = loss_mean_squared_error)
  if (is.character(x) && length(x) == 1 && x %in% names(known)) {
    obj <- known[[x]]()
    obj$string <- x
    return(obj)
  }
  abort_value("{.arg loss} must be one of {.val {names(known)}} or a loss object, not {describe(x)}.",
              call = call)
}
