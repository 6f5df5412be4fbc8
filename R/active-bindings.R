# keras3's `%<-active%`: an active binding made with R's
# makeActiveBinding(). (keras3's active_property() / mark_active() mark a
# method of a class as a property; mirrored's Layer(), Model() and friends
# take active bindings through their `active` argument instead.)

#' Make an active binding
#'
#' keras3's `%<-active%`: `sym %<-active% fn` binds `sym`, in the calling
#' environment, to the function `fn`: reading `sym` calls `fn()`, assigning
#' `sym <- value` calls `fn(value)` (R's [makeActiveBinding()]).
#'
#' @param sym The name to bind (unquoted).
#' @param value A function of zero or one argument.
#' @return `value`, invisibly.
#' @seealso [makeActiveBinding()]
#' @examples
#' counter <- 0
#' ticks %<-active% function(value) {
#'   if (missing(value)) counter <<- counter + 1 else counter <<- value
#'   counter
#' }
#' ticks
#' ticks
#' ticks <- 10
#' ticks
#' rm(ticks)
#' @export
`%<-active%` <- function(sym, value) {
  name <- substitute(sym)
  call <- sys.call()
  if (!is.symbol(name)) abort_value("The left side of {.code %<-active%} must be a name, not {.code {deparse(name)}}.", call = call)
  if (!is.function(value)) abort_value("The right side of {.code %<-active%} must be a function, not {describe(value)}.", call = call)
  makeActiveBinding(name, value, parent.frame())
  invisible(value)
}
