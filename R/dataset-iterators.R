# Iterating over datasets from R.

#' Iterate over a dataset
#'
#' `as_array_iterator()` starts a pass over the dataset; `iter_next()` returns
#' its next element as a list of R arrays (double, integer or logical, with
#' the component names), or `NULL` at the end of the pass. Calling
#' `iter_next()` again on an iterator that has returned `NULL` is an error
#' of class `mirrored_iterator_exhausted_error`: start a new pass with
#' `as_array_iterator()`. `dataset_collect()` gathers the elements of a pass
#' in a list.
#'
#' Components of rank 0 and 1 come back as plain vectors, others as arrays.
#'
#' @param x A dataset (for `as_array_iterator()`) or an iterator.
#' @param it An iterator from `as_array_iterator()`.
#' @param completed Returned at the end of the pass (default `NULL`).
#' @return `as_array_iterator()`: an iterator. `iter_next()`: an element or
#'   `completed`.
#' @family datasets
#' @examples
#' it <- as_array_iterator(tensor_slices_dataset(list(1:3, c(TRUE, FALSE, TRUE))))
#' while (!is.null(el <- iter_next(it))) str(el)
#' @export
as_array_iterator <- function(x) {
  check_dataset(x, "x")
  state <- new.env(parent = emptyenv())
  state$ptr <- with_core(cpp_dataset_iterator(x$ptr))
  state$exhausted <- FALSE
  structure(list(state = state), class = "mirrored_iterator")
}

#' @rdname as_array_iterator
#' @export
iter_next <- function(it, completed = NULL) {
  if (!inherits(it, "mirrored_iterator")) {
    abort_value("{.arg it} must be an iterator from {.fn as_array_iterator}, not {describe(it)}.")
  }
  if (it$state$exhausted) {
    cli::cli_abort(c("This iterator is exhausted: it has already returned the end of its pass.",
                     i = "Start a new pass with {.fn as_array_iterator}."),
                   class = c("mirrored_iterator_exhausted_error", "mirrored_value_error", "mirrored_error"),
                   call = sys.call())
  }
  el <- with_core(cpp_iterator_next(it$state$ptr))
  if (is.null(el)) {
    it$state$exhausted <- TRUE
    return(completed)
  }
  el
}

#' @export
print.mirrored_iterator <- function(x, ...) {
  cat("<mirrored_iterator>", if (x$state$exhausted) "(exhausted)" else "", "\n")
  invisible(x)
}

#' @rdname as_array_iterator
#' @param dataset A dataset.
#' @param iter_max The most elements to collect (`Inf`: the whole pass; an
#'   infinite dataset needs a finite `iter_max`).
#' @export
dataset_collect <- function(dataset, iter_max = Inf) {
  check_dataset(dataset)
  if (!(is.numeric(iter_max) && length(iter_max) == 1 && !is.na(iter_max) && iter_max >= 0)) {
    abort_value("{.arg iter_max} must be a number >= 0 or Inf, not {describe(iter_max)}.")
  }
  if (is.infinite(iter_max) && identical(length(dataset), Inf)) {
    abort_value("{.arg dataset} is infinite: give a finite {.arg iter_max} (or use {.fn dataset_take}).")
  }
  it <- as_array_iterator(dataset)
  on.exit(cpp_iterator_release(it$state$ptr), add = TRUE)
  out <- list()
  i <- 0
  while (i < iter_max && !is.null(el <- iter_next(it))) {
    i <- i + 1
    out[[i]] <- el
  }
  out
}
