# Datasets of datasets (src/mr/data/windows.h): dataset_window(), whose
# elements are windows of rows, and dataset_flat_map() /
# dataset_interleave(), which map each element to a dataset. The core holds
# a window as arrays stacked on a new first axis; R hands each component to
# the user as a dataset of its rows (tensor_slices_dataset()), as tf.data
# hands out a window.

# A window dataset's elements are datasets: transforms that compute on
# arrays cannot take them (tf.data cannot either).
check_element_dataset <- function(dataset, what, call = sys.call(-1)) {
  if (isTRUE(dataset$window)) {
    abort_not_yet(c("The elements of a {.fn dataset_window} are datasets (one per component): {.fn {what}} cannot take them.",
                    i = "Turn each window into arrays first: {.code dataset_flat_map(function(w) dataset_batch(w, size))}."),
                  call = call)
  }
  invisible(dataset)
}

# Each component of a window element (rows stacked on the first axis) as a
# dataset of its rows; a named list of them for a named element.
window_datasets <- function(el) {
  out <- lapply(el, tensor_slices_dataset)
  names(out) <- names(el)
  out
}

#' Windows of a dataset
#'
#' tfdatasets' `dataset_window()`: each element becomes a window of `size`
#' consecutive elements, starting every `shift` elements and taking every
#' `stride`-th; the last windows are shorter unless `drop_remainder`. As in
#' tf.data, a window is a dataset (one per component of the elements, in a
#' list): iterating gives datasets, and [dataset_flat_map()] turns windows
#' into arrays, e.g. `dataset_flat_map(function(w) dataset_batch(w, size))`
#' (a window of each `size` consecutive rows: a sliding window for
#' sequence models). Transforms that compute on arrays ([dataset_map()],
#' [dataset_batch()], ...) cannot take a window dataset.
#'
#' @inheritParams dataset_batch
#' @param size Elements in a window.
#' @param shift Elements between the starts of consecutive windows
#'   (`NULL`: `size`).
#' @param stride Take every `stride`-th element inside a window.
#' @return A dataset of windows.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:7) |>
#'   dataset_window(3, shift = 2) |>
#'   dataset_flat_map(function(w) dataset_batch(w, 3)) |>
#'   dataset_collect() |> str()
#' @export
dataset_window <- function(dataset, size, shift = NULL, stride = 1L, drop_remainder = FALSE) {
  call <- sys.call()
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_window")
  size <- check_int(size, "size", min = 1, call = call)
  shift <- if (is.null(shift)) size else check_int(shift, "shift", min = 1, call = call)
  stride <- check_int(stride, "stride", min = 1, call = call)
  check_bool(drop_remainder, "drop_remainder", call = call)
  ptr <- with_core(cpp_dataset_window(dataset$ptr, size, shift, stride, drop_remainder), call = call)
  new_dataset(ptr, dataset$structure, window = TRUE)
}

#' Map each element to a dataset and flatten
#'
#' tfdatasets' `dataset_flat_map()` and `dataset_interleave()`: `map_func`
#' is called like a [dataset_map()] function (the components as arguments,
#' or one named list; each a dataset for a [dataset_window()]) and returns
#' a dataset. `dataset_flat_map()` yields the elements of each returned
#' dataset in turn; `dataset_interleave()` reads `cycle_length` of them at
#' once, `block_length` elements from each in turn (tf.data's
#' deterministic order). `map_func` runs in R, on R's thread.
#'
#' @inheritParams dataset_map
#' @param map_func A function (or a one-sided formula) returning a dataset.
#' @param cycle_length How many datasets are read at once.
#' @param block_length Elements taken from each before moving to the next.
#' @param deterministic Accepted for compatibility; the order is always
#'   tf.data's deterministic one.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:3) |>
#'   dataset_flat_map(function(n) tensor_slices_dataset(rep(n, n))) |>
#'   dataset_collect() |> unlist()
#' tensor_slices_dataset(c(1, 2)) |>
#'   dataset_interleave(function(x) tensor_slices_dataset(rep(x, 3)), cycle_length = 2) |>
#'   dataset_collect() |> unlist()
#' @export
dataset_flat_map <- function(dataset, map_func) {
  call <- sys.call()
  nested_dataset_map(dataset, map_func, "dataset_flat_map", 0, 0, call)
}

#' @rdname dataset_flat_map
#' @export
dataset_interleave <- function(dataset, map_func, cycle_length, block_length = 1L,
                               num_parallel_calls = NULL, deterministic = NULL) {
  call <- sys.call()
  cycle_length <- check_int(cycle_length, "cycle_length", min = 1, call = call)
  block_length <- check_int(block_length, "block_length", min = 1, call = call)
  nested_dataset_map(dataset, map_func, "dataset_interleave", cycle_length, block_length, call)
}

# flat_map (cycle_length 0) or interleave of `map_func` over `dataset`.
nested_dataset_map <- function(dataset, map_func, what, cycle_length, block_length, call) {
  check_dataset(dataset, call = call)
  f <- as_map_function(map_func, call = call)
  window <- isTRUE(dataset$window)
  returns_dataset <- function(...) {
    args <- list(...)
    if (window) {
      args <- if (length(args) == 1 && is.list(args[[1]]) && !is.null(names(args[[1]]))) {
        list(window_datasets(args[[1]]))
      } else {
        window_datasets(args)
      }
    }
    d <- do.call(f, args)
    if (!is_dataset(d)) stop("`map_func` must return a dataset, not ", describe(d), ".", call. = FALSE)
    d$ptr
  }
  fn <- map_reporting_shapes(returns_dataset, call, what = what)
  label <- r_function_label(sub("^dataset_", "", what), "map_func", map_func)
  new_dataset(with_core(cpp_dataset_flat_map_r(dataset$ptr, fn, label, cycle_length, block_length),
                        call = call))
}
