# plot() of a model: the DOT text against Keras 3's keras.utils.model_to_dot()
# (fixtures/keras/plot_*.dot, tools/make-keras-fixtures-plot.py, where
# Keras' node ids are replaced by the layers' names), the files it writes
# through Graphviz, and its errors.

has_dot <- function() nzchar(Sys.which("dot"))

# The DOT text plot() writes for `model`.
plot_dot <- function(model, ...) {
  file <- tempfile(fileext = ".dot")
  on.exit(unlink(file))
  out <- plot(model, ..., to_file = file)
  expect_identical(out, file)
  readLines(file, encoding = "UTF-8")
}

plot_fixture <- function(name) {
  readLines(test_path("fixtures", "keras", paste0("plot_", name, ".dot")), encoding = "UTF-8")
}

# The parts of DOT text: graph attributes, nodes (id -> label), edges
# ("a -> b"), and for each node the cluster it is drawn in ("" for none).
parse_dot <- function(lines) {
  node_re <- '^("[^"]+") \\[label=<(.*)>, fontname=Helvetica, border=0, margin=0\\];$'
  edge_re <- '^("[^"]+") -> ("[^"]+") \\[penwidth=2\\];$'
  nodes <- character()
  cluster_of <- character()
  edges <- character()
  clusters <- character()
  attrs <- character()
  current <- ""
  for (l in lines) {
    if (grepl(node_re, l)) {
      id <- sub(node_re, "\\1", l)
      nodes[[id]] <- sub(node_re, "\\2", l)
      cluster_of[[id]] <- current
    } else if (grepl(edge_re, l)) {
      edges <- c(edges, paste(sub(edge_re, "\\1", l), "->", sub(edge_re, "\\2", l)))
    } else if (grepl("^subgraph ", l)) {
      current <- gsub('"', "", sub("^subgraph (.*) \\{$", "\\1", l))
      clusters <- c(clusters, current)
    } else if (l == "}" && nzchar(current)) {
      current <- ""
    } else if (!l %in% c("digraph G {", "}")) {
      attrs <- c(attrs, paste0(if (nzchar(current)) paste0(current, ":"), gsub('"', "", l)))
    }
  }
  list(nodes = nodes[order(names(nodes))], cluster_of = cluster_of[order(names(cluster_of))],
       edges = sort(edges), clusters = sort(clusters), attrs = sort(attrs))
}

expect_same_graph <- function(got, want) {
  g <- parse_dot(got)
  w <- parse_dot(want)
  expect_identical(names(g$nodes), names(w$nodes))
  expect_identical(g$nodes, w$nodes)
  expect_identical(g$edges, w$edges)
  expect_identical(g$cluster_of, w$cluster_of)
  expect_identical(g$clusters, w$clusters)
  expect_identical(g$attrs, w$attrs)
}

seq_model <- function() {
  m <- keras_model_sequential(input_shape = 8, name = "seq") |>
    layer_dense(4, activation = "relu", name = "hidden") |>
    layer_dropout(0.5, name = "drop") |>
    layer_dense(2, activation = "softmax", name = "out")
  freeze_weights(m, from = "out")
  m
}

merge_model <- function() {
  x1 <- keras_input(4, name = "x1")
  x2 <- keras_input(3, name = "x2")
  a <- layer_dense(x1, 5, activation = "relu", name = "a")
  merged <- layer_concatenate(list(a, x2), name = "merge")
  keras_model(list(x1, x2), layer_dense(merged, 1, name = "y"), name = "two_inputs")
}

nested_model <- function() {
  inner_seq <- keras_model_sequential(input_shape = 4, name = "inner_seq") |>
    layer_dense(3, name = "inner_a") |> layer_dense(3, name = "inner_b")
  fin <- keras_input(3, name = "fin")
  inner_fun <- keras_model(fin, layer_dense(fin, 2, name = "fdense"), name = "inner_fun")
  x <- keras_input(4, name = "x")
  z <- x |> inner_seq() |> inner_fun() |> layer_dense(1, name = "head")
  keras_model(x, z, name = "outer")
}

# Temporary files plot() left next to `file` (".<name>-...").
leftovers <- function(file) {
  all <- list.files(dirname(file), all.files = TRUE)
  all[startsWith(all, paste0(".", basename(file)))]
}

# A self-contained executable named `dot` in a new folder (a failing one).
fake_dot_dir <- function() {
  dir <- tempfile("fake-dot-")
  dir.create(dir)
  writeLines(c("#!/bin/sh",
               "# writes a partial file to the -o argument, then fails",
               "while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo partial > \"$2\"; fi; shift; done",
               "echo 'Error: syntax error in line 1' >&2", "exit 1"),
             file.path(dir, "dot"))
  Sys.chmod(file.path(dir, "dot"), "0755")
  dir
}

test_that("a sequential model's DOT text is Keras 3's, label for label", {
  m <- seq_model()
  got <- plot_dot(m, show_shapes = TRUE, show_dtype = TRUE, show_layer_names = TRUE,
                  show_layer_activations = TRUE, show_trainable = TRUE)
  expect_identical(got, plot_fixture("sequential_all"))
  expect_same_graph(plot_dot(m, show_trainable = FALSE), plot_fixture("sequential_default"))
  expect_same_graph(plot_dot(m, rankdir = "LR", dpi = 96, show_trainable = FALSE),
                    plot_fixture("sequential_lr"))
  # The sequential model's input layer is not drawn; the layers form a chain.
  p <- parse_dot(got)
  expect_length(p$nodes, 3)
  expect_identical(p$edges, sort(c('"hidden" -> "drop"', '"drop" -> "out"')))
})

test_that("two inputs and a merge: every input's edge reaches the merge", {
  got <- plot_dot(merge_model(), show_shapes = TRUE, show_layer_names = TRUE, show_layer_activations = TRUE)
  expect_same_graph(got, plot_fixture("merge"))
  p <- parse_dot(got)
  expect_setequal(p$edges, c('"x1" -> "a"', '"a" -> "merge"', '"x2" -> "merge"', '"merge" -> "y"'))
  expect_match(p$nodes[['"merge"']], "Input shape: <b>[(None, 5), (None, 3)]</b>", fixed = TRUE)
  # InputLayer boxes have an output shape only.
  expect_no_match(p$nodes[['"x1"']], "Input shape", fixed = TRUE)
})

test_that("nested models are one box, or a dashed cluster with expand_nested", {
  m <- nested_model()
  collapsed <- plot_dot(m, show_layer_names = TRUE, show_shapes = TRUE)
  expect_same_graph(collapsed, plot_fixture("nested_collapsed"))
  p <- parse_dot(collapsed)
  expect_length(p$clusters, 0)
  expect_match(p$nodes[['"inner_seq"']], "<b>inner_seq</b> (Sequential)", fixed = TRUE)
  expect_match(p$nodes[['"inner_fun"']], "<b>inner_fun</b> (Functional)", fixed = TRUE)

  expanded <- plot_dot(m, show_layer_names = TRUE, show_shapes = TRUE, expand_nested = TRUE)
  expect_same_graph(expanded, plot_fixture("nested_expanded"))
  p <- parse_dot(expanded)
  expect_identical(p$clusters, c("cluster_inner_fun", "cluster_inner_seq"))
  expect_identical(unname(p$cluster_of[c('"inner_a"', '"inner_b"', '"fin"', '"fdense"', '"x"')]),
                   c("cluster_inner_seq", "cluster_inner_seq", "cluster_inner_fun", "cluster_inner_fun", ""))
  # Edges enter a functional model at its input layer and a sequential one at its first layer.
  expect_true(all(c('"x" -> "inner_a"', '"inner_b" -> "fin"', '"fdense" -> "head"') %in% p$edges))
  expect_true(any(grepl("^cluster_inner_seq:style=dashed;$", p$attrs)))
})

test_that("a sequential model nested in a sequential one, expanded, with trainable flags", {
  inner <- keras_model_sequential(input_shape = 4, name = "inner") |>
    layer_dense(3, name = "inner_dense") |> layer_batch_normalization(name = "bn")
  outer <- keras_model_sequential(input_shape = 4, name = "outer", layers = list(inner)) |>
    layer_dense(2, name = "head")
  freeze_weights(outer, from = "head")
  expect_same_graph(plot_dot(outer, show_layer_names = TRUE, expand_nested = TRUE, show_trainable = TRUE),
                    plot_fixture("sequential_nested"))
  # Not expanded: the nested model is one (trainable) box.
  p <- parse_dot(plot_dot(outer, show_trainable = TRUE))
  expect_identical(p$edges, '"inner" -> "head"')
  expect_match(p$nodes[['"inner"']], "<b>Sequential</b>.*<b>Trainable</b>")
})

test_that("a layer called twice is one box with an edge from each caller", {
  i1 <- keras_input(3, name = "i1")
  i2 <- keras_input(3, name = "i2")
  shared <- layer_dense(units = 2, name = "shared")
  m <- keras_model(list(i1, i2), layer_add(list(shared(i1), shared(i2)), name = "add"), name = "siam")
  expect_same_graph(plot_dot(m, show_shapes = TRUE, show_dtype = TRUE, show_layer_names = TRUE),
                    plot_fixture("shared"))
})

test_that("the show_* flags change the labels as in Keras 3", {
  m <- seq_model()
  label <- function(...) parse_dot(plot_dot(m, ...))$nodes[['"hidden"']]
  plain <- label(show_trainable = FALSE)
  expect_match(plain, '<td colspan="1" bgcolor="black"><font point-size="16" color="white"><b>Dense</b></font></td>',
               fixed = TRUE)
  expect_no_match(plain, "shape|dtype|Activation|[Tt]rainable")
  expect_match(label(show_layer_names = TRUE, show_trainable = FALSE), "<b>hidden</b> (Dense)", fixed = TRUE)
  shapes <- label(show_shapes = TRUE, show_trainable = FALSE)
  expect_match(shapes, 'colspan="2"', fixed = TRUE)
  expect_match(shapes, "Input shape: <b>\\(None, 8\\)</b>.*Output shape: <b>\\(None, 4\\)</b>")
  expect_match(label(show_dtype = TRUE, show_trainable = FALSE), "Output dtype: <b>float32</b>", fixed = TRUE)
  expect_match(label(show_layer_activations = TRUE, show_trainable = FALSE), "Activation: <b>relu</b>", fixed = TRUE)
  # Dropout has no activation, nor weights (no trainable cell).
  drop <- parse_dot(plot_dot(m, show_layer_activations = TRUE, show_trainable = TRUE))$nodes[['"drop"']]
  expect_no_match(drop, "Activation|[Tt]rainable")
  # show_trainable = NA (the default): shown when the model has non-trainable weights.
  expect_match(label(), "<b>Trainable</b>", fixed = TRUE)
  unfrozen <- keras_model_sequential(input_shape = 8) |> layer_dense(4, name = "d")
  expect_no_match(parse_dot(plot_dot(unfrozen))$nodes[['"d"']], "rainable")
  expect_match(parse_dot(plot_dot(unfrozen, show_trainable = TRUE))$nodes[['"d"']], "<b>Trainable</b>", fixed = TRUE)
})

test_that("rankdir, dpi and splines set the graph's attributes", {
  m <- seq_model()
  for (dir in c("TB", "LR", "BT", "RL")) {
    expect_true(paste0("rankdir=", dir, ";") %in% plot_dot(m, rankdir = dir))
  }
  got <- plot_dot(m, dpi = 72.5, splines = "curved")
  expect_true(all(c("dpi=72.5;", "splines=curved;", "concentrate=true;", "node [shape=record];") %in% got))
  expect_true("dpi=200;" %in% plot_dot(m))
})

test_that("layer_range draws the named layers only", {
  m <- merge_model()
  # The layers in model$layers' order: x1, x2, a, merge, y.
  expect_identical(vapply(m$layers, function(l) l$name, ""), c("x1", "x2", "a", "merge", "y"))
  p <- parse_dot(plot_dot(m, layer_range = c("x2", "merge")))
  expect_setequal(names(p$nodes), c('"a"', '"x2"', '"merge"'))
  expect_setequal(p$edges, c('"a" -> "merge"', '"x2" -> "merge"'))
  # A list of two names, and regular expressions (first match, last match).
  p2 <- parse_dot(plot_dot(m, layer_range = list("^x", "^[a-m]")))
  expect_setequal(names(p2$nodes), c('"x1"', '"x2"', '"a"', '"merge"'))
  expect_setequal(p2$edges, c('"x1" -> "a"', '"a" -> "merge"', '"x2" -> "merge"'))
  expect_error(plot(m, layer_range = c("a", "nope"), to_file = tempfile(fileext = ".dot")),
               class = "mirrored_value_error")
  expect_error(plot(m, layer_range = c("merge", "a"), to_file = tempfile(fileext = ".dot")),
               class = "mirrored_value_error")
  expect_error(plot(m, layer_range = "a"), class = "mirrored_value_error")
})

test_that("to_file writes a PNG image, a PDF and an SVG", {
  skip_if(!has_dot())
  m <- merge_model()
  file <- tempfile(fileext = ".png")
  on.exit(unlink(file), add = TRUE)
  expect_invisible(out <- plot(m, show_shapes = TRUE, to_file = file))
  expect_identical(out, file)
  sig <- readBin(file, "raw", 8)
  expect_identical(sig, as.raw(c(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)))
  skip_if_not_installed("png")
  img <- png::readPNG(file)
  expect_length(dim(img), 3)
  expect_gt(dim(img)[1], 100)
  expect_gt(dim(img)[2], 100)
  # A higher dpi draws a larger image.
  small <- tempfile(fileext = ".png")
  on.exit(unlink(small), add = TRUE)
  plot(m, show_shapes = TRUE, dpi = 50, to_file = small)
  expect_lt(dim(png::readPNG(small))[1], dim(img)[1])
  # No extension: PNG.
  bare <- tempfile()
  on.exit(unlink(bare), add = TRUE)
  plot(m, to_file = bare)
  expect_identical(readBin(bare, "raw", 4), as.raw(c(0x89, 0x50, 0x4e, 0x47)))
  pdf_file <- tempfile(fileext = ".pdf")
  svg_file <- tempfile(fileext = ".svg")
  on.exit(unlink(c(pdf_file, svg_file)), add = TRUE)
  plot(m, to_file = pdf_file)
  expect_identical(readChar(pdf_file, 5), "%PDF-")
  plot(m, to_file = svg_file)
  expect_true(any(grepl("<svg", readLines(svg_file))))
})

test_that("to_file = NULL draws the model on the current graphics device", {
  skip_if(!has_dot())
  skip_if_not_installed("png")
  file <- tempfile(fileext = ".png")
  on.exit(unlink(file), add = TRUE)
  grDevices::png(file, width = 400, height = 600)
  expect_null(plot(seq_model(), show_shapes = TRUE))
  grDevices::dev.off()
  expect_gt(file.size(file), 1000)
})

test_that("the timeseries classification vignette's plot(model, show_shapes = TRUE) works", {
  skip_if(!has_dot())
  skip_if_not_installed("png")
  input_layer <- keras_input(c(500, 1))
  block <- function(x) {
    x |> layer_conv_1d(filters = 64, kernel_size = 3, padding = "same") |>
      layer_batch_normalization() |> layer_activation_relu()
  }
  output_layer <- input_layer |> block() |> block() |> block() |>
    layer_global_average_pooling_1d() |> layer_dense(2, activation = "softmax")
  model <- keras_model(inputs = input_layer, outputs = output_layer)
  file <- tempfile(fileext = ".pdf")
  on.exit(unlink(file), add = TRUE)
  grDevices::pdf(file)
  expect_no_error(plot(model, show_shapes = TRUE))
  grDevices::dev.off()
  p <- parse_dot(plot_dot(model, show_shapes = TRUE))
  expect_length(p$nodes, 12)
  expect_length(p$edges, 11)
  expect_true(any(grepl("Input shape: <b>(None, 500, 1)</b>", p$nodes, fixed = TRUE)))
})

test_that("without Graphviz, plot() says to install it and leaves an existing file alone", {
  empty <- tempfile("no-dot-")
  dir.create(empty)
  old_path <- Sys.getenv("PATH")
  on.exit(Sys.setenv(PATH = old_path), add = TRUE)
  Sys.setenv(PATH = empty)
  expect_false(nzchar(Sys.which("dot")))
  file <- tempfile(fileext = ".png")
  writeLines("keep me", file)
  on.exit(unlink(file), add = TRUE)
  err <- expect_error(plot(seq_model(), to_file = file), class = "mirrored_dependency_error")
  expect_match(conditionMessage(err), "apt-get install graphviz", fixed = TRUE)
  expect_match(conditionMessage(err), "plot()", fixed = TRUE)
  expect_error(plot(seq_model()), class = "mirrored_dependency_error")
  expect_identical(readLines(file), "keep me")
  expect_identical(leftovers(file), character())
  # The DOT text needs no Graphviz.
  dot_file <- tempfile(fileext = ".dot")
  on.exit(unlink(dot_file), add = TRUE)
  plot(seq_model(), to_file = dot_file)
  expect_identical(readLines(dot_file)[1], "digraph G {")
})

test_that("a failing dot leaves an existing file alone and says why", {
  dir <- fake_dot_dir()
  old_path <- Sys.getenv("PATH")
  on.exit(Sys.setenv(PATH = old_path), add = TRUE)
  Sys.setenv(PATH = paste(dir, old_path, sep = .Platform$path.sep))
  file <- tempfile(fileext = ".png")
  writeLines("keep me", file)
  on.exit(unlink(c(file, dir), recursive = TRUE), add = TRUE)
  err <- expect_error(plot(seq_model(), to_file = file), class = "mirrored_io_error")
  expect_match(conditionMessage(err), "syntax error", fixed = TRUE)
  expect_identical(readLines(file), "keep me")
  expect_identical(leftovers(file), character())
})

test_that("without the png package, drawing on the device says to install it", {
  skip_if(!has_dot())
  env <- environment(getS3method("plot", "mirrored_model"))
  old <- get("plot_png_available", envir = env)
  locked <- bindingIsLocked("plot_png_available", env)
  if (locked) unlockBinding("plot_png_available", env)
  assign("plot_png_available", function() FALSE, envir = env)
  on.exit({
    assign("plot_png_available", old, envir = env)
    if (locked) lockBinding("plot_png_available", env)
  }, add = TRUE)
  err <- expect_error(plot(seq_model()), class = "mirrored_dependency_error")
  expect_match(conditionMessage(err), "install.packages(\"png\")", fixed = TRUE)
})

test_that("plot() of an unbuilt or empty model is a clear error", {
  unbuilt <- keras_model_sequential() |> layer_dense(2)
  err <- expect_error(plot(unbuilt), class = "mirrored_value_error")
  expect_match(conditionMessage(err), "not been built", fixed = TRUE)
  expect_error(plot(keras_model_sequential(input_shape = 3)), "no layers", class = "mirrored_value_error")
  expect_error(plot(keras_model_sequential()), class = "mirrored_value_error")
})

test_that("plot()'s arguments are checked", {
  m <- seq_model()
  f <- tempfile(fileext = ".dot")
  bad <- list(
    list(show_shapes = NA), list(show_dtype = "yes"), list(show_layer_names = c(TRUE, FALSE)),
    list(show_layer_activations = 1), list(expand_nested = NULL), list(show_trainable = "no"),
    list(rankdir = "tb"), list(rankdir = "UP"), list(rankdir = c("TB", "LR")),
    list(dpi = 0), list(dpi = -5), list(dpi = "200"), list(dpi = NA_real_), list(dpi = Inf),
    list(layer_range = 1:2), list(layer_range = c("hidden", NA)),
    list(to_file = 3), list(to_file = ""), list(to_file = c("a.png", "b.png")),
    list(to_file = tempfile(fileext = ".docx")),
    list(splines = "wiggly"), list(expand = TRUE), list(1)
  )
  for (args in bad) {
    if (is.null(args$to_file) && !"to_file" %in% names(args)) args$to_file <- f
    expect_error(do.call(plot, c(list(m), args)), class = "mirrored_value_error")
  }
  err <- expect_error(plot(m, expand = TRUE, to_file = f), class = "mirrored_value_error")
  expect_match(conditionMessage(err), "expand_nested", fixed = TRUE)
  expect_match(conditionMessage(err), "plot()", fixed = TRUE)
  expect_error(plot(m, to_file = file.path(tempfile(), "model.png")), class = "mirrored_io_error")
  expect_false(file.exists(f))
})
