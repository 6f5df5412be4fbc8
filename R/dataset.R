# Datasets: tfdatasets-style pipelines run by the C++ core (src/mr/data).
# A dataset is an immutable definition held by the core; every transform
# returns a new one. Iterating (as_array_iterator(), fit()) starts a pass.

# `structure`: for elements made of nested lists (list(list(a, b), y), as
# fit() takes several inputs), how the flat components the core holds group:
# list(sizes = components per group, inner = each group's names, outer = the
# groups' names, is_list = whether each group was a list, not a bare array);
# NULL for flat elements. Transforms that keep components
# keep it (derive_dataset()).
# `window`: TRUE for a dataset_window() (and what keeps its elements): each
# component of an element is a window of rows, handed to R as a dataset.
new_dataset <- function(ptr, structure = NULL, window = FALSE) {
  structure(list(ptr = ptr, structure = structure, window = window), class = "mirrored_dataset")
}

derive_dataset <- function(parent, ptr) new_dataset(ptr, parent$structure, isTRUE(parent$window))

#' Is this a dataset?
#'
#' @param x An object.
#' @return `TRUE` for datasets made by [tensor_slices_dataset()] and its transforms.
#' @family datasets
#' @examples
#' is_dataset(tensor_slices_dataset(1:3))
#' is_dataset(1:3)
#' @export
is_dataset <- function(x) inherits(x, "mirrored_dataset")

check_dataset <- function(x, arg = "dataset", call = sys.call(-1)) {
  if (!is_dataset(x)) {
    abort_value("{.arg {arg}} must be a dataset (see {.fn tensor_slices_dataset}), not {describe(x)}.",
                call = call)
  }
  x
}

# The components of `tensors` as a list of arrays, with their names (an
# unnamed list is a tuple, a named list or a data frame a dict).
as_components <- function(tensors, arg = "tensors", call = sys.call(-1)) {
  if (is.data.frame(tensors)) tensors <- as.list(tensors)
  if (!is.list(tensors)) tensors <- list(tensors)
  is_group <- function(t) is.list(t) && !is.data.frame(t)
  if (any(vapply(tensors, is_group, logical(1)))) {
    # Nested lists (one level): the groups' arrays become flat components.
    groups <- lapply(tensors, function(t) if (is_group(t)) t else list(t))
    if (any(vapply(groups, function(g) !length(g) || any(vapply(g, is_group, logical(1))), logical(1)))) {
      abort_value("{.arg {arg}} may nest lists one level deep (e.g. {.code list(list(a, b), y)}), each holding arrays.",
                  call = call)
    }
    flat <- as_components(unname(unlist(lapply(groups, unname), recursive = FALSE)), arg, call)
    attr(flat, "structure") <- list(sizes = lengths(groups), inner = lapply(tensors, names),
                                    outer = names(tensors),
                                    is_list = vapply(tensors, is_group, logical(1)))
    return(flat)
  }
  if (length(tensors) == 0) abort_value("{.arg {arg}} must hold at least one array.", call = call)
  nm <- names(tensors)
  if (!is.null(nm) && (anyNA(nm) || any(!nzchar(nm)))) {
    abort_value("{.arg {arg}} must be all named or all unnamed.", call = call)
  }
  for (k in seq_along(tensors)) {
    x <- tensors[[k]]
    if (is.factor(x)) x <- as.integer(x) - 1L
    if (!(is.numeric(x) || is.logical(x))) {
      what <- if (is.null(nm)) paste0("[[", k, "]]") else paste0("$", nm[k])
      if (is.character(x)) {
        abort_not_yet(c("{.arg {arg}{what}} holds strings: datasets of strings are not supported yet (they come with text data).",
                        i = "Make it a factor ({.code factor(x)}: its 0-based codes become the component) or integer ids first."),
                      call = call)
      }
      abort_value("{.arg {arg}{what}} must be a numeric, integer or logical array, not {describe(x)}.",
                  call = call)
    }
    tensors[[k]] <- x
  }
  tensors
}

#' Create a dataset from slices of arrays
#'
#' As tfdatasets' `tensor_slices_dataset()`: each element is one slice along
#' the first dimension of every array. An unnamed list such as
#' `list(x, y)` gives tuple elements (features and labels for [fit()]); a
#' named list or a data frame gives named elements.
#'
#' The arrays are converted once, here, to the row-major float32 layout of
#' the core (R arrays are column-major). Integer and logical arrays whose
#' values all lie in 0..255 — images — are kept as bytes (a quarter of
#' float32's memory) and widened per batch; nothing is copied to double
#' precision in R. `print()` shows the memory the dataset holds.
#'
#' @param tensors An array, or a list (or data frame) of arrays with the same
#'   number of rows (first dimension). Numeric, integer and logical arrays
#'   of any rank; factors become 0-based codes.
#' @return A dataset.
#' @family datasets
#' @seealso [dataset_batch()], [as_array_iterator()], [fit.mirrored_model()]
#' @examples
#' ds <- tensor_slices_dataset(list(matrix(1:6, 3), c(0L, 1L, 0L)))
#' ds
#' iter_next(as_array_iterator(ds))
#' @export
tensor_slices_dataset <- function(tensors) {
  tensors <- as_components(tensors)
  new_dataset(with_core(cpp_dataset_from_tensors(tensors, TRUE)), attr(tensors, "structure"))
}

#' Create a dataset of one element
#'
#' As tfdatasets' `tensors_dataset()` (tf.data's `from_tensors`): the whole
#' arrays form a single element.
#'
#' @param tensors An array or a list of arrays (any shapes).
#' @return A dataset with one element.
#' @family datasets
#' @examples
#' ds <- tensors_dataset(list(matrix(1:6, 3), 1:2))
#' length(ds)
#' str(iter_next(as_array_iterator(ds)))
#' @export
tensors_dataset <- function(tensors) {
  tensors <- as_components(tensors)
  new_dataset(with_core(cpp_dataset_from_tensors(tensors, FALSE)), attr(tensors, "structure"))
}

dataset_info <- function(x) with_core(cpp_dataset_info(x$ptr))

#' Number of elements of a dataset
#'
#' The cardinality, as tfdatasets' `length()`: a number, `Inf` for an
#' infinite dataset (a `dataset_repeat()` without count) or `NA` when it is
#' only known by iterating.
#'
#' @param x A dataset.
#' @return A number, `Inf` or `NA`.
#' @family datasets
#' @examples
#' ds <- tensor_slices_dataset(1:10)
#' length(dataset_batch(ds, 3))
#' length(dataset_repeat(ds))
#' @export
length.mirrored_dataset <- function(x) {
  n <- dataset_info(x)$cardinality
  if (n == -1) Inf else if (n < 0) NA_real_ else n
}

#' Print a dataset
#'
#' Shows the transforms from the source on, the elements' structure (types
#' and shapes, `None` for a dimension known only when iterating), the
#' cardinality and the memory the core holds for it (source arrays and
#' filled in-memory caches).
#'
#' @param x A dataset.
#' @param ... Unused.
#' @return `x`, invisibly.
#' @family datasets
#' @examples
#' tensor_slices_dataset(list(matrix(0, 10, 4), 1:10)) |> dataset_batch(4)
#' @export
print.mirrored_dataset <- function(x, ...) {
  info <- dataset_info(x)
  n <- length(x)
  cat("<mirrored_dataset>\n")
  cat(paste0(c("  ", rep("  |> ", length(info$chain) - 1)), info$chain, collapse = "\n"), "\n", sep = "")
  cat("elements:    ", info$spec, "\n", sep = "")
  cat("cardinality: ", if (is.na(n)) "unknown (NA)" else format(n), "\n", sep = "")
  cat("memory:      ", format_bytes(info$memory), " held by the core\n", sep = "")
  if (isTRUE(info$caller_thread)) {
    cat("note:        an R map_func runs on R's thread; prefetch after it does not overlap\n")
  }
  invisible(x)
}

format_bytes <- function(b) {
  units <- c("B", "KB", "MB", "GB", "TB")
  k <- if (b > 0) min(length(units) - 1, floor(log(b, 1024))) else 0
  if (k == 0) paste(b, "B") else sprintf("%.1f %s", b / 1024^k, units[k + 1])
}
