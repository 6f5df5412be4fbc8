# Saving and loading models in the Keras 3 `.keras` format, weights in
# `.weights.h5` files, and the training state that lets fit() continue
# exactly where a saved run stood.
#
# A `.keras` file is a zip archive (members stored, as Keras writes them):
#   metadata.json     {"keras_version": ..., "date_saved": ...}
#   config.json       the model's Keras config (R/saving-config.R)
#   model.weights.h5  the HDF5 weights tree of Keras 3 (src/mr/io/keras_weights.h)
#   mirrored.json     what Keras does not store and ignores: the epoch and the
#                     step within it, the data-order seed, and the optimizer's
#                     exact hyper-parameters (config.json has float32 values)
# `.weights.h5` files hold the same tree at their root, with the training
# state as the root attribute "mirrored_state". Every file is written
# atomically (src/mr/io/file_util.h): a crash leaves the old file or the new
# one, never a torn one.

# ---- training state -------------------------------------------------------------

# The model's `training_state` field, an environment created on first use
# (so every reference to the model shares it):
#   data_seed  the shuffle seed of the current or last fit() on arrays
#   epoch      epochs completed by that fit (absolute, 1-based count)
#   pending    a saved position for the next fit() to resume from
training_state <- function(model) {
  if (is.null(model$training_state)) model$training_state <- new.env(parent = emptyenv())
  model$training_state
}

# A training-state record that holds only a position: `epoch` completed epochs
# plus `step` batches of the next one.
position_record <- function(epoch = 0L, step = 0L) {
  list(format = "mirrored.training_state", epoch = as.integer(epoch), step = as.integer(step))
}

# The state written into a file: `epoch` completed epochs plus `step` batches
# of the next one.
training_state_record <- function(model, epoch = NULL, step = 0L) {
  st <- training_state(model)
  opt <- model$optimizer
  list(format = "mirrored.training_state", version = 1L,
       epoch = as.integer(epoch %||% st$epoch %||% 0L), step = as.integer(step),
       data_seed = if (!is.null(st$data_seed)) as.numeric(st$data_seed),
       optimizer = if (!is.null(opt)) {
         list(class_name = opt$class_name, name = opt$name, config = opt$config,
              learning_rate = as.numeric(opt$learning_rate))
       })
}

# Called by fit() after on_train_begin: where to start. A pending position
# (from load_model(), load_model_weights() or callback_backup_and_restore())
# is used once. It applies when fit() continues the saved run, i.e. starts at
# the epoch the save was in (a backup decides that epoch itself): then the
# saved data-order seed is used and the batches already done are skipped.
resume_position <- function(model, initial_epoch, data_seed, steps = NULL) {
  st <- training_state(model)
  p <- st$pending
  st$pending <- NULL
  out <- list(initial_epoch = as.integer(initial_epoch), data_seed = data_seed, skip = 0L)
  if (is.null(p)) return(out)
  if (isTRUE(p$from_backup)) out$initial_epoch <- as.integer(p$epoch) + 1L
  if (out$initial_epoch == as.integer(p$epoch) + 1L) {
    if (!is.null(p$data_seed) && !is.null(data_seed)) out$data_seed <- p$data_seed
    out$skip <- as.integer(p$step %||% 0L)
    if (!is.null(steps) && out$skip >= steps) {
      out$initial_epoch <- out$initial_epoch + 1L
      out$skip <- 0L
    }
  }
  out
}

# fit() records what a save needs.
note_fit_start <- function(model, data_seed) {
  st <- training_state(model)
  st$data_seed <- data_seed
  invisible()
}

note_epoch_done <- function(model, epoch) {
  st <- training_state(model)
  st$epoch <- as.integer(epoch)
  invisible()
}

set_pending_resume <- function(model, rec, from_backup = FALSE) {
  if (is.null(rec) || !identical(rec$format, "mirrored.training_state")) return(invisible())
  st <- training_state(model)
  st$pending <- list(epoch = as.integer(rec$epoch %||% 0L), step = as.integer(rec$step %||% 0L),
                     data_seed = rec$data_seed, from_backup = from_backup)
  st$epoch <- as.integer(rec$epoch %||% 0L)
  if (!is.null(rec$data_seed)) st$data_seed <- rec$data_seed
  invisible()
}

# ---- files ------------------------------------------------------------------------

# Test hook: milliseconds to pause after each MiB written (the crash test
# uses it to kill a process in the middle of a checkpoint write).
write_delay_ms <- function() {
  v <- suppressWarnings(as.integer(Sys.getenv("MIRRORED_TEST_WRITE_DELAY_MS", "0")))
  if (is.na(v) || v < 0) 0L else v
}

write_atomic <- function(path, bytes) {
  with_core(cpp_write_file_atomic(path.expand(path), bytes, write_delay_ms()), call = user_call())
}

read_bytes <- function(path) with_core(cpp_read_file(path.expand(path), 2^40), call = user_call())

json_bytes <- function(x) charToRaw(enc2utf8(with_core(cpp_json_serialize(x), call = NULL)))

parse_json_bytes <- function(bytes, what) {
  text <- rawToChar(bytes)
  Encoding(text) <- "UTF-8"
  with_core(cpp_json_parse(text, what), call = NULL)
}

check_overwrite <- function(path, overwrite, call = sys.call(-1)) {
  if (!file.exists(path) || dir.exists(path)) return(invisible())
  if (overwrite) return(invisible())
  if (interactive() && isTRUE(utils::askYesNo(sprintf("File '%s' already exists - overwrite?", path)))) {
    return(invisible())
  }
  abort_kind("io", "File {.file {path}} already exists (pass {.code overwrite = TRUE} to force save).",
             call = call)
}

# The Keras weights layout of a model: one group per layer of model.layers
# (Sequential models leave the InputLayer out), named after the layer class
# with a counter per class. A nested model is a group named after its class
# ("functional", "sequential") holding its own layers' groups
# (layers/functional/layers/dense/vars/0), as Keras 3 writes it.
weights_layout <- function(model) {
  g <- model$graph()
  if (is.null(g)) abort_value("Model {.val {model$name}} is not built yet (no input shape): it has no weights to save or load.")
  out <- weights_groups(g, inherits(model, "mirrored_sequential"), "", g, graph_shares(g))
  list(model_name = model$name, groups = out$groups, names = out$names, nodes = as.integer(out$nodes),
       optimizer = !is.null(model$optimizer), optimizer_name = model$optimizer$name %||% "",
       inner_optimizer_name = model$optimizer$inner_optimizer$name %||% "")  # i14-mpapi
}

# The groups of graph `g` (the model's own graph, or a nested model's) under
# `prefix`. The variables live in the top graph `top`: a layer's group
# points at the node of `top` that owns the layer (-1: no variables, as for
# a nested model's own group).
weights_groups <- function(g, sequential, prefix, top, top_shares) {
  entries <- Filter(function(e) e$owner, graph_entries(g))
  if (sequential) entries <- entries[-1]
  used <- list()
  groups <- names <- character()
  nodes <- integer()
  for (e in entries) {
    base <- if (is.null(e$model)) to_snake_case(e$layer$class_name) else tolower(keras_model_class(e$model))
    n <- used[[base]]
    used[[base]] <- if (is.null(n)) 0L else n + 1L
    group <- paste0(prefix, "layers/", if (is.null(n)) base else paste0(base, "_", n + 1L))
    if (is.null(e$model)) {
      owner <- which(top_shares < 0 & vapply(top$nodes, function(t) identical(t$layer, e$layer), logical(1)))
      groups <- c(groups, group)
      names <- c(names, e$layer$name)
      nodes <- c(nodes, if (length(owner)) owner[1] - 1L else -1L)
    } else {
      inner <- weights_groups(e$model$graph(), inherits(e$model, "mirrored_sequential"),
                              paste0(group, "/"), top, top_shares)
      groups <- c(groups, group, inner$groups)
      names <- c(names, e$model$name, inner$names)
      nodes <- c(nodes, -1L, inner$nodes)
    }
  }
  list(groups = groups, names = names, nodes = nodes)
}

weights_bytes <- function(model, what, state = NULL) {
  attrs <- if (!is.null(state)) c(mirrored_state = with_core(cpp_json_serialize(state), call = NULL)) else character()
  with_core(cpp_weights_write(model$ptr(), weights_layout(model), as.character(names(attrs)),
                              as.character(attrs), what),
            call = NULL)
}

# Loads a weights image into a model (checked in full before anything
# changes), restores the optimizer state when asked, and returns the
# training state stored in the file (or NULL).
load_weights_bytes <- function(model, bytes, what, load_optimizer = TRUE, exact_lr = NULL) {
  res <- with_core(cpp_weights_read(model$ptr(), weights_layout(model), bytes, what,
                                    load_optimizer && !is.null(model$optimizer)), call = NULL)
  if (identical(res$optimizer, "mismatch")) {
    cli::cli_warn(c("Skipping variable loading for optimizer {.val {model$optimizer$name}}: the file's optimizer variables do not match it ({what}).",
                    i = "The weights were loaded; the optimizer starts fresh."),
                  class = "mirrored_io_warning")
  } else if (res$optimizer %in% c("loaded", "partial") &&
             !inherits(model$optimizer$learning_rate_setting, "mirrored_lr_schedule")) {
    lr <- exact_lr %||% model$optimizer$learning_rate
    if (as_float32(lr) != res$learning_rate) lr <- res$learning_rate
    if (!identical(lr, model$optimizer$learning_rate)) model$optimizer$learning_rate <- lr
  }
  # Nested model objects hold the loaded weights too.
  sync_nested_weights(model)
  invisible(res)
}

keras_members <- function(model, state) {
  what <- "model.weights.h5"
  meta <- list(keras_version = keras_version_written, date_saved = format(Sys.time(), "%Y-%m-%d@%H:%M:%S"))
  list(
    metadata.json = json_bytes(meta),
    config.json = json_bytes(model_keras_config(model)),
    model.weights.h5 = weights_bytes(model, what),
    mirrored.json = json_bytes(state)
  )
}

# Writes a model as a .keras archive (or, unzipped, a directory of members).
write_keras_file <- function(model, path, zipped = TRUE, state = training_state_record(model)) {
  members <- keras_members(model, state)
  times <- c(0, 0, as.numeric(Sys.time()), 0)
  if (!zipped) {
    if (!dir.exists(path) && !dir.create(path, showWarnings = FALSE)) {
      abort_kind("io", "Cannot create directory {.file {path}}.", call = NULL)
    }
    for (nm in names(members)) write_atomic(file.path(path, nm), members[[nm]])
    return(invisible())
  }
  bytes <- with_core(cpp_zip_write(names(members), unname(members), times, path), call = NULL)
  write_atomic(path, bytes)
}

#' Save a model to a `.keras` file
#'
#' Writes the model in the Keras 3 `.keras` format: a zip archive holding
#' `metadata.json`, `config.json` (the model's Keras config, including how it
#' was compiled), `model.weights.h5` (weights and optimizer state in Keras'
#' HDF5 layout) and `mirrored.json`, a member Keras ignores that records the
#' training position (epochs done, data-order seed) so that [load_model()]
#' followed by `fit(initial_epoch = )` continues exactly. Keras 3 can load
#' these files, and mirrored loads files Keras writes (for the layers it
#' supports).
#'
#' The file is written atomically: a temporary file in the same directory is
#' written, flushed to disk and renamed over `filepath`, so a crash or a
#' failed save never leaves a damaged file behind (an existing file stays as
#' it was).
#'
#' @param model A model.
#' @param filepath Path ending in `.keras`, or `NULL` to return the archive
#'   as a raw vector.
#' @param overwrite Whether to replace an existing file (in an interactive
#'   session you are asked otherwise).
#' @param zipped `TRUE` (default) for a zip archive; `FALSE` writes the
#'   members into a directory `filepath`.
#' @param ... Unused; must be empty.
#' @return The model, invisibly; a raw vector when `filepath` is `NULL`.
#' @family saving functions
#' @seealso [load_model()], [save_model_weights()], [callback_model_checkpoint()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' path <- tempfile(fileext = ".keras")
#' save_model(model, path)
#' model2 <- load_model(path)
#' all.equal(get_weights(model), get_weights(model2))
#' @export
save_model <- function(model, filepath = NULL, overwrite = FALSE, zipped = NULL, ...) {
  check_model_arg(model)
  if (...length()) abort_value("Unknown argument{?s} {.arg {names(list(...))}}.")
  check_bool(overwrite, "overwrite")
  if (!is.null(zipped)) check_bool(zipped, "zipped")
  zipped <- zipped %||% TRUE
  if (is.null(filepath)) {
    members <- keras_members(model, training_state_record(model))
    return(with_core(cpp_zip_write(names(members), unname(members), c(0, 0, as.numeric(Sys.time()), 0),
                                   "<raw .keras>")))
  }
  filepath <- path.expand(check_string(filepath, "filepath"))
  if (zipped && grepl("\\.(h5|hdf5)$", filepath, ignore.case = TRUE)) {
    abort_kind("not_supported", c("{.fn save_model} writes the {.file .keras} format; Keras' legacy HDF5 model files ({.file {basename(filepath)}}) are not written.",
                                  i = "Use a {.file .keras} path, or {.fn save_model_weights} with a {.file .weights.h5} path for the weights alone."))
  }
  if (zipped && !endsWith(filepath, ".keras")) {
    abort_value("The filepath provided must end in {.file .keras} (Keras model format). Received: filepath={.file {filepath}}")
  }
  check_overwrite(filepath, overwrite)
  write_keras_file(model, filepath, zipped)
  invisible(model)
}

# The members of a .keras source (path, directory or raw vector).
read_keras_source <- function(src, call = sys.call(-1)) {
  want <- c("config.json", "model.weights.h5")
  if (is.raw(src)) {
    what <- "<raw .keras>"
    names <- with_core(cpp_zip_names(src, what), call = call)
    opt <- intersect(c("metadata.json", "mirrored.json"), names)
    return(list(what = what, members = with_core(cpp_zip_read(src, what, c(want, opt)), call = call)))
  }
  path <- path.expand(check_string(src, "model", call = call))
  if (dir.exists(path)) {
    if (!file.exists(file.path(path, "config.json"))) {
      abort_kind("io", "{.file {path}} is a directory, expected a {.file .keras} file (or a directory holding {.file config.json}).",
                 call = call)
    }
    files <- c(want, intersect(c("metadata.json", "mirrored.json"), list.files(path)))
    members <- lapply(files, function(f) read_bytes(file.path(path, f)))
    names(members) <- files
    return(list(what = path, members = members))
  }
  if (!file.exists(path)) abort_kind("io", "Cannot load {.file {path}}: no such file.", call = call)
  if (!endsWith(path, ".keras")) {
    abort_kind("io", c("File format not supported: {.file {path}}.",
                       i = "mirrored loads Keras 3 {.file .keras} files (weights: {.fn load_model_weights} on {.file .weights.h5})."),
               call = call)
  }
  bytes <- read_bytes(path)
  names <- with_core(cpp_zip_names(bytes, path), call = call)
  missing <- setdiff(want, names)
  if (length(missing)) {
    extra <- if ("model.weights.npz" %in% names) " (npz weights are not supported)" else ""
    abort_kind("io", "{.file {path}} is not a Keras 3 model archive: it has no {.file {missing}}{extra}.", call = call)
  }
  opt <- intersect(c("metadata.json", "mirrored.json"), names)
  list(what = path, members = with_core(cpp_zip_read(bytes, path, c(want, opt)), call = call))
}

#' Load a model saved in the `.keras` format
#'
#' Rebuilds the model from `config.json` (layer by layer, from fixed tables
#' of supported classes: nothing in the file is ever evaluated), loads its
#' weights and, with `compile = TRUE`, compiles it as it was compiled and
#' restores the optimizer state (slots and iteration count). A file saved by
#' mirrored also restores the training position, so that
#' `fit(initial_epoch = k)` with `k` the next epoch continues the saved run
#' exactly (same data order, same dropout masks, mid-epoch included).
#' Models saved with any number of replicas load under any other.
#'
#' @param model Path of a `.keras` file (or of an unzipped directory holding
#'   `config.json`), or a raw vector from `save_model(model, NULL)`.
#' @param custom_objects Named list, by the names the file uses, of what
#'   mirrored cannot read from a file: [Layer()] classes (a model saved
#'   without them still runs their saved graphs), loss and metric functions
#'   (`compile(loss = my_loss)` is saved as `"my_loss"`), [Loss()] classes,
#'   [custom_metric()]s, and functions `function(config)` returning a layer.
#' @param compile Whether to compile the model as it was saved.
#' @param safe_mode Accepted for compatibility: mirrored never runs code from
#'   a file, whatever its value.
#' @return The model.
#' @family saving functions
#' @seealso [save_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' path <- tempfile(fileext = ".keras")
#' save_model(model, path)
#' load_model(path)
#' @export
load_model <- function(model, custom_objects = NULL, compile = TRUE, safe_mode = TRUE) {
  check_bool(compile, "compile")
  check_bool(safe_mode, "safe_mode")
  custom_objects <- check_custom_objects(custom_objects)
  src <- read_keras_source(model)
  what <- src$what
  m <- src$members
  config <- parse_json_bytes(m$config.json, paste0("config.json in ", what))
  if (!is.list(config) || is.null(config$class_name)) {
    abort_kind("io", "config.json in {.file {what}} is not a Keras model config (no {.field class_name}).", call = NULL)
  }
  if (!is.null(m$metadata.json)) parse_json_bytes(m$metadata.json, paste0("metadata.json in ", what))
  state <- if (!is.null(m$mirrored.json)) parse_json_bytes(m$mirrored.json, paste0("mirrored.json in ", what))
  cfg_what <- paste0("config.json in '", what, "'")
  out <- model_from_keras(config$class_name, config$config, custom_objects, cfg_what)
  out$skip_initialization()  # every weight comes from the file below
  cc <- config$compile_config
  exact <- exact_optimizer(state)
  if (compile && length(cc)) compile_from_keras(out, cc, cfg_what, optimizer = exact, custom_objects = custom_objects)
  load_weights_bytes(out, m$model.weights.h5, paste0("model.weights.h5 in '", what, "'"),
                     load_optimizer = compile, exact_lr = state$optimizer$learning_rate)
  set_pending_resume(out, state)
  out
}

# The optimizer exactly as it was (mirrored.json), or NULL.
exact_optimizer <- function(state) {
  o <- state$optimizer
  if (is.null(o) || !is.list(o$config) || !is.character(o$class_name)) return(NULL)
  known <- c(Adam = "adam", AdamW = "adamw", SGD = "sgd", RMSprop = "rmsprop", Adagrad = "adagrad",
             Adadelta = "adadelta", Adamax = "adamax", Nadam = "nadam", Ftrl = "ftrl", Lion = "lion",
             Lamb = "lamb")
  if (!identical(unname(known[o$class_name]), o$config$kind)) return(NULL)
  opt <- Optimizer$new(o$class_name, o$name, o$config)
  if (is.numeric(o$learning_rate) && is.null(o$config$schedule)) opt$learning_rate <- o$learning_rate
  opt
}

check_model_arg <- function(model, call = sys.call(-1)) {
  if (!inherits(model, "mirrored_model")) abort_value("{.arg model} must be a model, not {describe(model)}.", call = call)
}

# The argument's objects, then the registry's (R/saving-custom-objects.R)
# under names the argument does not use.
check_custom_objects <- function(x, call = sys.call(-1)) {
  registry <- custom_objects_registry()
  if (is.null(x)) return(registry)
  check_custom_object_list(x, "custom_objects", call, allow_empty = FALSE)
  c(x, registry[setdiff(names(registry), names(x))])
}

#' Save and load model weights
#'
#' `save_model_weights()` writes the weights (and, for a compiled model, the
#' optimizer state) to a `.weights.h5` file in Keras 3's layout, atomically.
#' `load_model_weights()` reads such a file, or the weights of a `.keras`
#' archive, into a model of the same architecture; anything that does not
#' match (layers, variable counts, shapes) is an error and leaves the model
#' unchanged.
#'
#' @param model A model.
#' @param filepath Path ending in `.weights.h5` (`load_model_weights()` also
#'   takes a `.keras` file).
#' @param overwrite Whether to replace an existing file.
#' @param max_shard_size Not supported (must be `NULL`).
#' @param skip_mismatch Not supported (must be `FALSE`).
#' @param ... Must be empty: an unknown argument is an error.
#' @return The model, invisibly.
#' @family saving functions
#' @seealso [save_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' path <- tempfile(fileext = ".weights.h5")
#' save_model_weights(model, path)
#' load_model_weights(model, path)
#' @export
save_model_weights <- function(model, filepath, overwrite = FALSE, max_shard_size = NULL) {
  check_model_arg(model)
  check_bool(overwrite, "overwrite")
  check_unsupported(max_shard_size = max_shard_size)
  filepath <- path.expand(check_string(filepath, "filepath"))
  if (!endsWith(filepath, ".weights.h5")) {
    abort_value("The filename must end in {.file .weights.h5}. Received: filepath={.file {filepath}}")
  }
  check_overwrite(filepath, overwrite)
  write_weights_file(model, filepath)
  invisible(model)
}

write_weights_file <- function(model, path, state = training_state_record(model)) {
  write_atomic(path, weights_bytes(model, path, state))
}

#' @rdname save_model_weights
#' @export
load_model_weights <- function(model, filepath, skip_mismatch = FALSE, ...) {
  check_dots_empty(list(...), "load_model_weights", c("model", "filepath", "skip_mismatch"))
  check_model_arg(model)
  check_unsupported(skip_mismatch = skip_mismatch)
  filepath <- path.expand(check_string(filepath, "filepath"))
  if (endsWith(filepath, ".keras")) {
    src <- read_keras_source(filepath)
    state <- if (!is.null(src$members$mirrored.json)) {
      parse_json_bytes(src$members$mirrored.json, paste0("mirrored.json in ", filepath))
    }
    load_weights_bytes(model, src$members$model.weights.h5, paste0("model.weights.h5 in '", filepath, "'"))
    set_pending_resume(model, state)
    return(invisible(model))
  }
  if (dir.exists(filepath)) abort_kind("io", "{.file {filepath}} is a directory, expected a {.file .weights.h5} file.")
  if (!file.exists(filepath)) abort_kind("io", "Cannot load {.file {filepath}}: no such file.")
  if (!endsWith(filepath, ".weights.h5")) {
    abort_kind("io", "File format not supported: {.file {filepath}} (expected {.file .weights.h5} or {.file .keras}).")
  }
  state <- read_weights_file(model, filepath)
  set_pending_resume(model, state)
  invisible(model)
}

# Loads a .weights.h5 file; returns its training state (or NULL).
read_weights_file <- function(model, path) {
  bytes <- read_bytes(path)
  load_weights_bytes(model, bytes, path)
  weights_file_state(bytes, path)
}

# The training state recorded in a .weights.h5 file's bytes (or NULL),
# without loading its weights.
weights_file_state <- function(bytes, path) {
  s <- with_core(cpp_weights_root_attr(bytes, path, "mirrored_state"), call = NULL)
  if (is.null(s)) return(NULL)
  tryCatch(with_core(cpp_json_parse(s, paste0("mirrored_state in ", path)), call = NULL),
           mirrored_io_error = function(e) NULL)
}

#' Configuration of a model or layer
#'
#' `get_config()` returns the Keras config of a model (`name`, `layers`,
#' ...), of a layer or of an optimizer as an R list, with the class recorded in the attribute
#' `"__class__"`; `from_config()` builds a new, independent object from it
#' (fresh weights). The lists are what `config.json` of a `.keras` file
#' holds.
#'
#' @param object A model, a layer or an optimizer.
#' @param config A list from `get_config()` (or a full serialized config with
#'   `class_name` and `config`).
#' @param custom_objects See [load_model()].
#' @return `get_config()`: a named list. `from_config()`: a model or layer.
#' @family saving functions
#' @seealso [save_model()]
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' cfg <- get_config(model)
#' model2 <- from_config(cfg)
#' model2
#' @export
get_config <- function(object) {
  if (inherits(object, "mirrored_model")) {
    cfg <- model_inner_config(object)
    attr(cfg, "__class__") <- if (inherits(object, "mirrored_sequential")) "Sequential" else "Functional"
    return(cfg)
  }
  if (inherits(object, "mirrored_layer")) {
    cfg <- object$config  # the core's registry normalized it
    attr(cfg, "__class__") <- object$class_name
    return(cfg)
  }
  if (inherits(object, "mirrored_optimizer")) {  # i14-mpapi: Keras' optimizer.get_config()
    k <- optimizer_keras_config(object)
    cfg <- k$config
    attr(cfg, "__class__") <- k$class_name
    return(cfg)
  }
  abort_value("{.arg object} must be a model, a layer or an optimizer, not {describe(object)}.")
}

#' @rdname get_config
#' @export
from_config <- function(config, custom_objects = NULL) {
  custom_objects <- check_custom_objects(custom_objects)
  if (!is.list(config)) abort_value("{.arg config} must be a list from {.fn get_config}, not {describe(config)}.")
  cls <- attr(config, "__class__", exact = TRUE)
  if (is.null(cls) && !is.null(config$class_name) && is.list(config$config)) {
    cls <- config$class_name
    config <- config$config
  }
  if (!is.character(cls) || length(cls) != 1) {
    abort_value("{.arg config} has no class: give a list from {.fn get_config}.")
  }
  what <- "config"
  if (cls %in% c("Functional", "Sequential", "Model")) return(model_from_keras(cls, config, custom_objects, what))
  as_layer_function(layer_from_keras(list(class_name = cls, config = config), custom_objects, what))
}

#' Save and load a model's configuration
#'
#' keras3's `save_model_config()` writes the model's Keras config (what
#' `config.json` of a `.keras` file holds: the layers and how they connect,
#' no weights) as JSON; `load_model_config()` builds a new model from such a
#' file, with fresh weights. Custom classes are found in `custom_objects`,
#' then in the registry ([set_custom_objects()]).
#'
#' @param model A model.
#' @param filepath A `.json` file path; `NULL` returns the JSON text instead.
#' @param overwrite Whether to replace an existing file (otherwise an error,
#'   or a question in an interactive session). The file is written
#'   atomically: an existing file is never left half-written.
#' @param custom_objects Named list of custom objects (see [load_model()]).
#' @returns `save_model_config()`: the model, invisibly (the JSON text when
#'   `filepath` is `NULL`). `load_model_config()`: a new model.
#' @family saving functions
#' @examples
#' model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#' path <- tempfile(fileext = ".json")
#' save_model_config(model, path)
#' model2 <- load_model_config(path)
#' @export
save_model_config <- function(model, filepath = NULL, overwrite = FALSE) {
  model <- model_object(model)
  check_model_arg(model)
  check_bool(overwrite, "overwrite")
  bytes <- json_bytes(model_keras_config(model))
  if (is.null(filepath)) {
    text <- rawToChar(bytes)
    Encoding(text) <- "UTF-8"
    return(text)
  }
  filepath <- path.expand(check_string(filepath, "filepath"))
  check_overwrite(filepath, overwrite)
  write_atomic(filepath, bytes)
  invisible(model)
}

#' @rdname save_model_config
#' @export
load_model_config <- function(filepath, custom_objects = NULL) {
  filepath <- path.expand(check_string(filepath, "filepath"))
  if (!file.exists(filepath) || dir.exists(filepath)) {
    abort_kind("io", "{.file {filepath}} is not a file.")
  }
  config <- parse_json_bytes(read_bytes(filepath), filepath)
  if (!is.list(config) || !is.character(config$class_name) || !is.list(config$config)) {
    abort_kind("io", "{.file {filepath}} does not hold a Keras model config (no {.field class_name} and {.field config}).")
  }
  if (!config$class_name %in% c("Functional", "Sequential", "Model")) {
    abort_kind("io", "{.file {filepath}} holds the config of a {.cls {config$class_name}}, not of a model.")
  }
  from_config(config[c("class_name", "config")], custom_objects)
}
