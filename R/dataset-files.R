#' Create a dataset from IDX or .npz files
#'
#' Sources that read their data straight from files into the C++ core, with
#' no R copy: `idx_dataset()` takes IDX files (MNIST's format, plain or
#' gzip-compressed), `npz_dataset()` named arrays of a NumPy `.npz` archive
#' (unsigned bytes or 64-bit integers, as Keras' `mnist.npz`). Each file or
#' array is one component, sliced along its first dimension as
#' [tensor_slices_dataset()] does; unsigned bytes stay bytes in memory.
#'
#' A dataset stored as several files ("parts", as large datasets are
#' written: `part-0.npz`, `part-1.npz`, ...) is one dataset whose rows are
#' those of the first part, then of the second, and so on: give
#' `npz_dataset()` several files, or `idx_dataset()` a list with the files of
#' each part. Making it reads only the files' headers (every part must hold
#' the same components with the same element shapes); each pass then reads
#' the parts one at a time and keeps only the current one in memory (add
#' [dataset_cache()] to keep them all). In a
#' [multi_worker_mirrored_strategy()] job, such a dataset with at least as
#' many parts as workers is sharded by file, as `tf.data`'s automatic
#' sharding does: worker `i` of `n` reads parts `i + 1`, `i + 1 + n`, ...
#' only, and its batches hold its replicas' share of each global batch (the
#' `batch_size` of [dataset_batch()] stays the global batch). A single file
#' is read whole by every worker, whose replicas then take their rows of
#' each global batch.
#'
#' @param filenames Paths of IDX files, one per component (e.g. images then
#'   labels); all must have the same number of rows. For a dataset stored in
#'   parts, a list with one such vector per part.
#' @param filename Path of an `.npz` file, or of several: the parts of one
#'   dataset, in order.
#' @param keys Names of the arrays to use, one per component, e.g.
#'   `c("x_train", "y_train")`.
#' @return A dataset.
#' @family datasets
#' @seealso [tensor_slices_dataset()], [dataset_mnist()], [dataset_shard()]
#' @examples
#' dir <- system.file("extdata", "mnist", package = "mirrored")
#' ds <- idx_dataset(file.path(dir, c("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")))
#' ds
#' str(iter_next(as_array_iterator(dataset_batch(ds, 2))))
#'
#' # The same digits written as three parts, read back as one dataset.
#' mnist <- dataset_mnist_sample()
#' parts <- file.path(tempdir(), paste0("part-", 1:3, ".npz"))
#' rows <- split(seq_len(30), rep(1:3, each = 10))
#' for (i in 1:3) {
#'   write_npz(list(x = mnist$train$x[rows[[i]], , ], y = mnist$train$y[rows[[i]]]), parts[i])
#' }
#' npz_dataset(parts, c("x", "y"))
#' @export
idx_dataset <- function(filenames) {
  if (is.list(filenames) && length(filenames) > 0) {
    for (i in seq_along(filenames)) check_file_paths(filenames[[i]], paste0("filenames[[", i, "]]"), "IDX file paths")
    return(new_dataset(with_core(cpp_dataset_from_file_parts("idx", lapply(filenames, normalizePath), character()))))
  }
  check_file_paths(filenames, "filenames", "IDX file paths")
  new_dataset(with_core(cpp_dataset_from_idx(normalizePath(filenames))))
}

#' @rdname idx_dataset
#' @export
npz_dataset <- function(filename, keys) {
  check_file_paths(filename, "filename", ".npz file paths")
  if (!is.character(keys) || length(keys) == 0 || anyNA(keys)) {
    abort_value("{.arg keys} must name the arrays to use, e.g. {.code c(\"x_train\", \"y_train\")}, not {describe(keys)}.")
  }
  if (length(filename) > 1) {
    return(new_dataset(with_core(cpp_dataset_from_file_parts("npz", as.list(normalizePath(filename)), keys))))
  }
  new_dataset(with_core(cpp_dataset_from_npz(normalizePath(filename), keys)))
}

# Paths of existing files (not directories), for the file sources.
check_file_paths <- function(x, arg, what, call = sys.call(-1)) {
  if (!is.character(x) || length(x) == 0 || anyNA(x)) {
    abort_value("{.arg {arg}} must be a character vector of {what}, not {describe(x)}.", call = call)
  }
  for (f in x) if (!file.exists(f) || dir.exists(f)) abort_kind("io", "File {.file {f}} does not exist.", call = call)
  invisible(x)
}

#' Write arrays to an .npz file
#'
#' Writes named R arrays as a NumPy `.npz` archive (what `numpy.savez()`
#' writes, readable by [npz_dataset()] and by NumPy): raw vectors as
#' unsigned bytes, integers as 64-bit integers, doubles as 64-bit floats,
#' each with its `dim` (the first dimension is the rows of a dataset). The
#' file is replaced atomically: an existing file is never left half written.
#'
#' @param x A named list of arrays (raw, integer or double; no `NA` in
#'   integers).
#' @param filename Path of the `.npz` file to write.
#' @return `filename`, invisibly.
#' @family datasets
#' @examples
#' f <- tempfile(fileext = ".npz")
#' write_npz(list(x = matrix(runif(6), 3, 2), y = 1:3), f)
#' iter_next(as_array_iterator(dataset_batch(npz_dataset(f, c("x", "y")), 3)))
#' @export
write_npz <- function(x, filename) {
  check_string(filename, "filename")
  if (!is.list(x) || length(x) == 0 || is.null(names(x)) || any(!nzchar(names(x))) || anyNA(names(x)) ||
      anyDuplicated(names(x))) {
    abort_value("{.arg x} must be a list of arrays with unique, non-empty names, not {describe(x)}.")
  }
  for (k in names(x)) {
    a <- x[[k]]
    if (!(is.raw(a) || is.integer(a) || is.double(a)) || is.factor(a)) {
      abort_value("{.arg x${k}} must be a raw, integer or double array, not {describe(a)}.")
    }
    if (is.integer(a) && anyNA(a)) abort_value("{.arg x${k}} has NA values, which an .npz integer array cannot hold.")
  }
  if (dir.exists(filename)) abort_kind("io", "{.file {filename}} is a directory.")
  with_core(cpp_write_npz(path.expand(filename), x))
  invisible(filename)
}
