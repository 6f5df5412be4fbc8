# tfdatasets' transforms that reshape the stream of elements or combine
# datasets (run in C++, src/mr/data/combine.h), and dataset_reduce() (a fold
# in R over one pass). The grouping of an element's components (an
# enumerate's list(i, x), a zip's list(x, y)) is the dataset's `structure`
# (R/dataset.R), so iterators and fit() see the nesting tfdatasets gives.

# A flat dataset's component count and names, for building a structure;
# `what` names the user's function in errors.
flat_components <- function(dataset, what, call) {
  if (!is.null(dataset$structure)) {
    abort_not_yet("{.fn {what}} of a dataset whose elements are already nested lists is not supported yet (one level of nesting).",
                  call = call)
  }
  info <- dataset_info(dataset)
  if (is.na(info$components)) {
    abort_not_yet(c("{.fn {what}} needs to know the elements' components, which a {.fn dataset_map} hides until it runs.",
                    i = "Apply {.fn {what}} before the {.fn dataset_map}, or make the mapped components with the built-in transforms."),
                  call = call)
  }
  nm <- if (length(info$names)) info$names else NULL
  list(n = as.integer(info$components), names = nm, is_list = info$components > 1 || !is.null(nm))
}

#' Unbatch, enumerate and filter a dataset
#'
#' tfdatasets' element-stream transforms, run by the C++ pipeline:
#'
#' - `dataset_unbatch()` splits each element along its first axis into
#'   elements of their own (the inverse of [dataset_batch()]).
#' - `dataset_enumerate()` makes each element `list(i, element)`, `i` its
#'   position counted from `start` (an integer).
#' - `dataset_filter()` keeps the elements for which `predicate` returns
#'   `TRUE`. It is called like a [dataset_map()] function (the components
#'   as arguments, or one named list) and must return one `TRUE` or
#'   `FALSE`; it runs in R, on R's thread.
#'
#' @inheritParams dataset_batch
#' @param start The first index.
#' @param name Accepted for compatibility (tf.data's op name); unused.
#' @param predicate A function (or a one-sided formula) returning `TRUE`
#'   or `FALSE`.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(matrix(1:6, 3)) |> dataset_batch(2) |> dataset_unbatch()
#' length(dataset_collect(ds))
#' tensor_slices_dataset(c(10, 20, 30)) |> dataset_enumerate() |> dataset_collect() |> str()
#' tensor_slices_dataset(1:10) |> dataset_filter(function(x) x %% 3 == 0) |>
#'   dataset_collect() |> unlist()
#' @export
dataset_unbatch <- function(dataset, name = NULL) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_unbatch")
  derive_dataset(dataset, with_core(cpp_dataset_unbatch(dataset$ptr)))
}

#' @rdname dataset_unbatch
#' @export
dataset_enumerate <- function(dataset, start = 0L) {
  call <- sys.call()
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_enumerate")
  start <- check_int(start, "start", call = call)
  f <- flat_components(dataset, "dataset_enumerate", call)
  new_dataset(with_core(cpp_dataset_enumerate(dataset$ptr, start), call = call),
              list(sizes = c(1L, f$n), inner = list(NULL, f$names), outer = NULL,
                   is_list = c(FALSE, f$is_list)))
}

#' @rdname dataset_unbatch
#' @export
dataset_filter <- function(dataset, predicate) {
  call <- sys.call()
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_filter")
  f <- as_map_function(predicate, call = call)
  checked <- function(...) {
    keep <- f(...)
    if (!(is.logical(keep) || is.numeric(keep)) || length(keep) != 1 || is.na(keep)) {
      stop("`predicate` must return one TRUE or FALSE, not ", describe(keep), ".", call. = FALSE)
    }
    isTRUE(as.logical(keep))
  }
  fn <- map_reporting_shapes(checked, call, what = "dataset_filter")
  label <- r_function_label("filter", "predicate", predicate)
  derive_dataset(dataset, with_core(cpp_dataset_filter_r(dataset$ptr, fn, label), call = call))
}

#' Zip and concatenate datasets
#'
#' `dataset_zip()` (tfdatasets' `zip_datasets()`) makes each element a list
#' of one element of each dataset, in order (named when the datasets are);
#' a pass ends with the shortest dataset. `list(x_ds, y_ds)` zipped feeds
#' [fit()] as `(x, y)`. `dataset_concatenate()` gives the elements of
#' `dataset`, then those of each dataset in `...`; their elements must have
#' as many components, of the same ranks.
#'
#' @param ... Datasets (or one list of them).
#' @param dataset A dataset.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' x <- tensor_slices_dataset(matrix(1:6, 3))
#' y <- tensor_slices_dataset(c(0, 1, 1))
#' dataset_zip(x, y) |> dataset_collect() |> str()
#' dataset_concatenate(y, y) |> dataset_collect() |> unlist()
#' @export
dataset_zip <- function(...) {
  call <- sys.call()
  datasets <- list(...)
  if (length(datasets) == 1 && is.list(datasets[[1]]) && !is_dataset(datasets[[1]])) datasets <- datasets[[1]]
  if (!length(datasets)) abort_value("{.fn dataset_zip} needs at least one dataset.", call = call)
  for (k in seq_along(datasets)) {
    if (!is_dataset(datasets[[k]])) {
      abort_value("Every argument of {.fn dataset_zip} must be a dataset; argument {k} is {describe(datasets[[k]])}.",
                  call = call)
    }
  }
  for (d in datasets) check_element_dataset(d, "dataset_zip", call)
  parts <- lapply(datasets, flat_components, what = "dataset_zip", call = call)
  ptr <- with_core(cpp_dataset_zip(lapply(datasets, `[[`, "ptr")), call = call)
  new_dataset(ptr, list(sizes = vapply(parts, `[[`, 1L, "n"), inner = lapply(parts, `[[`, "names"),
                        outer = names(datasets), is_list = vapply(parts, `[[`, TRUE, "is_list")))
}

#' @rdname dataset_zip
#' @export
zip_datasets <- dataset_zip

#' @rdname dataset_zip
#' @export
dataset_concatenate <- function(dataset, ...) {
  call <- sys.call()
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_concatenate")
  out <- dataset
  for (d in list(...)) {
    check_dataset(d, "...", call = call)
    check_element_dataset(d, "dataset_concatenate", call)
    out <- derive_dataset(dataset, with_core(cpp_dataset_concatenate(out$ptr, d$ptr), call = call))
  }
  out
}

#' Batch elements of different shapes, padding them
#'
#' tfdatasets' `dataset_padded_batch()`: like [dataset_batch()], for
#' elements whose components differ in size (sequences of different
#' lengths). Each component is padded at the end of every axis to its
#' padded shape (an `NA` or `NULL` dim: the longest in the batch) with its
#' padding value.
#'
#' @inheritParams dataset_batch
#' @param padded_shapes `NULL` (every axis to the batch's longest), or one
#'   shape per component (a list; a single shape for a one-component
#'   element), e.g. `list(shape(NA), shape())`.
#' @param padding_values `NULL` (zeros), one number for every component, or
#'   one per component.
#' @param name Accepted for compatibility (tf.data's op name); unused.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' seqs <- tensor_slices_dataset(1:4) |>
#'   dataset_map(function(n) seq_len(n))
#' seqs |> dataset_padded_batch(2) |> dataset_collect()
#' @export
dataset_padded_batch <- function(dataset, batch_size, padded_shapes = NULL, padding_values = NULL,
                                 drop_remainder = FALSE, name = NULL) {
  call <- sys.call()
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_padded_batch")
  batch_size <- check_int(batch_size, "batch_size", min = 1, call = call)
  check_bool(drop_remainder, "drop_remainder", call = call)
  shapes <- list()
  if (!is.null(padded_shapes)) {
    if (inherits(padded_shapes, "keras_shape") || is.numeric(padded_shapes) || is.logical(padded_shapes)) {
      padded_shapes <- list(padded_shapes)
    }
    if (!is.list(padded_shapes)) {
      abort_value("{.arg padded_shapes} must be a list of shapes, not {describe(padded_shapes)}.", call = call)
    }
    shapes <- lapply(seq_along(padded_shapes), function(k) {
      s <- padded_shapes[[k]]
      dims <- if (is.null(s)) numeric(0) else shape_dims(unclass(s))
      if (!(is.numeric(dims) || is.logical(dims)) || any(dims[!is.na(dims)] < 0) ||
          any(dims != round(dims), na.rm = TRUE)) {
        abort_value("{.arg padded_shapes[[{k}]]} must be a shape of whole numbers or NA, not {describe(s)}.",
                    call = call)
      }
      as.numeric(dims)
    })
  }
  values <- if (is.null(padding_values)) numeric(0) else unlist(padding_values)
  if (!is.null(padding_values) && (!is.numeric(values) && !is.logical(values) || anyNA(values))) {
    abort_value("{.arg padding_values} must be numbers, not {describe(padding_values)}.", call = call)
  }
  derive_dataset(dataset, with_core(cpp_dataset_padded_batch(dataset$ptr, batch_size, shapes,
                                                             as.numeric(values), drop_remainder),
                                    call = call))
}

#' Reduce a dataset to one value
#'
#' tfdatasets' `dataset_reduce()`: `state <- reduce_func(state, element)`
#' for every element of one pass, starting from `initial_state`; returns the
#' last state. An element of one unnamed component is passed as that array.
#'
#' @inheritParams dataset_batch
#' @param initial_state The starting value.
#' @param reduce_func A function of `(state, element)`.
#' @return The final state.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:10) |> dataset_reduce(0, function(s, x) s + x)
#' @export
dataset_reduce <- function(dataset, initial_state, reduce_func) {
  call <- sys.call()
  check_dataset(dataset)
  if (!is.function(reduce_func)) {
    abort_value("{.arg reduce_func} must be a function of (state, element), not {describe(reduce_func)}.",
                call = call)
  }
  if (identical(length(dataset), Inf)) {
    abort_value("{.arg dataset} is infinite: {.fn dataset_reduce} would never end (use {.fn dataset_take}).",
                call = call)
  }
  it <- as_array_iterator(dataset)
  on.exit(cpp_iterator_release(it$state$ptr), add = TRUE)
  state <- initial_state
  while (!is.null(el <- iter_next(it))) {
    if (length(el) == 1 && is.null(names(el))) el <- el[[1]]
    state <- reduce_func(state, el)
  }
  state
}
