#' Batch normalization
#'
#' Normalizes its inputs over the last axis: while training with the batch's
#' mean and (biased) variance, at inference with moving averages of them,
#' then scales by `gamma` and shifts by `beta`, as Keras' `BatchNormalization`.
#' After each training step `moving = moving * momentum + batch * (1 - momentum)`.
#'
#' @section Several replicas:
#' This is the one layer whose numbers depend on the number of replicas, as in
#' TensorFlow. With `synchronized = FALSE` (Keras' default) each replica
#' normalizes its slice of the global batch with that slice's statistics;
#' the moving statistics are then updated with the replicas' statistics
#' averaged weighted by their rows (a replica with no rows counts for
#' nothing), so every replica keeps the same weights. With
#' `synchronized = TRUE` the statistics are those of the whole global batch,
#' gathered across replicas in the forward and backward passes, and any
#' number of replicas computes what one device computes.
#'
#' @inheritParams layer_dense
#' @param axis The axis to normalize: only the last one (`-1`) is supported.
#' @param momentum Momentum of the moving averages, in \[0, 1\].
#' @param epsilon Small positive number added to the variance.
#' @param center,scale Whether the layer has the offset `beta` / the factor
#'   `gamma`.
#' @param beta_initializer,gamma_initializer,moving_mean_initializer,moving_variance_initializer
#'   Initializer objects or names, see [initializer_glorot_uniform()].
#' @param beta_regularizer,gamma_regularizer,beta_constraint,gamma_constraint
#'   Regularizers (see [regularizer_l2()]) and constraints (see
#'   [constraint_maxnorm()]) of `beta` and `gamma`, or `NULL`.
#' @param synchronized Whether the batch statistics are those of the global
#'   batch over all replicas (see the section above).
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [mirrored_strategy()]
#' @examples
#' inputs <- keras_input(shape = 8)
#' outputs <- inputs |> layer_dense(4) |> layer_batch_normalization()
#' model <- keras_model(inputs, outputs)
#' @export
layer_batch_normalization <- function(object, axis = -1L, momentum = 0.99, epsilon = 0.001,
                                      center = TRUE, scale = TRUE, beta_initializer = "zeros",
                                      gamma_initializer = "ones", moving_mean_initializer = "zeros",
                                      moving_variance_initializer = "ones", beta_regularizer = NULL,
                                      gamma_regularizer = NULL, beta_constraint = NULL,
                                      gamma_constraint = NULL, synchronized = FALSE, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  axis <- check_int(axis, "axis", min = -1L)
  momentum <- check_num(momentum, "momentum", min = 0, max = 1)
  epsilon <- check_num(epsilon, "epsilon", min = 0, min_open = TRUE)
  check_bool(center, "center")
  check_bool(scale, "scale")
  check_bool(synchronized, "synchronized")
  options <- weight_option_configs(list(beta_regularizer = beta_regularizer,
                                        gamma_regularizer = gamma_regularizer,
                                        beta_constraint = beta_constraint,
                                        gamma_constraint = gamma_constraint))
  inits <- list(beta_initializer = beta_initializer, gamma_initializer = gamma_initializer,
                moving_mean_initializer = moving_mean_initializer,
                moving_variance_initializer = moving_variance_initializer)
  inits <- Map(function(init, arg) initializer_keras_config(as_initializer(init, arg)), inits, names(inits))
  layer <- new_layer("BatchNormalization",
                     c(list(axis = axis, momentum = momentum, epsilon = epsilon, center = center,
                            scale = scale), inits, options, list(synchronized = synchronized)), dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}

#' Layer normalization
#'
#' Normalizes each sample on its own over the last axis (or the last axes):
#' `(x - mean) / sqrt(variance + epsilon) * gamma + beta`, with the mean and
#' (biased) variance of that sample's values, as Keras' `LayerNormalization`.
#' No statistics cross samples, so the layer behaves the same while training
#' and at inference, and on any number of replicas.
#'
#' @inheritParams layer_dense
#' @param axis The axis or axes to normalize over: `-1` (the last, the
#'   default) or a vector of the last axes (e.g. `c(-2, -1)`, or their
#'   positions counting the batch axis as 0). Other axes are not supported
#'   yet (a `mirrored_not_yet_error`).
#' @param epsilon Small positive number added to the variance.
#' @param center,scale Whether the layer has the offset `beta` / the factor
#'   `gamma` (each of the normalized axes' shape).
#' @param rms_scaling Keras' deprecated option (keras3 passes it through
#'   `...`): when `TRUE`, `center` and
#'   `scale` are ignored and the output is `x / sqrt(variance + epsilon) *
#'   gamma` (no centering, no `beta`).
#' @param beta_initializer,gamma_initializer Initializer objects or names,
#'   see [initializer_glorot_uniform()].
#' @param beta_regularizer,gamma_regularizer,beta_constraint,gamma_constraint
#'   Regularizers (see [regularizer_l2()]) and constraints (see
#'   [constraint_maxnorm()]) of `beta` and `gamma`, or `NULL`.
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [layer_batch_normalization()]
#' @examples
#' inputs <- keras_input(shape = c(5, 8))
#' outputs <- inputs |> layer_dense(4) |> layer_layer_normalization()
#' model <- keras_model(inputs, outputs)
#' model
#' @export
layer_layer_normalization <- function(object, axis = -1L, epsilon = 0.001, center = TRUE,
                                      scale = TRUE, beta_initializer = "zeros",
                                      gamma_initializer = "ones", beta_regularizer = NULL,
                                      gamma_regularizer = NULL, beta_constraint = NULL,
                                      gamma_constraint = NULL, rms_scaling = FALSE, ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  dots <- layer_dots(list(...))
  if (!(is.numeric(axis) && length(axis) >= 1 && all(is.finite(axis)) && all(axis == round(axis)) &&
        !anyDuplicated(axis))) {
    abort_value("{.arg axis} must be a whole number or a vector of distinct whole numbers, not {describe(axis)}.")
  }
  neg <- axis[axis < 0]
  if (length(axis) > 1 && length(neg) == length(axis) && !setequal(neg, -seq_along(axis))) {
    abort_not_yet("{.arg axis} = {axis}: normalizing over axes other than the last ones is not supported yet.")
  }
  epsilon <- check_num(epsilon, "epsilon", min = 0, min_open = TRUE)
  check_bool(center, "center")
  check_bool(scale, "scale")
  check_bool(rms_scaling, "rms_scaling")
  options <- weight_option_configs(list(beta_regularizer = beta_regularizer,
                                        gamma_regularizer = gamma_regularizer,
                                        beta_constraint = beta_constraint,
                                        gamma_constraint = gamma_constraint))
  inits <- list(beta_initializer = beta_initializer, gamma_initializer = gamma_initializer)
  inits <- Map(function(init, arg) initializer_keras_config(as_initializer(init, arg)), inits, names(inits))
  axis <- as.integer(axis)
  layer <- new_layer("LayerNormalization",
                     c(list(axis = if (length(axis) == 1) axis else as.list(axis), epsilon = epsilon,
                            center = center, scale = scale, rms_scaling = rms_scaling), inits, options),
                     dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}
