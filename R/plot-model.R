# plot() of a model: keras3's plot() method for models, which asks Keras 3's
# keras.utils.model_to_dot() for a Graphviz graph and has Graphviz draw it.
# Here the DOT text is written in R from the model's graph (the entries
# summary() lists, R/model-call.R), with the labels Keras 3 draws (HTML-like
# tables: the layer's class or "name (class)", then its activation, then
# input / output shape, output dtype and trainable in one row), and
# Graphviz's `dot` program turns it into an image.

#' Plot a model's layer graph
#'
#' Draws the model as Keras 3 does (keras3's `plot()` of a model, through
#' `keras.utils.model_to_dot()`): one box per layer, an arrow per connection
#' between layers, nested models as one box or (with `expand_nested`) as a
#' dashed cluster of their own layers. mirrored writes the Graphviz DOT text
#' itself and runs Graphviz's `dot` program to draw it; no Python is
#' involved.
#'
#' @section Requirements: Graphviz's `dot` program on the `PATH` (Debian or
#'   Ubuntu: `apt-get install graphviz`; macOS: `brew install graphviz`;
#'   <https://graphviz.org/download/>), except for `to_file = "*.dot"`, which
#'   writes the DOT text; and the \pkg{png} package to draw the image on the
#'   current graphics device (`to_file = NULL`).
#'
#' @param x A model.
#' @param show_shapes Whether to show each layer's input and output shapes.
#' @param show_dtype Whether to show each layer's output dtype.
#' @param show_layer_names Whether to show each layer's name before its
#'   class.
#' @param ... Must be empty, but for `splines`, which Keras 3's
#'   `model_to_dot()` takes: how edges are drawn, `"ortho"` (the default,
#'   right-angled lines), `"curved"`, `"polyline"`, `"spline"`, `"line"`,
#'   `"none"`, `"true"` or `"false"`.
#' @param rankdir The direction of the graph: `"TB"` (top to bottom, a
#'   vertical plot), `"LR"` (left to right, a horizontal plot), `"BT"` or
#'   `"RL"`.
#' @param expand_nested Whether to draw the layers of nested models, each
#'   model as a dashed cluster, instead of one box per nested model.
#' @param dpi The image's resolution in dots per inch (default: the option
#'   `keras.plot.model.dpi`, else 200).
#' @param layer_range `NULL` (all layers), or the names of the first and
#'   last layers to draw (both included), as listed in `model$layers`. A name
#'   that is not a layer's is taken as a regular expression: the first layer
#'   matching `layer_range[1]` and the last matching `layer_range[2]`.
#' @param show_layer_activations Whether to show the activation of the
#'   layers that have one.
#' @param show_trainable Whether to show whether each layer with weights is
#'   trainable. `NA` (keras3's default): when the model has non-trainable
#'   weights.
#' @param to_file `NULL` to draw the plot on the current graphics device, or
#'   the file to write the image to, its format given by its extension:
#'   `png` (also without an extension), `pdf`, `svg`, `jpg`/`jpeg`, `gif`,
#'   `ps`, `eps`, or `dot`/`gv` for the DOT text. An existing file is only
#'   replaced once the new image is complete.
#' @return `to_file`, invisibly, when given; otherwise `NULL`, invisibly
#'   (called to draw the plot).
#' @family model functions
#' @seealso [summary.mirrored_model()]
#' @examplesIf nzchar(Sys.which("dot")) && requireNamespace("png", quietly = TRUE)
#' inputs <- keras_input(shape = 8, name = "features")
#' hidden <- inputs |> layer_dense(16, activation = "relu", name = "hidden")
#' outputs <- hidden |> layer_dense(1, name = "score")
#' model <- keras_model(inputs, outputs)
#' plot(model, show_shapes = TRUE, show_layer_names = TRUE)
#' file <- plot(model, rankdir = "LR", to_file = tempfile(fileext = ".png"))
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(2)
#' dot_file <- plot(model, show_shapes = TRUE, to_file = tempfile(fileext = ".dot"))
#' cat(readLines(dot_file), sep = "\n")
#' @export
plot.mirrored_model <- function(x, show_shapes = FALSE, show_dtype = FALSE, show_layer_names = FALSE, ...,
                                rankdir = "TB", expand_nested = FALSE,
                                dpi = getOption("keras.plot.model.dpi", 200L), layer_range = NULL,
                                show_layer_activations = FALSE, show_trainable = NA, to_file = NULL) {
  call <- sys.call()
  dots <- list(...)
  splines <- "ortho"
  if ("splines" %in% names(dots)) {
    splines <- check_choice(dots$splines, "splines",
                            c("ortho", "curved", "polyline", "spline", "line", "none", "true", "false"),
                            call = call)
    dots$splines <- NULL
  }
  check_dots_empty(dots, "plot", c(names(formals(plot.mirrored_model)), "splines"), call = call)
  flags <- list(show_shapes = show_shapes, show_dtype = show_dtype, show_layer_names = show_layer_names,
                show_layer_activations = show_layer_activations)
  for (nm in names(flags)) check_bool(flags[[nm]], nm, call = call)
  check_bool(expand_nested, "expand_nested", call = call)
  if (!(is.logical(show_trainable) && length(show_trainable) == 1)) {
    abort_value("{.arg show_trainable} must be TRUE, FALSE or NA, not {describe(show_trainable)}.", call = call)
  }
  check_choice(rankdir, "rankdir", c("TB", "LR", "BT", "RL"), call = call)
  if (!(is.numeric(dpi) && length(dpi) == 1 && !is.na(dpi) && is.finite(dpi) && dpi > 0)) {
    abort_value("{.arg dpi} must be a positive number, not {describe(dpi)}.", call = call)
  }
  if (is.list(layer_range) && all(vapply(layer_range, function(s) is.character(s) && length(s) == 1, logical(1)))) {
    layer_range <- unlist(layer_range, use.names = FALSE)
  }
  if (!is.null(layer_range) && !(is.character(layer_range) && length(layer_range) == 2 && !anyNA(layer_range))) {
    abort_value("{.arg layer_range} must be NULL or the names of two layers, not {describe(layer_range)}.", call = call)
  }
  if (!is.null(to_file) && !(is.character(to_file) && length(to_file) == 1 && !is.na(to_file) && nzchar(to_file))) {
    abort_value("{.arg to_file} must be NULL or a file name, not {describe(to_file)}.", call = call)
  }
  format <- if (is.null(to_file)) "png" else plot_file_format(to_file, call)

  model <- model_object(x)
  plot_check_drawable(model, call)
  if (is.na(show_trainable)) show_trainable <- sum(summary_model_rows(model)$non_trainable) > 0
  flags$show_trainable <- show_trainable
  text <- model_to_dot_text(model, flags, rankdir = rankdir, expand_nested = expand_nested, dpi = dpi,
                            layer_range = layer_range, splines = splines, call = call)

  if (!is.null(to_file)) {
    plot_write_file(text, to_file, format, call)
    return(invisible(to_file))
  }
  if (!plot_png_available()) {
    abort_kind("dependency",
               c("{.fn plot} needs the {.pkg png} package to draw a model on the graphics device.",
                 i = "Install it with {.code install.packages(\"png\")} (Debian: {.code apt-get install r-cran-png}), or write the image to a file with {.arg to_file}."),
               call = call)
  }
  file <- tempfile(paste0("mirrored_", gsub("[^A-Za-z0-9_]", "_", model$name), "_"), fileext = ".png")
  on.exit(unlink(file), add = TRUE)
  plot_write_file(text, file, "png", call)
  plot_draw_png(file)
  invisible(NULL)
}

# A model plot() can draw: built (its graph known) and with a layer.
plot_check_drawable <- function(model, call) {
  g <- model$graph()
  empty <- "Model {.val {model$name}} has no layers to plot: add layers to it first."
  if (is.null(g) && inherits(model, "mirrored_sequential") && !length(model$layers)) abort_value(empty, call = call)
  if (is.null(g)) {
    abort_value(c("Model {.val {model$name}} has not been built yet: its input shape is not known, so it has no layer graph to plot.",
                  i = "Give {.arg input_shape} to {.fn keras_model_sequential} (or start the model from {.fn keras_input}), or call the model on data first."),
                call = call)
  }
  if (!any(vapply(g$nodes, function(n) n$layer$class_name != "InputLayer", logical(1)))) {
    abort_value(empty, call = call)
  }
  invisible()
}

# The image format Graphviz is asked for, from the file's extension (none:
# png, as Keras).
plot_file_format <- function(file, call) {
  base <- basename(file)
  ext <- if (grepl("\\.[A-Za-z0-9]+$", base)) tolower(sub(".*\\.", "", base)) else ""
  if (!nzchar(ext)) return("png")
  formats <- c("png", "pdf", "svg", "jpg", "jpeg", "gif", "ps", "eps", "dot", "gv")
  if (!ext %in% formats) {
    abort_value(c("{.arg to_file} must end in one of {.val {formats}} (the image format), not {.val {ext}}.",
                  i = "Or give no extension for a PNG image."), call = call)
  }
  if (ext == "gv") "dot" else ext
}

# ---- DOT text ---------------------------------------------------------------

# The whole graph as DOT text (one string, lines ending in "\n"), laid out as
# pydot writes Keras 3's graph: its attributes, the node default, the nodes
# (nested models' clusters in their place), then the edges.
model_to_dot_text <- function(model, flags, rankdir = "TB", expand_nested = FALSE, dpi = 200,
                              layer_range = NULL, splines = "ortho", call = NULL) {
  ids <- new.env(parent = emptyenv())
  ids$objects <- list()
  ids$ids <- character()
  body <- plot_graph_lines(model, flags, expand_nested, ids, layer_range = layer_range, call = call)
  lines <- c("digraph G {",
             paste0("rankdir=", rankdir, ";"),
             "concentrate=true;",
             paste0("dpi=", format(dpi, scientific = FALSE, trim = TRUE), ";"),
             paste0("splines=", splines, ";"),
             "node [shape=record];",
             body,
             "}")
  paste0(lines, "\n", collapse = "")
}

# The node and edge lines of one model's graph: the model itself, or (with
# `subgraph`) a nested model's cluster.
plot_graph_lines <- function(model, flags, expand_nested, ids, subgraph = FALSE, layer_range = NULL, call = NULL) {
  g <- model$graph()
  entries <- graph_entries(g)
  sequential <- inherits(model, "mirrored_sequential")
  key <- function(e) e$model %||% e$layer
  # The boxes: each layer or nested model once (its first call); a
  # sequential model's input layer is not drawn (Keras draws model$layers).
  owners <- Filter(function(e) e$owner, entries)
  if (sequential) owners <- Filter(function(e) !(length(e$outputs) == 1 && e$outputs %in% g$inputs), owners)
  if (!is.null(layer_range)) owners <- owners[plot_layer_range(owners, layer_range, call)]
  drawn <- lapply(owners, key)
  is_drawn <- function(obj) any(vapply(drawn, identical, logical(1), obj))

  lines <- character()
  if (subgraph) {
    cluster <- paste0("cluster_", model$name)
    if (!grepl("^[A-Za-z_][A-Za-z0-9_]*$", cluster)) cluster <- dot_id(cluster)
    lines <- c(paste0("subgraph ", cluster, " {"),
               "style=dashed;", paste0("label=", dot_id(model$name), ";"), "labeljust=l;")
  }
  for (e in owners) {
    if (expand_nested && !is.null(e$model)) {
      lines <- c(lines, plot_graph_lines(e$model, flags, expand_nested, ids, subgraph = TRUE, call = call))
      next
    }
    label <- plot_entry_label(e, g, flags)
    lines <- c(lines, paste0(plot_node_id(ids, key(e), if (is.null(e$model)) e$layer$name else e$model$name),
                             " [label=<", label, ">, fontname=Helvetica, border=0, margin=0];"))
  }

  # The edges: for each call and each tensor it takes, from the box that
  # made the tensor to the call's box. Expanded nested models are entered:
  # an edge leaves from the layer inside that made the tensor and reaches
  # the nested model's input layer (functional) or first layer (sequential).
  producer <- integer(length(g$nodes))
  for (j in seq_along(entries)) producer[entries[[j]]$outputs + 1L] <- j
  edges <- character()
  for (e in entries) {
    if (!is_drawn(key(e))) next
    for (j in seq_along(e$inputs)) {
      i <- e$inputs[[j]]
      if (sequential && i %in% g$inputs) next
      src_entry <- entries[[producer[i + 1L]]]
      if (!is_drawn(key(src_entry))) next
      src <- if (expand_nested && !is.null(src_entry$model)) g$nodes[[i + 1L]]$layer else key(src_entry)
      dst <- if (expand_nested && !is.null(e$model)) plot_nested_destination(e$model, j) else key(e)
      edges <- c(edges, paste0(plot_node_id(ids, src, src$name), " -> ", plot_node_id(ids, dst, dst$name),
                               " [penwidth=2];"))
    }
  }
  lines <- c(lines, unique(edges))
  if (subgraph) lines <- c(lines, "}")
  lines
}

# The layer inside a nested model (drawn expanded) that its j-th input goes
# to: a functional model's input layer, a sequential model's first layer
# (entered again when that is a model).
plot_nested_destination <- function(model, j) {
  g <- model$graph()
  if (!inherits(model, "mirrored_sequential")) {
    return(g$nodes[[g$inputs[[min(j, length(g$inputs))]] + 1L]]$layer)
  }
  first <- Filter(function(e) e$owner && !all(e$outputs %in% g$inputs), graph_entries(g))[[1]]
  if (is.null(first$model)) first$layer else plot_nested_destination(first$model, j)
}

# The indices of the boxes from the one named layer_range[1] to the one
# named layer_range[2]; a name that is no layer's is a regular expression
# (the first box matching the start, the last matching the end).
plot_layer_range <- function(owners, layer_range, call) {
  names <- vapply(owners, function(e) if (is.null(e$model)) e$layer$name else e$model$name, character(1))
  find <- function(pattern, last) {
    at <- which(names == pattern)
    if (!length(at)) {
      at <- tryCatch(which(grepl(pattern, names)), error = function(e) integer())
    }
    if (!length(at)) {
      abort_value(c("{.arg layer_range} names {.val {pattern}}, which is not a layer of this model (nor a pattern matching one).",
                    i = "Its layers: {.val {names}}."), call = call)
    }
    if (last) max(at) else min(at)
  }
  from <- find(layer_range[[1]], FALSE)
  to <- find(layer_range[[2]], TRUE)
  if (from > to) {
    abort_value("{.arg layer_range}: layer {.val {names[from]}} comes after {.val {names[to]}} in the model.", call = call)
  }
  seq(from, to)
}

# A DOT identifier for a layer or model object: its name, quoted; another
# object of the same name gets "_2", "_3", ....
plot_node_id <- function(ids, obj, name) {
  for (k in seq_along(ids$objects)) if (identical(ids$objects[[k]], obj)) return(ids$ids[[k]])
  id <- dot_id(name)
  n <- 1L
  while (id %in% ids$ids) {
    n <- n + 1L
    id <- dot_id(paste0(name, "_", n))
  }
  ids$objects[[length(ids$objects) + 1L]] <- obj
  ids$ids <- c(ids$ids, id)
  id
}

dot_id <- function(s) paste0("\"", gsub("\"", "\\\\\"", gsub("\\\\", "\\\\\\\\", s)), "\"")

html_escape <- function(s) {
  s <- gsub("&", "&amp;", s, fixed = TRUE)
  s <- gsub("<", "&lt;", s, fixed = TRUE)
  s <- gsub(">", "&gt;", s, fixed = TRUE)
  gsub("\"", "&quot;", s, fixed = TRUE)
}

# ---- labels -----------------------------------------------------------------

# A box's HTML-like label, as Keras 3's make_layer_label() lays it out: a
# black title row ("<b>Class</b>" or "<b>name</b> (Class)"), a white
# activation row, then one row of cells: input shape (not for an input
# layer), output shape, output dtype, trainable or non-trainable (for a
# layer with weights). The title and activation cells span as many columns
# as the flags ask for, whatever the layer shows.
plot_entry_label <- function(e, g, flags) {
  info <- if (is.null(e$model)) plot_layer_info(e, g) else plot_model_info(e$model)
  span <- max(1L, flags$show_dtype + flags$show_trainable + 2L * flags$show_shapes)
  title <- if (flags$show_layer_names) {
    paste0("<b>", html_escape(info$name), "</b> (", html_escape(info$class_name), ")")
  } else {
    paste0("<b>", html_escape(info$class_name), "</b>")
  }
  out <- paste0('<table border="0" cellborder="1" bgcolor="black" cellpadding="10">',
                '<tr><td colspan="', span, '" bgcolor="black"><font point-size="16" color="white">',
                title, "</font></td></tr>")
  if (flags$show_layer_activations && !is.null(info$activation)) {
    out <- paste0(out, '<tr><td bgcolor="white" colspan="', span, '"><font point-size="14">',
                  "Activation: <b>", html_escape(info$activation), "</b></font></td></tr>")
  }
  cell <- function(text) paste0('<td bgcolor="white"><font point-size="14">', text, "</font></td>")
  cols <- character()
  if (flags$show_shapes) {
    if (info$class_name != "InputLayer") cols <- c(cols, cell(paste0("Input shape: <b>", info$input_shape, "</b>")))
    cols <- c(cols, cell(paste0("Output shape: <b>", info$output_shape, "</b>")))
  }
  if (flags$show_dtype) cols <- c(cols, cell(paste0("Output dtype: <b>", info$dtype, "</b>")))
  if (flags$show_trainable && info$has_weights) {
    cols <- c(cols, if (info$trainable) {
      '<td bgcolor="forestgreen"><font point-size="14" color="white"><b>Trainable</b></font></td>'
    } else {
      '<td bgcolor="firebrick"><font point-size="14" color="white"><b>Non-trainable</b></font></td>'
    })
  }
  if (length(cols)) out <- paste0(out, "<tr>", paste(cols, collapse = ""), "</tr>")
  paste0(out, "</table>")
}

# What a layer's box shows; a layer called more than once shows its first
# call's shapes (Keras 3's layer$input and layer$output).
plot_layer_info <- function(e, g) {
  layer <- e$layer
  in_shapes <- lapply(e$inputs, function(i) g$nodes[[i + 1L]]$shape)
  cfg <- layer$config
  list(
    name = layer$name, class_name = layer$class_name,
    activation = plot_activation_name(cfg$activation),
    input_shape = plot_shapes(in_shapes),
    output_shape = plot_shapes(lapply(e$outputs, function(i) g$nodes[[i + 1L]]$shape)),
    dtype = plot_layer_dtype(layer),
    has_weights = plot_has_weights(layer, in_shapes),
    trainable = !identical(cfg$trainable, FALSE))
}

# What a (collapsed) nested model's box shows: its own inputs and outputs.
plot_model_info <- function(model) {
  g <- model$graph()
  shape_list <- function(idx) lapply(idx, function(i) g$nodes[[i + 1L]]$shape)
  dtypes <- vapply(g$outputs, function(i) plot_layer_dtype(g$nodes[[i + 1L]]$layer), character(1))
  has_weights <- any(vapply(graph_entries(g), function(e) {
    if (!is.null(e$model)) return(plot_model_info(e$model)$has_weights)
    e$owner && plot_has_weights(e$layer, lapply(e$inputs, function(i) g$nodes[[i + 1L]]$shape))
  }, logical(1)))
  list(
    name = model$name, class_name = keras_model_class(model), activation = NULL,
    input_shape = plot_shapes(shape_list(g$inputs)),
    output_shape = plot_shapes(shape_list(g$outputs), g$output_names),
    dtype = if (length(dtypes) == 1) dtypes else paste0("[", paste0("'", dtypes, "'", collapse = ", "), "]"),
    has_weights = has_weights, trainable = isTRUE(model$trainable))
}

# Shapes as Python prints them: "(None, 4)"; several: "[(None, 5), (None,
# 3)]"; named: "a: (None, 1), b: (None, 2)".
plot_shapes <- function(shapes, names = NULL) {
  one <- function(s) {
    dims <- c("None", ifelse(is.na(s), "None", format(s, scientific = FALSE, trim = TRUE)))
    if (length(dims) == 1) "(None,)" else paste0("(", paste(dims, collapse = ", "), ")")
  }
  s <- vapply(shapes, one, character(1))
  if (!is.null(names) && length(names) == length(s)) return(paste0(names, ": ", s, collapse = ", "))
  if (length(s) == 1) s else paste0("[", paste(s, collapse = ", "), "]")
}

# A layer's output dtype: an input layer's dtype, else the compute dtype of
# its dtype policy ("mixed_float16" computes in float16).
plot_layer_dtype <- function(layer) {
  d <- layer$config$dtype
  if (is.list(d)) d <- d$config$name
  if (!is.character(d) || length(d) != 1) return("float32")
  sub("^mixed_", "", d)
}

plot_activation_name <- function(a) {
  if (is.null(a)) return(NULL)
  if (is.character(a) && length(a) == 1) return(a)
  if (is.list(a)) return(a$config$name %||% a$class_name %||% "?")
  "?"
}

plot_has_weights <- function(layer, input_shapes) {
  if (layer$class_name == "InputLayer") return(FALSE)
  w <- tryCatch(layer$spec(input_shapes)$weights, error = function(e) NULL)
  length(w$name) > 0
}

# ---- drawing ----------------------------------------------------------------

plot_png_available <- function() requireNamespace("png", quietly = TRUE)

# Writes the DOT text (format "dot") or Graphviz's image of it to `file`,
# through a temporary file in the same folder: `file` is replaced only by a
# complete result, and left as it was when anything fails.
plot_write_file <- function(text, file, format, call) {
  dir <- dirname(file)
  if (!dir.exists(dir)) {
    abort_kind("io", "Cannot write {.file {file}}: folder {.file {dir}} does not exist.", call = call)
  }
  if (format != "dot") {
    dot <- Sys.which("dot")
    if (!nzchar(dot)) {
      abort_kind("dependency",
                 c("{.fn plot} needs Graphviz's {.code dot} program to draw the model, and it is not on the PATH.",
                   i = "Install Graphviz (Debian/Ubuntu: {.code apt-get install graphviz}; macOS: {.code brew install graphviz}; {.url https://graphviz.org/download/}).",
                   i = "Or write the graph's DOT text with {.code to_file = \"model.dot\"}."),
                 call = call)
    }
  }
  tmp <- tempfile(paste0(".", basename(file), "-"), tmpdir = dir)
  src <- tempfile("mirrored-plot-", fileext = ".dot")
  on.exit(unlink(c(tmp, src)), add = TRUE)
  con <- file(if (format == "dot") tmp else src, open = "w", encoding = "UTF-8")
  ok <- tryCatch({
    writeLines(text, con, sep = "", useBytes = FALSE)
    TRUE
  }, error = function(e) conditionMessage(e), finally = close(con))
  if (!isTRUE(ok)) abort_kind("io", "Cannot write {.file {file}}: {ok}", call = call)
  if (format != "dot") {
    out <- suppressWarnings(system2(dot, c(paste0("-T", format), "-o", shQuote(tmp), shQuote(src)),
                                    stdout = TRUE, stderr = TRUE))
    status <- attr(out, "status") %||% 0L
    if (status != 0 || !file.exists(tmp) || file.size(tmp) == 0) {
      abort_kind("io", c("Graphviz's {.code dot} failed to draw the model as {format} (status {status}).",
                         x = if (length(out)) paste(out, collapse = "\n") else "It gave no message."),
                 call = call)
    }
  }
  if (!file.rename(tmp, file)) {
    if (!file.copy(tmp, file, overwrite = TRUE)) {
      abort_kind("io", "Cannot write {.file {file}}.", call = call)
    }
  }
  invisible(file)
}

# Draws a PNG file on the current graphics device, scaled to fit, as keras3
# does (in a knitr document, knitr records the plot like any other).
plot_draw_png <- function(file) {
  img <- png::readPNG(file, native = TRUE)
  old <- graphics::par(mar = c(0, 0, 0, 0))
  on.exit(graphics::par(old), add = TRUE)
  graphics::plot.new()
  graphics::plot.window(xlim = c(0, ncol(img)), ylim = c(0, nrow(img)), asp = 1, xaxs = "i", yaxs = "i")
  graphics::rasterImage(img, 0, 0, ncol(img), nrow(img), interpolate = TRUE)
  invisible()
}
