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
#' An element made of nested lists (`list(list(a = x1, b = x2), y)`) comes
#' back nested the same way, with its names.
#'
#' keras3's names work too: `as_iterator()` is `as_array_iterator()` (mirrored
#' has no tensors to return), and `iterate(it, f)` applies `f` to every
#' element of a dataset or of the rest of an iterator's pass.
#'
#' @param x A dataset (for `as_array_iterator()`, `as_iterator()`) or an iterator.
#' @param it An iterator from `as_array_iterator()` (`iterate()`: or a dataset).
#' @param completed Returned at the end of the pass (default `NULL`).
#' @return `as_array_iterator()`: an iterator. `iter_next()`: an element or
#'   `completed`.
#' @family datasets
#' @examples
#' it <- as_array_iterator(tensor_slices_dataset(list(1:3, c(TRUE, FALSE, TRUE))))
#' while (!is.null(el <- iter_next(it))) str(el)
#' iterate(tensor_slices_dataset(1:3), function(el) el[[1]] * 2)
#' @export
as_array_iterator <- function(x) {
  check_dataset(x, "x")
  state <- new.env(parent = emptyenv())
  state$ptr <- with_core(cpp_dataset_iterator(x$ptr))
  state$exhausted <- FALSE
  state$structure <- x$structure
  state$window <- isTRUE(x$window)
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
  if (it$state$window) el <- window_datasets(el)
  regroup_element(el, it$state$structure)
}

# An element's flat components back in the nesting the dataset was made
# with (list(list(a = , b = ), y) stays that, names and all).
regroup_element <- function(el, structure) {
  if (is.null(structure) || sum(structure$sizes) != length(el)) return(el)
  ends <- cumsum(structure$sizes)
  out <- lapply(seq_along(ends), function(g) {
    part <- el[seq_len(structure$sizes[[g]]) + ends[[g]] - structure$sizes[[g]]]
    names(part) <- structure$inner[[g]]
    is_list <- if (is.null(structure$is_list)) TRUE else structure$is_list[[g]]
    if (is_list) part else part[[1]]
  })
  names(out) <- structure$outer
  out
}

#' @rdname as_array_iterator
#' @export
as_iterator <- function(x) {
  if (inherits(x, "mirrored_iterator")) return(x)
  as_array_iterator(x)
}

#' @rdname as_array_iterator
#' @param f A function applied to each element (`iterate()`).
#' @param simplify Whether `iterate()` returns a vector when every result is
#'   a single number, string or logical (as reticulate's `iterate()`).
#' @export
iterate <- function(it, f = base::identity, simplify = TRUE) {
  if (is_dataset(it)) it <- as_array_iterator(it)
  if (!inherits(it, "mirrored_iterator")) {
    abort_value("{.arg it} must be a dataset or an iterator from {.fn as_iterator}, not {describe(it)}.")
  }
  if (!is.function(f)) abort_value("{.arg f} must be a function, not {describe(f)}.")
  check_bool(simplify, "simplify")
  out <- list()
  while (!is.null(el <- iter_next(it))) out[[length(out) + 1L]] <- f(el)
  if (simplify && length(out) &&
      all(vapply(out, function(v) is.atomic(v) && length(v) == 1L && is.null(dim(v)), logical(1))) &&
      length(unique(vapply(out, typeof, ""))) == 1L)
    out <- unlist(out)
  out
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
