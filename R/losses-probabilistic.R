# Probabilistic losses: the crossentropies (sparse, categorical, binary and
# their focal forms), Kullback-Leibler divergence and Poisson. Constructors
# and their plain R formulas (Keras 3, TensorFlow backend; the core's are in
# src/mr/backends/common/).

loss_eps <- 1e-7
clip_to <- function(x, lo, hi) pmin(pmax(x, lo), hi)  # keeps NaN, as tf.clip_by_value
row_logsumexp <- function(z) {
  m <- apply(z, 1, max)
  m + log(rowSums(exp(z - m)))
}
row_softmax <- function(z) exp(z - row_logsumexp(z))
smooth_targets <- function(t, s, k) if (s != 0) t * (1 - s) + s / k else t

# Arguments keras3 accepts and mirrored does not use: nothing may arrive in `...`.
check_loss_dots <- function(dots, call) {
  if (length(dots)) {
    nm <- names(dots)
    nm <- if (is.null(nm) || !nzchar(nm[1])) "an unnamed argument" else paste0("`", nm[1], "`")
    abort_value("Unknown argument {nm}: the loss takes none of that name.", call = call)
  }
}

loss_formulas_probabilistic <- list(
  sparse_categorical_crossentropy = function(a, y_true, p, call) {
    y <- as.numeric(y_true)
    if (length(y) != nrow(p)) abort_value("{.arg y_true} must hold {nrow(p)} class indices (one per row of {.arg y_pred}), not {length(y)}.", call = call)
    mask <- if (!is.null(a$ignore_class)) y != a$ignore_class else rep(TRUE, length(y))
    # Keras replaces the ignored rows' labels by 0 and their predictions by
    # 0, then zeroes their losses and masks them.
    y[!mask] <- 0
    p[!mask, ] <- 0
    if (anyNA(y) || any(y < 0 | y >= ncol(p) | y != round(y))) {
      abort_value("{.arg y_true} must hold class indices in 0..{ncol(p) - 1}.", call = call)
    }
    idx <- cbind(seq_len(nrow(p)), y + 1)
    v <- if (isTRUE(a$from_logits)) row_logsumexp(p) - p[idx] else {
      # Keras clips, takes the log and applies the softmax crossentropy.
      c <- clip_to(p, loss_eps, 1 - loss_eps)
      log(rowSums(c)) - log(c[idx])
    }
    v[!mask] <- 0
    if (!is.null(a$ignore_class)) attr(v, "mask") <- mask
    v
  },
  categorical_crossentropy = function(a, y_true, p, call) {
    t <- smooth_targets(dense_targets(y_true, p, call), a$label_smoothing, ncol(p))
    if (isTRUE(a$from_logits)) return(rowSums(t * (row_logsumexp(p) - p)))
    -rowSums(t * log(clip_to(p / rowSums(p), loss_eps, 1 - loss_eps)))
  },
  binary_crossentropy = function(a, y_true, p, call) {
    t <- smooth_targets(dense_targets(y_true, p, call), a$label_smoothing, 2)
    rowMeans(binary_ce_values(t, p, isTRUE(a$from_logits)))
  },
  binary_focal_crossentropy = function(a, y_true, p, call) {
    t <- smooth_targets(dense_targets(y_true, p, call), a$label_smoothing, 2)
    y <- if (isTRUE(a$from_logits)) 1 / (1 + exp(-p)) else p
    # TensorFlow takes the crossentropy of a sigmoid from its logits.
    bce <- binary_ce_values(t, p, isTRUE(a$from_logits))
    pt <- t * y + (1 - t) * (1 - y)
    v <- (1 - pt)^a$gamma * bce
    if (isTRUE(a$apply_class_balancing)) v <- (t * a$alpha + (1 - t) * (1 - a$alpha)) * v
    rowMeans(v)
  },
  categorical_focal_crossentropy = function(a, y_true, p, call) {
    t <- smooth_targets(dense_targets(y_true, p, call), a$label_smoothing, ncol(p))
    y <- if (isTRUE(a$from_logits)) row_softmax(p) else p
    o <- clip_to(y / rowSums(y), loss_eps, 1 - loss_eps)
    rowSums(a$alpha * (1 - o)^a$gamma * (-t * log(o)))
  },
  kl_divergence = function(a, y_true, p, call) {
    t <- clip_to(dense_targets(y_true, p, call), loss_eps, 1)
    rowSums(t * log(t / clip_to(p, loss_eps, 1)))
  },
  poisson = function(a, y_true, p, call) {
    t <- dense_targets(y_true, p, call)
    rowMeans(p - t * log(p + loss_eps))
  }
)

binary_ce_values <- function(t, p, from_logits) {
  if (from_logits) return(pmax(p, 0) - p * t + log1p(exp(-abs(p))))
  q <- clip_to(p, loss_eps, 1 - loss_eps)
  -(t * log(q) + (1 - t) * log(1 - q))
}

#' Probabilistic losses
#'
#' The crossentropies (sparse, categorical, binary and their focal forms),
#' the Kullback-Leibler divergence and the Poisson loss. Without `y_true`
#' and `y_pred` these return a loss object for [compile.mirrored_model()]
#' (callable as `loss(y_true, y_pred, sample_weight = NULL)`); with them
#' they compute the loss in R, reduced with `reduction`.
#' In training, the loss of a global batch is the sum of its (weighted)
#' per-sample losses divided by the global batch size, whatever the number
#' of replicas.
#'
#' Formulas (Keras 3), per sample, with probabilities clipped to
#' `[1e-7, 1 - 1e-7]`:
#' - `loss_sparse_categorical_crossentropy()`: `-log(p[y])`; with
#'   `ignore_class`, samples of that label get loss 0 and are left out of the
#'   mean (the loss is the mean over the other samples).
#' - `loss_categorical_crossentropy()`: `-sum(t * log(p))`.
#' - `loss_binary_crossentropy()`: the mean over the last axis of
#'   `-(t log(p) + (1 - t) log(1 - p))`.
#' - `loss_binary_focal_crossentropy()`: the binary crossentropy times
#'   `(1 - p_t)^gamma`, `p_t = t p + (1 - t)(1 - p)`; with
#'   `apply_class_balancing`, also times `t alpha + (1 - t)(1 - alpha)`.
#' - `loss_categorical_focal_crossentropy()`:
#'   `sum(-alpha (1 - p)^gamma t log(p))`.
#' - `loss_kl_divergence()`: `sum(t log(t / p))`, `t` and `p` clipped to
#'   `[1e-7, 1]`.
#' - `loss_poisson()`: the mean of `p - t log(p + 1e-7)`.
#'
#' `label_smoothing` replaces the targets by `t (1 - s) + s / 2` (binary) or
#' `t (1 - s) + s / K` (categorical, `K` classes).
#'
#' @section Softmax and sigmoid outputs: keras3 trains on TensorFlow, whose
#'   categorical, sparse categorical and binary cross-entropies take the
#'   *logits* of a model output made by a softmax (over the last axis) or a
#'   sigmoid activation -- in a layer's `activation`, [layer_activation()] or
#'   [layer_activation_softmax()] -- when the loss or metric receives that
#'   output itself (Keras' `_keras_logits`). mirrored does the same in
#'   `fit()` and `evaluate()` for the built-in losses and metrics without
#'   `from_logits`: the loss is computed from the logits, so a saturated
#'   softmax logs its true loss (e.g. 240, where probabilities clipped at
#'   1e-7 would give 16.1) and keeps its gradient `p - t`. As in TensorFlow
#'   this holds whichever of the two activations made the logits (a sigmoid
#'   output with a categorical loss takes the softmax cross-entropy of its
#'   logits), and `loss_binary_focal_crossentropy()` takes them on a sigmoid
#'   output. It does not hold when the output is computed in a mixed
#'   precision (a layer of a `"mixed_float16"` / `"mixed_bfloat16"` policy:
#'   Keras' float32 cast of the output drops the logits, and the
#'   probabilities are clipped), or when the output also feeds another
#'   layer, is a second output or has an activity regularizer (then mirrored
#'   clips too). Called directly on arrays, the losses compute from the
#'   probabilities given.
#'
#' @param y_true Targets: class indices (0-based) for the sparse loss,
#'   otherwise an array shaped like `y_pred`.
#' @param y_pred Predictions, samples in rows.
#' @param from_logits Whether `y_pred` holds logits (TRUE) or probabilities.
#' @param ignore_class A class index whose samples are ignored (`NULL`: none).
#' @param label_smoothing Label smoothing in `[0, 1]`.
#' @param apply_class_balancing Whether to weigh the classes by `alpha`.
#' @param alpha,gamma The focal losses' weighting factor and focusing
#'   parameter.
#' @param axis The class axis: -1 (the last) only.
#' @param ... Must be empty.
#' @param reduction How per-sample losses are reduced: `"sum_over_batch_size"`
#'   (Keras' default: the sum divided by the number of samples), `"mean"` (the
#'   same), `"sum"`, `"mean_with_sample_weight"` (the sum divided by the sum of
#'   the weights), `"none"` or `NULL` (the per-sample values). Training uses
#'   `"sum_over_batch_size"`.
#' @param name Name of the loss in logs.
#' @param dtype Unused (float32).
#' @return A loss object, or the computed loss.
#' @family losses
#' @seealso [compile.mirrored_model()]
#' @examples
#' loss_sparse_categorical_crossentropy(from_logits = TRUE)
#' loss_sparse_categorical_crossentropy(c(0, 1), rbind(c(2, 1), c(0, 3)), from_logits = TRUE)
#' # Samples labelled 2 are left out of the mean:
#' loss_sparse_categorical_crossentropy(c(0, 2), rbind(c(0.9, 0.1, 0), c(0.2, 0.3, 0.5)),
#'                                      ignore_class = 2)
#' loss_binary_focal_crossentropy(matrix(c(0, 1)), matrix(c(0.2, 0.7)), gamma = 2)
#' bce <- loss_binary_crossentropy(label_smoothing = 0.1)
#' bce(matrix(c(0, 1)), matrix(c(0.2, 0.7)), sample_weight = c(1, 2))
#' loss_kl_divergence(rbind(c(0.5, 0.5)), rbind(c(0.9, 0.1)))
#' @export
loss_sparse_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, ignore_class = NULL,
                                                 axis = -1L, ..., reduction = "sum_over_batch_size",
                                                 name = "sparse_categorical_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  check_axis_last(axis, call)
  ignore_class <- check_int(ignore_class, "ignore_class", null_ok = TRUE, call = call)
  new_loss("sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", name, reduction,
           list(from_logits = check_from_logits(from_logits, call), ignore_class = ignore_class),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_categorical_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0,
                                          axis = -1L, ..., reduction = "sum_over_batch_size",
                                          name = "categorical_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("categorical_crossentropy", "CategoricalCrossentropy", name, reduction,
           list(from_logits = check_from_logits(from_logits, call),
                label_smoothing = check_label_smoothing(label_smoothing, call),
                axis = check_axis_last(axis, call)),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_binary_crossentropy <- function(y_true, y_pred, from_logits = FALSE, label_smoothing = 0, axis = -1L,
                                     ..., reduction = "sum_over_batch_size", name = "binary_crossentropy",
                                     dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("binary_crossentropy", "BinaryCrossentropy", name, reduction,
           list(from_logits = check_from_logits(from_logits, call),
                label_smoothing = check_label_smoothing(label_smoothing, call),
                axis = check_axis_last(axis, call)),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_binary_focal_crossentropy <- function(y_true, y_pred, apply_class_balancing = FALSE, alpha = 0.25,
                                           gamma = 2, from_logits = FALSE, label_smoothing = 0,
                                           axis = -1L, ..., reduction = "sum_over_batch_size",
                                           name = "binary_focal_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("binary_focal_crossentropy", "BinaryFocalCrossentropy", name, reduction,
           list(from_logits = check_from_logits(from_logits, call),
                label_smoothing = check_label_smoothing(label_smoothing, call),
                axis = check_axis_last(axis, call),
                apply_class_balancing = check_bool(apply_class_balancing, "apply_class_balancing", call = call),
                alpha = check_num(alpha, "alpha", min = 0, max = 1, call = call),
                gamma = check_num(gamma, "gamma", min = 0, call = call)),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_categorical_focal_crossentropy <- function(y_true, y_pred, alpha = 0.25, gamma = 2, from_logits = FALSE,
                                                label_smoothing = 0, axis = -1L, ...,
                                                reduction = "sum_over_batch_size",
                                                name = "categorical_focal_crossentropy", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("categorical_focal_crossentropy", "CategoricalFocalCrossentropy", name, reduction,
           list(from_logits = check_from_logits(from_logits, call),
                label_smoothing = check_label_smoothing(label_smoothing, call),
                axis = check_axis_last(axis, call),
                alpha = check_num(alpha, "alpha", min = 0, call = call),
                gamma = check_num(gamma, "gamma", min = 0, call = call)),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_kl_divergence <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "kl_divergence",
                               dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("kl_divergence", "KLDivergence", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_sparse_categorical_crossentropy
#' @export
loss_poisson <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "poisson",
                         dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("poisson", "Poisson", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}
