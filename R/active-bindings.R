# keras3's `%<-active%`: an active binding made with R's
# makeActiveBinding(); and keras3's active_property() / mark_active(), which
# mark a member of a class as a property: Layer(), Loss() and Callback()
# make such members active bindings of the R6 class (split_active_members()).

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

#' Mark a class member as a property
#'
#' keras3's `active_property()` (and its older name `mark_active()`): a
#' function given as a member of a [Layer()], [Loss()] or [Callback()]
#' class and marked so becomes a property of its instances (an R6 active
#' binding): reading `self$name` calls it with no argument, assigning
#' `self$name <- value` calls it with `value`.
#'
#' @param fn,x A function of zero or one argument (`value`).
#' @return The function, marked.
#' @examples
#' layer_scale <- Layer("Scale",
#'   initialize = function(factor = 2, ...) {
#'     super$initialize(...)
#'     private$f <- factor
#'   },
#'   call = function(x) x * private$f,
#'   factor = active_property(function(value) {
#'     if (missing(value)) return(private$f)
#'     private$f <- value
#'   })
#' )
#' inputs <- keras_input(shape = 2)
#' outputs <- inputs |> layer_scale(factor = 3)
#' predict(keras_model(inputs, outputs), matrix(1, 1, 2), verbose = 0)
#' @export
active_property <- function(fn) {
  if (!is.function(fn)) {
    abort_value("{.arg fn} must be a function, not {describe(fn)}.", call = sys.call())
  }
  attr(fn, "mirrored_active") <- TRUE
  fn
}

#' @rdname active_property
#' @export
mark_active <- function(x) {
  if (!is.function(x)) {
    abort_value("{.arg x} must be a function, not {describe(x)}.", call = sys.call())
  }
  attr(x, "mirrored_active") <- TRUE
  x
}

# The members of a user class (Layer(), Loss(), Metric()): its named
# methods (NULL ones left out; each must be a function), `...` and
# `public`, every one named, `self` dropped from their formals (keras3
# allows it first), split into list(public, active) as below. `kind`
# ("layer", ...) names the class in errors.
class_members <- function(kind, classname, methods, dots, public, active = list(), call = sys.call(-1)) {
  methods <- Filter(Negate(is.null), methods)
  for (m in names(methods)) {
    if (!is.function(methods[[m]])) {
      abort_value("{.arg {m}} of {kind} class {.cls {classname}} must be a function, not {describe(methods[[m]])}.",
                  call = call)
    }
  }
  members <- c(methods, dots, public)
  if (length(members) && (is.null(names(members)) || any(names(members) == ""))) {
    abort_value("Every member of {kind} class {.cls {classname}} must be named.", call = call)
  }
  split_active_members(lapply(members, drop_self_formal), active)
}

# A class's members split into list(public, active): the members marked by
# active_property() join the class's `active` list (unmarked there).
split_active_members <- function(members, active = list()) {
  marked <- vapply(members, function(m) is.function(m) && isTRUE(attr(m, "mirrored_active", exact = TRUE)),
                   logical(1))
  moved <- lapply(members[marked], function(m) {
    attr(m, "mirrored_active") <- NULL
    m
  })
  list(public = members[!marked], active = c(active, moved))
}
