#' @importFrom generics compile
#' @export
generics::compile

#' @importFrom generics fit
#' @export
generics::fit

#' @importFrom zeallot %<-%
#' @export
zeallot::`%<-%`

#' Evaluate a model
#'
#' The generic of [evaluate.mirrored_model()]: keras3's `evaluate(object,
#' x, y, ...)`. (The generic of the generics package takes `x` first, which
#' does not fit a model's method.)
#'
#' @param object A model.
#' @param ... Passed to the method.
#' @return See [evaluate.mirrored_model()].
#' @family training functions
#' @seealso [evaluate.mirrored_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1)
#' model |> compile(optimizer = "sgd", loss = "mse")
#' evaluate(model, matrix(1:4, 2), matrix(0, 2), verbose = 0)
#' @export
evaluate <- function(object, ...) UseMethod("evaluate")

#' @importFrom magrittr %>%
#' @export
magrittr::`%>%`

#' @importFrom magrittr %<>%
#' @export
magrittr::`%<>%`
