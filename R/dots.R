# Unknown arguments. keras3 passes a method's `...` on to Python, whose
# Model.fit() / compile() / evaluate() / predict() reject any keyword they do
# not know; mirrored's methods keep `...` (the generics need it) and reject
# what lands there, so `fit(model, x, y, epoch = 2)` is an error, not one
# silent epoch.

# Raises a mirrored_value_error naming the user's function and each argument
# that landed in `...` (named, or the count of unnamed ones), with the
# closest known argument when one is near. `fn`: the function's name as the
# user wrote it; `known`: its argument names, for the suggestion.
check_dots_empty <- function(dots, fn, known = character(), call = sys.call(-1)) {
  if (length(dots) == 0) return(invisible())
  nms <- names(dots) %||% rep("", length(dots))
  named <- nms[nzchar(nms)]
  unnamed <- sum(!nzchar(nms))
  bullets <- character()
  for (nm in named) {
    near <- closest_argument(nm, known)
    bullets <- c(bullets, x = if (is.null(near)) paste0("Unknown argument {.arg ", nm, "}.") else
      paste0("Unknown argument {.arg ", nm, "}: did you mean {.arg ", near, "}?"))
  }
  if (unnamed > 0) {
    bullets <- c(bullets, x = paste0(unnamed, " unnamed argument", if (unnamed > 1) "s" else "",
                                     " after the ones {.fn ", fn, "} takes by position."))
  }
  abort_value(c(paste0("{.fn ", fn, "} got ", length(dots), " argument", if (length(dots) > 1) "s" else "",
                       " it does not take."), bullets), call = call)
}

# The known argument nearest to a misspelling (edit distance at most 2, or
# a prefix of one), or NULL.
closest_argument <- function(name, known) {
  known <- setdiff(known, "...")
  if (length(known) == 0) return(NULL)
  prefix <- if (nchar(name) >= 3) known[startsWith(known, name)] else character()
  d <- utils::adist(name, known)[1, ]
  best <- which.min(d)
  if (d[best] <= 2) return(known[best])
  if (length(prefix) == 1) return(prefix)
  NULL
}

# `...` as a list, leaving out empty arguments: keras3's guides end a call
# with a trailing comma (`Callback("X", on_epoch_end = f, )`).
dots_without_empty <- function(...) {
  exprs <- eval(substitute(alist(...)))
  out <- list()
  for (i in seq_along(exprs)) {
    if (identical(exprs[[i]], quote(expr = ))) next
    out[length(out) + 1L] <- list(...elt(i))
    names(out)[length(out)] <- names(exprs)[i] %||% ""
  }
  out
}
