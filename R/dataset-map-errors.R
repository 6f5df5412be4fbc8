# Errors inside a dataset_map() function. The core calls the function with
# the element's arrays as values, so R would describe a failure with the
# whole deparsed batch as its call. The function runs inside a wrapper that
# turns any error into a mirrored_value_error naming dataset_map(), the
# element's component shapes and the original message (never the values).

# `fn`: the map function; `call`: the user's dataset_map() call; `what`:
# the user's function (dataset_map, dataset_filter).
map_reporting_shapes <- function(fn, call, what = "dataset_map") {
  force(fn)
  force(call)
  function(...) {
    tryCatch(fn(...), error = function(e) {
      args <- list(...)
      shapes <- element_shapes_text(args, fn)
      msg <- conditionMessage(e)
      inner <- conditionCall(e)
      # The failing expression, when it is code (short), not a call whose
      # arguments are the batch's values.
      where <- if (is.call(inner) && !is.function(inner[[1]]) && !identical(inner, quote(fn(...)))) {
        txt <- paste(deparse(inner, width.cutoff = 500L, nlines = 1L), collapse = " ")
        if (nchar(txt) <= 80) txt
      }
      cli::cli_abort(c("{.fn {what}}: the function failed on an element of shapes {shapes}.",
                       x = if (is.null(where)) "{msg}" else "In {.code {where}}: {msg}"),
                     class = c("mirrored_map_error", "mirrored_value_error", "mirrored_error"),
                     call = call)
    })
  }
}

# "x: (32, 784), y: (32)": each component's shape, named by the element's
# names, else by the function's argument names, else by position.
element_shapes_text <- function(args, fn) {
  if (length(args) == 1 && is.list(args[[1]]) && !is.null(names(args[[1]]))) args <- args[[1]]
  nms <- names(args)
  if (is.null(nms) || !all(nzchar(nms))) {
    formal <- setdiff(names(formals(fn)), "...")
    nms <- if (length(formal) >= length(args)) formal[seq_along(args)] else
      paste0("component ", seq_along(args))
  }
  shape_of <- function(a) {
    d <- if (is.null(dim(a))) length(a) else dim(a)
    paste0("(", paste(d, collapse = ", "), ")")
  }
  paste0(nms, ": ", vapply(args, shape_of, ""), collapse = ", ")
}
