# keras3's exports that mirrored does not implement yet. Each row of
# not_yet_table (R/not-yet-table.R) becomes, when the package is built, an
# exported function with keras3's arguments that raises a
# mirrored_not_yet_error naming itself and what to use instead or what will
# bring it; keras3's objects that are not functions (`keras`, `newaxis`)
# become objects whose use raises the same. So a keras3 script meets a
# classed, explained error at the first missing piece instead of R's "could
# not find function" at the last one of a pipe. The family of a row says
# which part of the plan brings it.

not_yet_families <- c(
  surface = "It is part of keras3's API surface that mirrored is adding next (tensor ops, random numbers, dataset and iterator helpers, callback and metric classes, serialization helpers).",
  recurrent = "Recurrent networks (LSTM, GRU, SimpleRNN, Bidirectional, masking) are planned next after the keras3 surface.",
  text = "Text data, vocabulary layers and attention are planned after recurrent networks.",
  images = "Image files, augmentation layers and the convolutions vision models need are planned after text.",
  monitoring = "TensorBoard output is planned; {.fn callback_device_monitor} shows where training time goes today.",
  datasets = "mirrored downloads nothing: read the data with {.fn npz_dataset}, {.fn tensor_slices_dataset} or your own arrays ({.fn dataset_mnist_sample} ships a sample of MNIST).",
  python = "It belongs to keras3's bridge to Python; mirrored runs without Python, so there is nothing to set up or convert: drop the call, or use mirrored's R functions.",
  later = "No part of mirrored's current plan brings it yet."
)

# Better advice than the family's, where mirrored has an alternative.
not_yet_instead <- c(
  keras = "Use mirrored's R functions ({.fn layer_dense}, {.fn compile}, ...) and {.code tf$distribute$...} for strategies.",
  dataset_fashion_mnist = "mirrored downloads nothing: read the files with {.fn npz_dataset}, or use {.fn dataset_mnist_sample}.",
  initializer_glorot_normal = "{.fn initializer_glorot_uniform}, {.fn initializer_he_normal} and {.fn initializer_random_normal} exist.",
  timeseries_dataset_from_array = "Use {.fn dataset_window} and {.fn dataset_flat_map}: {.code tensor_slices_dataset(x) |> dataset_window(n, shift = 1, drop_remainder = TRUE) |> dataset_flat_map(function(w) dataset_batch(w, n))}.",
  layer_time_distributed = "Use {.fn layer_dense} on the 3-D input: it acts on each time step; a custom per-step computation can be a {.fn Layer} class."
)

# The table's rows: a list of list(name, args, family).
not_yet_rows <- function(table = not_yet_table) {
  lines <- strsplit(table, "\n", fixed = TRUE)[[1]]
  lines <- lines[nzchar(trimws(lines))]
  lapply(strsplit(lines, " | ", fixed = TRUE), function(p) {
    if (length(p) != 3L || !p[[3]] %in% names(not_yet_families))
      stop("bad not-yet table row: ", paste(p, collapse = " | "))
    list(name = p[[1]], args = p[[2]], family = p[[3]])
  })
}

# The error every not-yet function and object raises. `what`: the function's
# or object's name (a function's message shows "name()"); `family`: its
# table row's, baked into the stub when the package is built.
not_yet_stop <- function(what, family, object = FALSE, call = rlang_caller()) {
  call <- call  # forced here, in this frame: see rlang_caller()
  advice <- if (what %in% names(not_yet_instead)) not_yet_instead[[what]] else not_yet_families[[family]]
  shown <- if (object) paste0("{.code ", what, "}") else paste0("{.fn ", what, "}")
  abort_not_yet(c(paste(shown, "(from keras3) is not implemented in mirrored yet."), i = advice),
                call = call, .envir = list2env(list(what = what)))
}

# The stub evaluates its first argument first (what a pipe hands it), so
# that in `x |> layer_a() |> layer_b()` the first missing function of the
# chain is the one reported, as when each is called in turn.
not_yet_function <- function(name, args, family, env) {
  f <- eval(parse(text = paste0("function(", args, ") NULL"), keep.source = FALSE)[[1]])
  first <- names(formals(f))[1]
  stop_call <- call("not_yet_stop", name, family)
  body(f) <- if (is.null(first) || identical(first, "...")) stop_call else {
    arg <- as.symbol(first)
    bquote({
      if (!missing(.(arg))) force(.(arg))
      .(stop_call)
    })
  }
  environment(f) <- env
  f
}

# keras3's module and constants: calling them, `$`, `[[` and `[` all raise.
not_yet_object <- function(name, family, env) {
  f <- function(...) NULL
  body(f) <- call("not_yet_stop", name, family, TRUE)
  environment(f) <- env
  structure(f, class = "mirrored_not_yet_object", not_yet_name = name, not_yet_family = family)
}

# `$`, `[[` and `[` on such an object.
not_yet_object_stop <- function(x, call) {
  not_yet_stop(attr(x, "not_yet_name"), attr(x, "not_yet_family"), TRUE, call = call)
}

#' @export
`$.mirrored_not_yet_object` <- function(x, name) not_yet_object_stop(x, sys.call())

#' @export
`[[.mirrored_not_yet_object` <- function(x, ...) not_yet_object_stop(x, sys.call())

#' @export
`[.mirrored_not_yet_object` <- function(x, ...) not_yet_object_stop(x, sys.call())

#' @export
print.mirrored_not_yet_object <- function(x, ...) {
  cat("<keras3's `", attr(x, "not_yet_name"), "`: not implemented in mirrored yet>\n", sep = "")
  invisible(x)
}

# Made once, when the package is built: the namespace gets one binding per
# row. A name the package's files define before this one is a row to delete
# (or an internal helper to rename): the build stops. Files after this one
# would replace the stub; tests/testthat/test-keras3-exports.R catches that.
local({
  ns <- topenv()
  for (row in not_yet_rows()) {
    if (exists(row$name, envir = ns, inherits = FALSE)) {
      stop("R/not-yet-table.R lists `", row$name, "`, which the package defines: remove the row")
    }
    value <- if (identical(row$args, "<object>")) not_yet_object(row$name, row$family, ns)
             else not_yet_function(row$name, row$args, row$family, ns)
    assign(row$name, value, envir = ns)
  }
})

# roxygen: the export() lines and the help page's aliases and table.
not_yet_namespace <- function() {
  vapply(not_yet_rows(), function(r) paste0("export(", deparse(as.name(r$name), backtick = TRUE), ")"),
         character(1))
}

not_yet_rd <- function() {
  rows <- not_yet_rows()
  esc <- function(x) gsub("([%{}\\\\])", "\\\\\\1", x)
  aliases <- vapply(rows, function(r) paste0("\\alias{", esc(r$name), "}"), character(1))
  fams <- vapply(rows, `[[`, "", "family")
  items <- vapply(names(not_yet_families), function(f) {
    names_f <- vapply(rows[fams == f], function(r) paste0("\\code{", esc(r$name), "}"), character(1))
    if (!length(names_f)) return("")
    text <- gsub("\\{\\.(fn|code) ([^}]*)\\}", "\\\\code{\\2}", not_yet_families[[f]])
    paste0("\\item{", f, " (", length(names_f), ")}{", esc_text(text), " ",
           paste(names_f, collapse = ", "), "}")
  }, character(1))
  c(aliases, "\\section{The functions, by what brings them}{", "\\describe{",
    items[nzchar(items)], "}", "}")
}

esc_text <- function(x) gsub("%", "\\\\%", x)

#' keras3 functions mirrored does not implement yet
#'
#' Every export of keras3 exists in mirrored. Those that mirrored does not
#' implement yet are functions with keras3's arguments that raise an error of
#' class `mirrored_not_yet_error` (also a `mirrored_value_error`), which
#' names the function and says what to use instead or what part of the plan
#' brings it; keras3's `keras` module object and `newaxis` constant raise the
#' same when used. The list below shrinks as features land.
#'
#' @returns Never returns: always raises a `mirrored_not_yet_error`.
#' @name not_yet
#' @evalRd not_yet_rd()
#' @evalNamespace not_yet_namespace()
#' @examples
#' tryCatch(layer_lstm(units = 8), mirrored_not_yet_error = function(e) conditionMessage(e))
NULL
