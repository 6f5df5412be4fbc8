#' Turn indices into dense vectors
#'
#' Each input value `i` (an integer in `0..input_dim-1`) becomes row `i + 1`
#' of the `input_dim x output_dim` weight `embeddings`, as Keras'
#' `Embedding`: an input of per-sample shape `(d1, ..., dk)` gives an output
#' of shape `(d1, ..., dk, output_dim)`.
#'
#' Indices reach the layer as numbers: a value that is not a whole number in
#' `0..input_dim-1` stops the step with a `mirrored_value_error` naming it
#' (never a read outside the table). The gradient of `embeddings` adds the
#' output gradients of repeated indices in a fixed order, so training is
#' deterministic on every device.
#'
#' @inheritParams layer_dense
#' @param input_dim Size of the vocabulary: the largest index plus one.
#' @param output_dim Length of each vector.
#' @param embeddings_initializer Initializer object or name (default
#'   `"uniform"`: uniform on \[-0.05, 0.05\], as Keras), see
#'   [initializer_glorot_uniform()].
#' @param embeddings_regularizer,embeddings_constraint A regularizer (see
#'   [regularizer_l2()]) and a constraint (see [constraint_maxnorm()]) of the
#'   embeddings, or `NULL`.
#' @param mask_zero Whether index 0 is padding to mask out downstream.
#'   `TRUE` is not supported until mirrored has masking (a
#'   `mirrored_not_yet_error`).
#' @param weights,lora_rank,lora_alpha Not supported yet: `NULL`.
#' @param ... `name`, `input_shape`, `activity_regularizer` (a regularizer
#'   of the output, or `NULL`) and, as in Keras 3, a
#'   deprecated `input_length` (ignored, with a warning).
#' @return A layer, a symbolic tensor or the model, depending on `object`.
#' @family layers
#' @seealso [layer_dense()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |>
#'   layer_embedding(input_dim = 10, output_dim = 3)
#' out <- predict(model, matrix(c(0, 1, 9, 1), 1), verbose = 0)
#' dim(out)  # 1 x 4 x 3
#' all.equal(out[1, 2, ], get_weights(model)[[1]][2, ], tolerance = 1e-7)
#' @export
layer_embedding <- function(object, input_dim, output_dim, embeddings_initializer = "uniform",
                            embeddings_regularizer = NULL, embeddings_constraint = NULL,
                            mask_zero = FALSE, weights = NULL, lora_rank = NULL, lora_alpha = NULL,
                            ...) {
  if (!missing(object)) force(object)  # name upstream layers first, as Keras does
  extra <- list(...)
  activity_regularizer <- extra$activity_regularizer
  extra$activity_regularizer <- NULL
  if (!is.null(extra$input_length)) {
    # Keras 3 pops it with a deprecation warning and ignores it; keras3 passes it on.
    cli::cli_warn("Argument {.arg input_length} is deprecated (Keras 3 ignores it). Just remove it.",
                  class = "mirrored_deprecated_warning")
  }
  extra$input_length <- NULL
  dots <- layer_dots(extra)
  input_dim <- check_int(input_dim, "input_dim", min = 1, max = 2^24 - 1)
  output_dim <- check_int(output_dim, "output_dim", min = 1)
  check_bool(mask_zero, "mask_zero")
  if (mask_zero) {
    abort_not_yet("{.arg mask_zero} = TRUE is not supported until mirrored has masking; use FALSE.")
  }
  options <- weight_option_configs(list(embeddings_regularizer = embeddings_regularizer,
                                        activity_regularizer = activity_regularizer,
                                        embeddings_constraint = embeddings_constraint))
  for (arg in c("weights", "lora_rank", "lora_alpha")) {
    if (!is.null(get(arg))) abort_not_yet("{.arg {arg}} is not supported yet; use NULL, not {describe(get(arg))}.")
  }
  init <- if (is.character(embeddings_initializer) && length(embeddings_initializer) == 1 &&
              embeddings_initializer %in% c("uniform", "random_uniform")) {
    "uniform"  # Keras' RandomUniform(-0.05, 0.05), seeded from the layer's seed
  } else {
    initializer_keras_config(as_initializer(embeddings_initializer, "embeddings_initializer"))
  }
  layer <- new_layer("Embedding", c(list(input_dim = input_dim, output_dim = output_dim,
                                         embeddings_initializer = init, mask_zero = FALSE), options),
                     dots)
  compose_layer(if (missing(object)) NULL else object, layer)
}
