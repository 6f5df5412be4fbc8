# Hinge losses: hinge, squared hinge and categorical hinge. Constructors and
# their plain R formulas (Keras 3; the core's are in src/mr/backends/common/).

# Keras maps 0/1 targets to -1/1 when every target of the batch is 0 or 1.
hinge_targets <- function(t) if (all(t %in% c(0, 1))) 2 * t - 1 else t

loss_formulas_hinge <- list(
  hinge = function(a, y_true, p, call) {
    t <- hinge_targets(dense_targets(y_true, p, call))
    rowMeans(pmax(1 - t * p, 0))
  },
  squared_hinge = function(a, y_true, p, call) {
    t <- hinge_targets(dense_targets(y_true, p, call))
    rowMeans(pmax(1 - t * p, 0)^2)
  },
  categorical_hinge = function(a, y_true, p, call) {
    t <- dense_targets(y_true, p, call)
    pos <- rowSums(t * p)
    neg <- apply((1 - t) * p, 1, max)
    pmax(neg - pos + 1, 0)
  }
)

#' Hinge losses
#'
#' The hinge, squared hinge and categorical hinge losses (for "maximum
#' margin" classifiers). Without `y_true` and `y_pred` these return a loss
#' object for [compile.mirrored_model()] (callable as
#' `loss(y_true, y_pred, sample_weight = NULL)`); with them they compute the
#' loss in R, reduced with `reduction`.
#'
#' Formulas (Keras 3), per sample:
#' - `loss_hinge()`: the mean over the last axis of `max(1 - y_true y_pred, 0)`;
#' - `loss_squared_hinge()`: the mean of its square;
#' - `loss_categorical_hinge()`: `max(neg - pos + 1, 0)` with
#'   `pos = sum(y_true y_pred)` and `neg = max((1 - y_true) y_pred)`.
#'
#' `loss_hinge()` and `loss_squared_hinge()` expect targets of -1 or 1; when
#' every target of a batch is 0 or 1 they are mapped to -1 and 1 first (as
#' Keras does, deciding per batch).
#'
#' @inheritParams loss_sparse_categorical_crossentropy
#' @param y_true Targets, an array shaped like `y_pred` (one-hot rows for the
#'   categorical hinge).
#' @return A loss object, or the computed loss.
#' @family losses
#' @seealso [compile.mirrored_model()]
#' @examples
#' y_true <- rbind(c(0, 1), c(0, 0))
#' y_pred <- rbind(c(0.6, 0.4), c(0.4, 0.6))
#' loss_hinge(y_true, y_pred)
#' loss_squared_hinge(y_true, y_pred, reduction = "none")
#' loss_categorical_hinge(rbind(c(0, 1), c(1, 0)), y_pred)
#' @export
loss_hinge <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "hinge", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("hinge", "Hinge", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_hinge
#' @export
loss_squared_hinge <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size", name = "squared_hinge",
                               dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("squared_hinge", "SquaredHinge", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}

#' @rdname loss_hinge
#' @export
loss_categorical_hinge <- function(y_true, y_pred, ..., reduction = "sum_over_batch_size",
                                   name = "categorical_hinge", dtype = NULL) {
  call <- sys.call()
  check_loss_dots(list(...), call)
  new_loss("categorical_hinge", "CategoricalHinge", name, reduction, list(),
           if (missing(y_true)) NULL else y_true, if (missing(y_pred)) NULL else y_pred, call)
}
