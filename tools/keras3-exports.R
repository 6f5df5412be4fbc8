#!/usr/bin/env Rscript
# keras3's exports, for the test that every one of them exists in mirrored
# (tests/testthat/test-keras3-exports.R) and for the not-yet table
# (R/not-yet-table.R).
#
#   Rscript tools/keras3-exports.R <keras3 checkout> [--stubs]
#
# Writes tests/testthat/keras3-exports.tsv: one row per export of keras3's
# NAMESPACE, with its kind (function, object, or reexport when keras3 takes
# it from another package and its R sources do not define it) and its
# arguments as keras3's R sources define them (parsed, never evaluated).
# With --stubs, also prints not-yet table rows (R/not-yet-table.R) for the
# exports that mirrored's NAMESPACE lacks (the last column is a family of
# R/not-yet.R's `not_yet_families`, guessed from the name: check it).
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1) stop("usage: Rscript tools/keras3-exports.R <keras3 checkout> [--stubs]")
src <- args[[1]]
stubs <- "--stubs" %in% args

ns <- readLines(file.path(src, "NAMESPACE"))
exports <- sub('^export\\("?(.*?)"?\\)$', "\\1", grep("^export\\(", ns, value = TRUE))
version <- read.dcf(file.path(src, "DESCRIPTION"), fields = "Version")[1, 1]

# Top-level `name <- function(...)` and `name <- other_name` definitions.
defs <- list()
aliases <- list()
for (f in sort(list.files(file.path(src, "R"), pattern = "[.][Rr]$", full.names = TRUE))) {
  exprs <- tryCatch(parse(f, keep.source = FALSE), error = function(e) NULL)
  for (e in exprs) {
    if (!is.call(e) || !(identical(e[[1]], as.name("<-")) || identical(e[[1]], as.name("="))))
      next
    lhs <- e[[2]]
    if (!is.name(lhs) && !is.character(lhs)) next
    nm <- as.character(lhs)
    rhs <- e[[3]]
    if (is.call(rhs) && identical(rhs[[1]], as.name("function"))) {
      defs[[nm]] <- rhs[[2]]
    } else if (is.name(rhs)) {
      aliases[[nm]] <- as.character(rhs)
    }
  }
}
for (nm in names(aliases)) if (is.null(defs[[nm]]) && !is.null(defs[[aliases[[nm]]]]))
  defs[[nm]] <- defs[[aliases[[nm]]]]

signature <- function(fmls) {
  if (is.null(fmls) || length(fmls) == 0) return("")
  parts <- vapply(seq_along(fmls), function(i) {
    a <- names(fmls)[[i]]
    name <- if (make.names(a) == a || a == "...") a else paste0("`", a, "`")
    if (is.symbol(fmls[[i]]) && identical(as.character(fmls[[i]]), "")) return(name)
    paste(name, "=", paste(deparse(fmls[[i]], width.cutoff = 500L), collapse = " "))
  }, character(1))
  paste(parts, collapse = ", ")
}

kind <- ifelse(exports %in% names(defs), "function", "reexport")
sig <- vapply(exports, function(x) if (is.null(defs[[x]])) "..." else signature(defs[[x]]),
              character(1))
# keras3's objects that are not functions.
objects <- c("keras", "newaxis")
kind[exports %in% objects] <- "object"
sig[exports %in% objects] <- ""
stopifnot(!any(grepl("\t|\n", sig)))
out <- file.path("tests", "testthat", "keras3-exports.tsv")
con <- file(out, "w")
writeLines(c(paste0("# keras3 ", version, " exports (", length(exports),
                    "), from its NAMESPACE and R sources by tools/keras3-exports.R"),
             "name\tkind\targuments"), con)
writeLines(paste(exports, kind, sig, sep = "\t"), con)
close(con)
cat("wrote", out, ":", length(exports), "exports of keras3", version, "\n")

if (stubs) {
  mine <- sub('^export\\("?(.*?)"?\\)$', "\\1", grep("^export\\(", readLines("NAMESPACE"), value = TRUE))
  family <- function(x) {
    rules <- c(
      python = "^py_|^r_to_py$|^use_python$|^use_virtualenv$|^use_condaenv$|^import$|^install_keras$|^use_backend$|^config_|^tuple$|^keras$|^%py_class%$|^py_require$|^layer_(flax_module|jax_model|torch_module)_wrapper$|^layer_tfsm$|^export_savedmodel$",
      recurrent = "^layer_(lstm|gru|simple_rnn|rnn|bidirectional|masking|conv_lstm|time_distributed)|rnn_cell|^time_distributed$|^bidirectional$",
      text = "^layer_(text_vectorization|string_lookup|integer_lookup|hashing|hashed_crossing|category_encoding|discretization|multi_head_attention|attention|additive_attention|group_query_attention|.*_attention)|^text_|^adapt$|vocabulary|^pad_sequences$",
      images = "^image_|^layer_(random_|resizing|center_crop|conv_.*transpose|separable_conv|depthwise_conv|upsampling|zero_padding|cropping|auto_contrast|solarization|equalization|mix_up|rand_augment|max_num_bounding|grayscale|aug_mix|cut_mix|pipeline)|^application_|^timeseries_dataset|^audio_dataset|^op_image_|^clone_model$|^imagenet_",
      monitoring = "^callback_tensorboard$|^tensorboard$|^run_dir$",
      datasets = "^dataset_(boston_housing|california_housing|cifar10|cifar100|fashion_mnist|imdb|imdb_word_index|reuters|reuters_word_index)$|^get_file$",
      surface = "^op_|^random_|^%<>%$|^%<-active%$|^mark_active$|^active_property$|^as_iterator$|^iterate$|^iter_next$|^np_array$|^zip_lists$|^named_list$|^newaxis$|^shape$|^clear_session$|^pop_layer$|_on_batch$|^new_(callback|metric|learning_rate_schedule)_class$|^Metric$|^Constraint$|^metric_(true|false)_(positives|negatives)$|^metric_(mean|sum)$|serializ|custom_object|^(save|load)_model_config$|^get_registered|^layer_input$|^as_tensor$|^%as%$|^[.]$|^all_dims$|^get_source_inputs$"
    )
    for (f in names(rules)) if (grepl(rules[[f]], x)) return(f)
    "later"
  }
  missing <- setdiff(exports, mine)
  for (x in missing)
    cat(sprintf("%s | %s | %s\n", x, if (kind[match(x, exports)] == "object") "<object>" else sig[[x]], family(x)))
}
