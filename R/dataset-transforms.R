# Transforms of datasets, with tfdatasets' names, argument names and
# defaults. Each returns a new dataset; the input is unchanged.

wrap_transform <- function(dataset, ptr) derive_dataset(dataset, ptr)

#' Combine consecutive elements into batches
#'
#' Stacks `batch_size` consecutive elements along a new first dimension.
#' The last batch is smaller when the number of elements is not a multiple of
#' `batch_size`, unless `drop_remainder = TRUE`. Elements of a batch must have
#' the same shapes.
#'
#' @param dataset A dataset.
#' @param batch_size Elements per batch (a positive whole number).
#' @param drop_remainder Whether to drop a last, smaller batch.
#' @param num_parallel_calls,deterministic,name Accepted for compatibility with
#'   tfdatasets; batching runs in C++ on one thread.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(1:10) |> dataset_batch(4)
#' dataset_collect(ds)
#' @export
dataset_batch <- function(dataset, batch_size, drop_remainder = FALSE, num_parallel_calls = NULL,
                          deterministic = NULL, name = NULL) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_batch")
  batch_size <- check_int(batch_size, "batch_size", min = 1)
  check_bool(drop_remainder, "drop_remainder")
  derive_dataset(dataset, with_core(cpp_dataset_batch(dataset$ptr, batch_size, drop_remainder)))
}

#' Shuffle the elements of a dataset
#'
#' A shuffle buffer, as tf.data's: the first `buffer_size` elements fill it,
#' then each output is drawn uniformly from the buffer and replaced by the
#' next input element. A buffer at least as large as the dataset gives a
#' uniform permutation; a smaller one only mixes nearby elements (an element
#' never comes out more than `buffer_size - 1` places earlier than it went in).
#'
#' The order is a function of `seed` and of the pass: with
#' `reshuffle_each_iteration = TRUE` each pass (each epoch of [fit()], each
#' [as_array_iterator()], each repetition of [dataset_repeat()]) has its own
#' order, and a dataset made again with the same seed replays the same orders.
#'
#' @inheritParams dataset_batch
#' @param buffer_size Elements in the shuffle buffer.
#' @param seed A whole number; `NULL` draws one from R's random generator (so
#'   `set.seed()` / [set_random_seed()] make it reproducible).
#' @param reshuffle_each_iteration Whether each pass has a new order (`NULL`
#'   means `TRUE`, as in TensorFlow).
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:10) |> dataset_shuffle(10, seed = 1) |> dataset_collect() |> unlist()
#' @export
dataset_shuffle <- function(dataset, buffer_size, seed = NULL, reshuffle_each_iteration = NULL) {
  check_dataset(dataset)
  buffer_size <- check_int(buffer_size, "buffer_size", min = 1)
  seed <- draw_seed(seed)
  reshuffle <- reshuffle_each_iteration %||% TRUE
  check_bool(reshuffle, "reshuffle_each_iteration")
  derive_dataset(dataset, with_core(cpp_dataset_shuffle(dataset$ptr, buffer_size, seed, reshuffle)))
}

# NULL or -1 (forever / all) or a whole number >= 0.
check_count <- function(count, arg = "count", null_ok = FALSE, call = sys.call(-1)) {
  if (is.null(count) && null_ok) return(-1)
  as.numeric(check_int(count, arg, min = -1, call = call))
}

#' Repeat a dataset
#'
#' @inheritParams dataset_batch
#' @param count Number of repetitions; `NULL` or `-1` repeats forever (the
#'   cardinality becomes `Inf`). Repeating a dataset with no elements forever
#'   yields nothing rather than hanging.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:3) |> dataset_repeat(2) |> dataset_collect() |> unlist()
#' @export
dataset_repeat <- function(dataset, count = NULL) {
  check_dataset(dataset)
  count <- check_count(count, null_ok = TRUE)
  derive_dataset(dataset, with_core(cpp_dataset_repeat(dataset$ptr, count)))
}

#' Take or skip the first elements of a dataset
#'
#' `dataset_take()` keeps the first `count` elements, `dataset_skip()` drops
#' them.
#'
#' @inheritParams dataset_batch
#' @param count Number of elements; `-1` means all of them.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(1:10)
#' ds |> dataset_take(3) |> dataset_collect() |> unlist()
#' ds |> dataset_skip(8) |> dataset_collect() |> unlist()
#' @export
dataset_take <- function(dataset, count) {
  check_dataset(dataset)
  derive_dataset(dataset, with_core(cpp_dataset_take(dataset$ptr, check_count(count))))
}

#' @rdname dataset_take
#' @export
dataset_skip <- function(dataset, count) {
  check_dataset(dataset)
  derive_dataset(dataset, with_core(cpp_dataset_skip(dataset$ptr, check_count(count))))
}

#' Shard a dataset
#'
#' Keeps the elements at positions `index`, `index + num_shards`,
#' `index + 2 * num_shards`, ... (counting from 0, as `tf.data`'s `shard()`).
#' In a [multi_worker_mirrored_strategy()] job, worker `i` of `n` reads shard
#' `i`: each worker then batches its own rows, and a step's global batch is
#' the sum of the workers' batches (so give [dataset_batch()] the global batch
#' divided by the number of workers). The workers say how many rows they have
#' at every step, so shards of different lengths end the epoch together:
#' a worker whose shard ended joins the remaining steps with no rows. A
#' dataset stored in several files is sharded by file without this (see
#' [npz_dataset()]).
#'
#' @inheritParams dataset_batch
#' @param num_shards The number of shards (e.g.
#'   `strategy$cluster_resolver$num_workers`).
#' @param index This shard, from 0 to `num_shards - 1` (e.g.
#'   `strategy$cluster_resolver$task_id` of a cluster without a chief entry).
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(1:10)
#' ds |> dataset_shard(3, 1) |> dataset_collect() |> unlist()
#' @export
dataset_shard <- function(dataset, num_shards, index) {
  check_dataset(dataset)
  num_shards <- check_int(num_shards, "num_shards", min = 1)
  index <- check_int(index, "index", min = 0)
  if (index >= num_shards) {
    abort_value("{.arg index} must be smaller than {.arg num_shards} ({num_shards}), not {index}.")
  }
  derive_dataset(dataset, with_core(cpp_dataset_shard(dataset$ptr, num_shards, index)))
}

#' Cache the elements of a dataset
#'
#' The first complete pass over the dataset records its elements; later
#' passes replay them without running the transforms before the cache again.
#' A pass that stops early (a [dataset_take()] after the cache, an
#' interrupted epoch) records nothing.
#'
#' With a `filename`, the elements go to that file: written under a temporary
#' name and renamed only when the pass completes, so a partial file is never
#' used. The file records a fingerprint of the dataset's definition (its
#' transforms and a hash of its source arrays): a later run of the same
#' pipeline reuses it, while a file from another dataset, a truncated file or
#' a file that is not a cache is refused with a `mirrored_io_error` (delete it
#' to rebuild the cache).
#'
#' @inheritParams dataset_batch
#' @param filename `NULL` or `""` to cache in memory, else a file path.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(1:5) |> dataset_cache()
#' invisible(dataset_collect(ds))  # the first pass fills the cache
#' ds
#' @export
dataset_cache <- function(dataset, filename = NULL) {
  check_dataset(dataset)
  filename <- check_string(filename %||% "", "filename")
  if (nzchar(filename)) {
    filename <- path.expand(filename)
    if (!dir.exists(dirname(filename))) {
      abort_kind("io", "{.arg filename}: the directory {.file {dirname(filename)}} does not exist.")
    }
    filename <- file.path(normalizePath(dirname(filename)), basename(filename))
  }
  derive_dataset(dataset, with_core(cpp_dataset_cache(dataset$ptr, filename)))
}

#' Prefetch elements on a background thread
#'
#' Runs the pipeline before this point on a C++ thread, ahead of the
#' consumer, into a buffer of `buffer_size` elements, so that preparing the
#' next batches overlaps with training on the current one. Errors on the
#' thread are raised in R when their element is reached; the thread ends when
#' the pass ends or its iterator is dropped.
#'
#' R code never runs on that thread: after a [dataset_map()] with an R
#' function the prefetch is a pass-through (put it before the map instead).
#'
#' @inheritParams dataset_batch
#' @param buffer_size Elements to buffer; `-1` (tf.data's `AUTOTUNE`, the
#'   default) buffers 8 elements (mirrored does not tune it); `0` disables.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' tensor_slices_dataset(1:10) |> dataset_batch(5) |> dataset_prefetch()
#' @export
dataset_prefetch <- function(dataset, buffer_size = -1L) {
  check_dataset(dataset)
  buffer_size <- check_int(buffer_size, "buffer_size", min = -1)
  derive_dataset(dataset, with_core(cpp_dataset_prefetch(dataset$ptr, buffer_size)))
}

#' Apply an R function to each element
#'
#' As tfdatasets' `dataset_map()`: the components of a tuple element are
#' passed as separate arguments (`function(x, y)`), a named element as one
#' named list. The function returns an array or a list of arrays (names
#' become component names); shapes and types may differ from the input.
#' A formula such as `~ list(.x / 255, .y)` is turned into a function of
#' `.x` (first component) and `.y` (second).
#'
#' Cost: R is single-threaded, so `map_func` is called on R's thread, once
#' per element, when the consumer asks for the element (inside [fit()] this
#' overlaps with the replicas' computation of the previous batch, but not
#' with more). The C++ stages before the map run ahead on a thread of their
#' own; no prefetch after the map can run past it. Each call also converts
#' the element to R arrays and back. Map after [dataset_batch()] to pay this
#' once per batch rather than once per element, and prefer the C++
#' transforms ([dataset_rescale()], [dataset_cast()], [dataset_one_hot()]).
#'
#' @inheritParams dataset_batch
#' @param map_func A function (or a one-sided formula).
#' @param num_parallel_calls Accepted for compatibility; R functions run one
#'   at a time.
#' @param name Accepted for compatibility (tf.data's op name); unused.
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(list(matrix(1:6, 3), 1:3)) |>
#'   dataset_map(function(x, y) list(x * 2, y))
#' dataset_collect(ds)[[1]]
#' @export
dataset_map <- function(dataset, map_func, num_parallel_calls = NULL, name = NULL) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_map")
  fn <- map_reporting_shapes(as_map_function(map_func), sys.call())
  label <- r_function_label("map", "map_func", map_func)
  new_dataset(with_core(cpp_dataset_map_r(dataset$ptr, fn, label)))
}

# How print() shows a transform running R function `f`, given as argument
# `arg` of `op`: "map(map_func = function(x) x * 2)", cut at 120 characters.
r_function_label <- function(op, arg, f) {
  label <- paste0(op, "(", arg, " = ", paste(deparse(f, width.cutoff = 500L), collapse = " "), ")")
  if (nchar(label) > 120) label <- paste0(substr(label, 1, 116), "...)")
  label
}

as_map_function <- function(f, call = sys.call(-1)) {
  if (is.function(f)) return(f)
  if (inherits(f, "formula") && length(f) == 2) {
    # `.x` and `.y` name the first two components, as rlang's formulas do.
    expr <- f[[2]]
    env <- environment(f)
    return(function(...) {
      args <- list(...)
      scope <- new.env(parent = env)
      if (length(args) >= 1) assign(".x", args[[1]], envir = scope)
      if (length(args) >= 2) assign(".y", args[[2]], envir = scope)
      eval(expr, scope)
    })
  }
  abort_value("{.arg map_func} must be a function or a one-sided formula, not {describe(f)}.", call = call)
}

# Component indices (1-based) from numbers or names; NULL means `default`.
resolve_components <- function(dataset, components, default, arg = "components", call = sys.call(-1)) {
  info <- dataset_info(dataset)
  n <- info$components
  if (is.null(components)) components <- if (identical(default, "last")) n else default
  if (is.character(components)) {
    nm <- dataset_component_names(dataset)
    idx <- match(components, nm)
    if (anyNA(idx)) {
      abort_value("{.arg {arg}} names {.val {components[is.na(idx)]}}, which the elements do not have (they have {.val {nm}}).",
                  call = call)
    }
    return(idx)
  }
  if (!is.numeric(components) || length(components) == 0 || anyNA(components) ||
      any(components != round(components)) || any(components < 1) ||
      (!is.na(n) && any(components > n))) {
    abort_value("{.arg {arg}} must be component numbers in 1..{if (is.na(n)) 'n' else n} or names, not {describe(components)}.",
                call = call)
  }
  as.integer(components)
}

dataset_component_names <- function(dataset) dataset_info(dataset)$names

#' Built-in element transforms (run in C++)
#'
#' Vectorised preprocessing that runs in the C++ pipeline (so it can be
#' prefetched on a background thread, unlike an R [dataset_map()]):
#'
#' - `dataset_rescale()`: `x * scale + offset`, as keras3's
#'   `layer_rescaling()` (e.g. `scale = 1/255` for images).
#' - `dataset_normalize()`: `(x - mean) / sqrt(variance)`, as
#'   `layer_normalization(mean, variance)`.
#' - `dataset_cast()`: to `"float32"`/`"double"`, `"int32"`/`"integer"`
#'   (truncation) or `"bool"`/`"logical"` (`!= 0`), as `op_cast()`.
#' - `dataset_one_hot()`: class indices 0..`num_classes - 1` to one-hot rows
#'   (a new last dimension), as `op_one_hot()`.
#'
#' `scale`, `offset`, `mean` and `variance` are single numbers or one value
#' per position of the component's last dimension (per feature). Values are
#' float32 in the core whatever the R type (integers exact up to 2^24).
#'
#' @inheritParams dataset_batch
#' @param scale,offset Multiplier and addend.
#' @param mean,variance Per-feature statistics (variance > 0).
#' @param dtype Target type.
#' @param num_classes Number of classes.
#' @param components Which components of the elements to transform: numbers
#'   (1 = the features of `list(x, y)`) or names. `dataset_one_hot()`
#'   defaults to the last component (the labels).
#' @return A dataset.
#' @family dataset transforms
#' @examples
#' ds <- tensor_slices_dataset(list(matrix(0:255, 64, 4), rep(0:3, 16))) |>
#'   dataset_rescale(1 / 255) |>
#'   dataset_one_hot(4) |>
#'   dataset_batch(32)
#' ds
#' @export
dataset_rescale <- function(dataset, scale, offset = 0, components = 1L) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_rescale")
  comps <- resolve_components(dataset, components, 1L)
  check_affine(scale, "scale")
  check_affine(offset, "offset")
  derive_dataset(dataset, with_core(cpp_dataset_affine(dataset$ptr, comps, as.numeric(scale), as.numeric(offset), "rescale")))
}

#' @rdname dataset_rescale
#' @export
dataset_normalize <- function(dataset, mean, variance, components = 1L) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_normalize")
  comps <- resolve_components(dataset, components, 1L)
  check_affine(mean, "mean")
  check_affine(variance, "variance")
  if (any(variance <= 0)) abort_value("{.arg variance} must be > 0.")
  sd <- sqrt(as.numeric(variance))
  derive_dataset(dataset, with_core(cpp_dataset_affine(dataset$ptr, comps, 1 / sd, -as.numeric(mean) / sd, "normalize")))
}

check_affine <- function(x, arg, call = sys.call(-1)) {
  if (!is.numeric(x) || length(x) == 0 || anyNA(x) || !all(is.finite(x))) {
    abort_value("{.arg {arg}} must be finite numbers, not {describe(x)}.", call = call)
  }
}

#' @rdname dataset_rescale
#' @export
dataset_cast <- function(dataset, dtype, components = 1L) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_cast")
  comps <- resolve_components(dataset, components, 1L)
  types <- c(float32 = "double", float64 = "double", double = "double", int32 = "integer",
             int64 = "integer", integer = "integer", bool = "logical", logical = "logical")
  check_choice(dtype, "dtype", names(types))
  derive_dataset(dataset, with_core(cpp_dataset_cast(dataset$ptr, comps, types[[dtype]])))
}

#' @rdname dataset_rescale
#' @export
dataset_one_hot <- function(dataset, num_classes, components = NULL) {
  check_dataset(dataset)
  check_element_dataset(dataset, "dataset_one_hot")
  num_classes <- check_int(num_classes, "num_classes", min = 1)
  comps <- resolve_components(dataset, components, "last")
  if (anyNA(comps)) abort_value("{.arg components} must be given when the element structure is unknown.")
  derive_dataset(dataset, with_core(cpp_dataset_one_hot(dataset$ptr, comps, num_classes)))
}

# Internal (benchmarks, tests): an input stage that sleeps `seconds` per
# element, i.e. a source of known cost.
dataset_delay <- function(dataset, seconds) {
  check_dataset(dataset)
  seconds <- check_num(seconds, "seconds", min = 0)
  derive_dataset(dataset, with_core(cpp_dataset_delay(dataset$ptr, seconds)))
}
