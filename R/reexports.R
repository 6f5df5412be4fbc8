#' Objects exported from other packages
#'
#' `compile()`, `fit()` and `evaluate()` are the generics of the
#' \pkg{generics} package (as in keras3); `%<-%` is \pkg{zeallot}'s
#' destructuring assignment.
#'
#' @name reexports
#' @keywords internal
#' @importFrom generics compile fit evaluate
#' @importFrom zeallot %<-%
#' @export compile
#' @export fit
#' @export evaluate
#' @export %<-%
NULL
