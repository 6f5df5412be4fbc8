# Checkpointing callbacks: callback_model_checkpoint() and
# callback_backup_and_restore(), on top of save_model()/save_model_weights()
# (R/saving.R). Both write atomically, so a crash never damages a checkpoint.

# ---- Python's str.format for file path templates -----------------------------

# Formats `template` as Python's `template.format(**values)` does for the
# subset Keras' file paths use: `{name}` and `{name:spec}` with the format
# spec [[fill]align][sign][0][width][,][.precision][type], type one of
# d, f, F, e, E, g, G, %, s or none; `{{` and `}}` are literal braces.
py_format <- function(template, values) {
  out <- character()
  i <- 1L
  n <- nchar(template)
  chars <- strsplit(template, "", fixed = TRUE)[[1]]
  while (i <= n) {
    ch <- chars[i]
    if (ch == "{" && i < n && chars[i + 1L] == "{") {
      out <- c(out, "{")
      i <- i + 2L
    } else if (ch == "}" && i < n && chars[i + 1L] == "}") {
      out <- c(out, "}")
      i <- i + 2L
    } else if (ch == "{") {
      close <- which(chars[i:n] == "}")[1]
      if (is.na(close)) stop_format("single '{' encountered in format string")
      field <- paste(chars[(i + 1L):(i + close - 2L)], collapse = "")
      if (close == 2L) field <- ""
      out <- c(out, py_format_field(field, values))
      i <- i + close
    } else if (ch == "}") {
      stop_format("single '}' encountered in format string")
    } else {
      out <- c(out, ch)
      i <- i + 1L
    }
  }
  paste(out, collapse = "")
}

stop_format <- function(msg) stop(structure(class = c("py_format_error", "error", "condition"),
                                            list(message = msg, call = NULL)))

py_format_field <- function(field, values) {
  parts <- regmatches(field, regexec("^([^:!]*)(?:![rsa])?(?::(.*))?$", field))[[1]]
  if (!length(parts)) stop_format(paste0("bad field '", field, "'"))
  key <- parts[2]
  spec <- parts[3]
  if (!nzchar(key) || is.null(values[[key]])) stop_format(paste0("KeyError: '", key, "'"))
  py_format_value(values[[key]], spec)
}

py_format_value <- function(v, spec) {
  m <- regmatches(spec, regexec("^(?:(.)?([<>=^]))?([-+ ])?(0)?([0-9]+)?(,)?(?:\\.([0-9]+))?([dfFeEgGs%])?$", spec,
                                perl = TRUE))[[1]]
  if (!length(m)) stop_format(paste0("Invalid format specifier '", spec, "'"))
  fill <- if (nzchar(m[2])) m[2] else if (nzchar(m[5])) "0" else " "
  align <- m[3]
  sign <- m[4]
  width <- if (nzchar(m[6])) as.integer(m[6]) else 0L
  comma <- nzchar(m[7])
  prec <- if (nzchar(m[8])) as.integer(m[8]) else NA_integer_
  type <- m[9]
  if (nzchar(m[5]) && !nzchar(align)) align <- "="
  is_int <- is.numeric(v) && length(v) == 1 && (is.integer(v) || isTRUE(attr(v, "py_int")))
  if (is.character(v)) {
    if (nzchar(type) && type != "s") stop_format(paste0("Unknown format code '", type, "' for object of type 'str'"))
    body <- if (is.na(prec)) v else substr(v, 1L, prec)
    return(py_pad(body, "", width, fill, if (nzchar(align)) align else "<"))
  }
  v <- as.numeric(v)[1]
  if (type == "d" && !is_int) stop_format("Unknown format code 'd' for object of type 'float'")
  if (type == "s") stop_format(paste0("Unknown format code 's' for object of type '", if (is_int) "int" else "float", "'"))
  neg <- v < 0 || (v == 0 && 1 / v < 0)
  a <- abs(v)
  body <- if (is.nan(v)) "nan" else if (is.infinite(v)) "inf" else switch(
    EXPR = if (nzchar(type)) type else if (is_int) "d" else "none",
    d = format(round(a), scientific = FALSE, big.mark = if (comma) "," else ""),
    f = , F = formatC(a, format = "f", digits = if (is.na(prec)) 6L else prec, big.mark = if (comma) "," else ""),
    e = , E = py_exp(a, if (is.na(prec)) 6L else prec),
    g = , G = py_general(a, if (is.na(prec)) 6L else max(prec, 1L)),
    `%` = paste0(formatC(a * 100, format = "f", digits = if (is.na(prec)) 6L else prec), "%"),
    none = if (is.na(prec)) py_float_str(a) else py_general(a, max(prec, 1L), keep_point = TRUE)
  )
  if (type %in% c("E", "G", "F")) body <- toupper(body)
  sgn <- if (neg && !is.nan(v)) "-" else if (sign == "+") "+" else if (sign == " ") " " else ""
  py_pad(body, sgn, width, fill, if (nzchar(align)) align else ">")
}

py_exp <- function(a, prec) {
  s <- formatC(a, format = "e", digits = prec)
  sub("e([+-])([0-9])$", "e\\10\\2", s)
}

# Python's 'g': scientific when exp < -4 or exp >= precision, trailing zeros
# removed.
py_general <- function(a, prec, keep_point = FALSE) {
  if (a == 0) return(if (keep_point) "0.0" else "0")
  e <- floor(log10(as.numeric(formatC(a, format = "e", digits = prec - 1L))))
  if (e < -4 || e >= prec) {
    s <- formatC(a, format = "e", digits = prec - 1L)
    mant <- sub("e.*$", "", s)
    if (grepl("\\.", mant)) mant <- sub("\\.?0+$", "", mant)
    ex <- as.integer(sub("^.*e", "", s))
    return(paste0(mant, "e", if (ex < 0) "-" else "+", sprintf("%02d", abs(ex))))
  }
  s <- formatC(a, format = "f", digits = max(prec - 1L - e, 0L))
  if (grepl("\\.", s)) s <- sub("\\.?0+$", "", s)
  if (keep_point && !grepl("\\.", s)) s <- paste0(s, ".0")
  s
}

py_pad <- function(body, sgn, width, fill, align) {
  len <- nchar(body) + nchar(sgn)
  if (len >= width) return(paste0(sgn, body))
  pad <- strrep(fill, width - len)
  switch(align,
    "<" = paste0(sgn, body, pad),
    ">" = paste0(pad, sgn, body),
    "=" = paste0(sgn, pad, body),
    "^" = {
      left <- (width - len) %/% 2
      paste0(strrep(fill, left), sgn, body, strrep(fill, width - len - left))
    }
  )
}

# Keras' `filepath.format(epoch = epoch, batch = batch, **logs)`.
checkpoint_path <- function(template, epoch, batch, logs) {
  values <- c(list(epoch = structure(as.integer(epoch), py_int = TRUE)),
              if (!is.null(batch)) list(batch = structure(as.integer(batch), py_int = TRUE)),
              logs)
  tryCatch(py_format(template, values), py_format_error = function(e) {
    abort_value(c("Failed to format this callback filepath: {.val {template}}.",
                  x = "Reason: {conditionMessage(e)}"), call = NULL)
  })
}

check_save_freq <- function(save_freq, call = sys.call(-1)) {
  if (identical(save_freq, "epoch")) return("epoch")
  if (is.numeric(save_freq) && length(save_freq) == 1 && !is.na(save_freq) && save_freq >= 1 &&
      save_freq == round(save_freq)) {
    return(as.integer(save_freq))
  }
  abort_value("{.arg save_freq} must be {.val epoch} or a positive whole number of batches, not {describe(save_freq)}.",
              call = call)
}

# ---- callback_model_checkpoint() ---------------------------------------------------

#' Save the model or its weights during training
#'
#' Saves the model (a `.keras` file, see [save_model()]) or only its weights
#' (`.weights.h5`, see [save_model_weights()]) at the end of every epoch, or
#' every `save_freq` batches. `filepath` may hold Python format fields filled
#' from the epoch number, the batch number (with a numeric `save_freq`) and
#' the logged metrics: `"ckpt-{epoch:02d}-{val_loss:.2f}.keras"`. Missing
#' directories are created; each file is written atomically, so a crash never
#' leaves a damaged checkpoint.
#'
#' With `save_best_only = TRUE` a file is written only when the monitored
#' value improves on the best so far (starting from
#' `initial_value_threshold`): `mode = "auto"` minimises losses and errors and
#' maximises accuracies. With `verbose = 1` each decision is printed as Keras
#' prints it.
#'
#' A model checkpoint written mid-epoch records the position in the epoch:
#' [load_model()] then `fit(initial_epoch = )` of that epoch continues from
#' the next batch.
#'
#' @param filepath Path (template) of the files: ending in `.keras`, or in
#'   `.weights.h5` when `save_weights_only = TRUE`.
#' @param monitor The metric for `save_best_only`.
#' @param verbose 0 (quiet) or 1 (a message at each save decision).
#' @param save_best_only Only save when the monitored value improves.
#' @param save_weights_only Save only the weights (and optimizer state).
#' @param mode One of `"auto"`, `"min"`, `"max"`.
#' @param save_freq `"epoch"`, or a number of batches between saves.
#' @param initial_value_threshold Best value to beat initially (`NULL`: none).
#' @returns A callback instance.
#' @family callbacks
#' @seealso [callback_backup_and_restore()], [save_model()]
#' @export
#' @examples
#' x <- matrix(runif(100), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 2)
#' model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
#' dir <- tempfile()
#' cb <- callback_model_checkpoint(file.path(dir, "ckpt-{epoch:02d}-{loss:.2f}.keras"))
#' model |> fit(x, y, epochs = 2, callbacks = list(cb), verbose = 0)
#' list.files(dir)
callback_model_checkpoint <- function(filepath, monitor = "val_loss", verbose = 0L, save_best_only = FALSE,
                                      save_weights_only = FALSE, mode = "auto", save_freq = "epoch",
                                      initial_value_threshold = NULL) {
  filepath <- path.expand(check_string_arg(filepath, "filepath"))
  monitor <- check_string_arg(monitor, "monitor")
  verbose <- check_number_arg(verbose, "verbose", min = 0, whole = TRUE)
  save_best_only <- check_flag_arg(save_best_only, "save_best_only")
  save_weights_only <- check_flag_arg(save_weights_only, "save_weights_only")
  mode <- check_mode_arg(mode)
  save_freq <- check_save_freq(save_freq)
  if (!is.null(initial_value_threshold)) {
    initial_value_threshold <- check_number_arg(initial_value_threshold, "initial_value_threshold")
  }
  if (save_weights_only && !endsWith(filepath, ".weights.h5")) {
    abort_value("When using {.code save_weights_only = TRUE} in {.fn callback_model_checkpoint}, the filepath provided must end in {.file .weights.h5} (Keras weights format). Received: filepath={.file {filepath}}")
  }
  if (!save_weights_only && !endsWith(filepath, ".keras")) {
    abort_value("The filepath provided must end in {.file .keras} (Keras model format). Received: filepath={.file {filepath}}")
  }
  gen <- if (identical(save_freq, "epoch")) ModelCheckpoint else ModelCheckpointBatches
  gen$new(filepath, monitor, verbose, save_best_only, save_weights_only, mode, save_freq,
          initial_value_threshold)
}

ModelCheckpoint <- R6::R6Class("ModelCheckpoint",
  inherit = CallbackBase,
  public = list(
    filepath = NULL, monitor = NULL, verbose = NULL, save_best_only = NULL, save_weights_only = NULL,
    mode = NULL, save_freq = NULL, best = NULL,
    initialize = function(filepath, monitor, verbose, save_best_only, save_weights_only, mode, save_freq,
                          initial_value_threshold) {
      self$filepath <- filepath
      self$monitor <- monitor
      self$verbose <- verbose
      self$save_best_only <- save_best_only
      self$save_weights_only <- save_weights_only
      self$mode <- mode
      self$save_freq <- save_freq
      private$threshold <- initial_value_threshold
    },
    on_train_begin = function(logs = NULL) {
      private$batches_seen <- 0L
      invisible(NULL)
    },
    on_epoch_begin = function(epoch, logs = NULL) {
      private$epoch <- as.integer(epoch)
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (identical(self$save_freq, "epoch")) private$save(epoch, NULL, logs, done_epochs = epoch, step = 0L)
      invisible(NULL)
    }
  ),
  private = list(
    threshold = NULL, epoch = 1L, batches_seen = 0L, maximize = NULL,
    set_direction = function() {
      dir <- switch(self$mode, min = "down", max = "up", metric_direction(self$monitor))
      if (is.null(dir)) {
        cli::cli_abort(c("{.fn callback_model_checkpoint} received {.code monitor = \"{self$monitor}\"} but cannot tell whether that metric should be maximized or minimized.",
                         i = "Pass {.code mode = \"max\"} or {.code mode = \"min\"}."),
                       class = c("mirrored_value_error", "mirrored_error"), call = NULL)
      }
      private$maximize <- dir == "up"
      self$best <- private$threshold %||% (if (private$maximize) -Inf else Inf)
    },
    save = function(epoch, batch, logs, done_epochs, step) {
      path <- checkpoint_path(self$filepath, epoch, batch, logs)
      if (self$save_best_only) {
        if (is.null(private$maximize)) private$set_direction()
        current <- monitor_value(logs, self$monitor)
        if (is.null(current)) {
          cli::cli_warn("Can save best model only with {self$monitor} available, skipping.",
                        class = "mirrored_callback_warning")
          return(invisible())
        }
        better <- if (private$maximize) current > self$best else current < self$best
        if (!better) {
          if (self$verbose > 0) {
            cat(sprintf("\nEpoch %d: %s did not improve from %s\n", as.integer(epoch), self$monitor,
                        fmt5(self$best)))
          }
          return(invisible())
        }
        if (self$verbose > 0) {
          cat(sprintf("\nEpoch %d: %s improved from %s to %s, saving model to %s\n", as.integer(epoch),
                      self$monitor, fmt5(self$best), fmt5(current), path))
        }
        self$best <- current
      } else if (self$verbose > 0) {
        cat(sprintf("\nEpoch %d: saving model to %s\n", as.integer(epoch), path))
      }
      # A multi-worker job: the chief writes the file; the others write
      # nothing and wait for it, however long the save takes (the
      # collectives' deadline would otherwise run while the chief writes).
      workers <- model_workers(self$model)
      key <- if (!is.null(workers)) self$model$strategy$next_sync("checkpoint")
      if (!is_chief_process(self$model)) {
        with_core(cpp_workers_wait_for_chief(workers, key))
        return(invisible())
      }
      dir <- dirname(path)
      if (!dir.exists(dir)) dir.create(dir, recursive = TRUE, showWarnings = FALSE)
      state <- training_state_record(self$model, done_epochs, step)
      if (self$save_weights_only) write_weights_file(self$model, path, state) else
        write_keras_file(self$model, path, TRUE, state)
      if (!is.null(workers)) with_core(cpp_workers_chief_done(workers, key))
      invisible()
    }
  )
)

fmt5 <- function(x) if (is.infinite(x)) (if (x > 0) "inf" else "-inf") else sprintf("%.5f", x)

# The same, saving every `save_freq` batches (counted across epochs).
ModelCheckpointBatches <- R6::R6Class("ModelCheckpoint",
  inherit = ModelCheckpoint,
  public = list(
    on_train_batch_end = function(batch, logs = NULL) {
      private$batches_seen <- private$batches_seen + 1L
      if (private$batches_seen >= self$save_freq) {
        private$batches_seen <- 0L
        private$save(private$epoch, batch, logs, done_epochs = private$epoch - 1L, step = batch)
      }
      invisible(NULL)
    }
  )
)

# ---- callback_backup_and_restore() --------------------------------------------------

#' Back up training and resume it after an interruption
#'
#' Saves the model's weights, optimizer state and training position to
#' `backup_dir` at the end of every epoch (or every `save_freq` batches).
#' When `fit()` is started again after a crash (same model, same data, same
#' arguments), the callback restores the last backup at the start of
#' training and `fit()` continues from there: from the next epoch, or from
#' the next batch of the interrupted epoch when `save_freq` is a number of
#' batches, with the same data order and dropout masks, so that the final
#' weights are those of an uninterrupted run. Backups are written atomically
#' (`latest.weights.h5` and, for Keras, `training_metadata.json`); a crash
#' while writing one leaves the previous backup intact.
#'
#' @param backup_dir Directory for the backup files (created when missing).
#' @param save_freq `"epoch"`, or a number of batches between backups.
#' @param double_checkpoint Also keep the previous backup (`*.bkp`), used
#'   when the latest one cannot be read.
#' @param delete_checkpoint Delete `backup_dir` when training finishes.
#' @returns A callback instance.
#' @family callbacks
#' @seealso [callback_model_checkpoint()]
#' @export
#' @examples
#' x <- matrix(runif(100), ncol = 2)
#' y <- as.integer(x[, 1] > x[, 2])
#' model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 2)
#' model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
#' cb <- callback_backup_and_restore(tempfile(), save_freq = 2)
#' model |> fit(x, y, epochs = 2, callbacks = list(cb), verbose = 0)
callback_backup_and_restore <- function(backup_dir, save_freq = "epoch", double_checkpoint = FALSE,
                                        delete_checkpoint = TRUE) {
  backup_dir <- path.expand(check_string_arg(backup_dir, "backup_dir"))
  save_freq <- check_save_freq(save_freq)
  double_checkpoint <- check_flag_arg(double_checkpoint, "double_checkpoint")
  delete_checkpoint <- check_flag_arg(delete_checkpoint, "delete_checkpoint")
  gen <- if (identical(save_freq, "epoch")) BackupAndRestore else BackupAndRestoreBatches
  gen$new(backup_dir, save_freq, double_checkpoint, delete_checkpoint)
}

BackupAndRestore <- R6::R6Class("BackupAndRestore",
  inherit = CallbackBase,
  public = list(
    backup_dir = NULL, save_freq = NULL, double_checkpoint = NULL, delete_checkpoint = NULL,
    initialize = function(backup_dir, save_freq, double_checkpoint, delete_checkpoint) {
      self$backup_dir <- backup_dir
      self$save_freq <- save_freq
      self$double_checkpoint <- double_checkpoint
      self$delete_checkpoint <- delete_checkpoint
    },
    on_train_begin = function(logs = NULL) {
      private$batches_seen <- 0L
      private$epoch <- 1L
      dir <- private$own_dir()
      if (dir.exists(dir)) {
        # Temporaries of a write a crash interrupted are garbage.
        for (f in list.files(dir, all.files = TRUE, no.. = TRUE)) {
          if (cpp_is_temp_name(f)) unlink(file.path(dir, f))
        }
      }
      if (!is.null(model_workers(self$model))) return(private$restore_agreed())
      if (!dir.exists(dir)) return(invisible(NULL))
      state <- private$restore(private$weights_path(), private$meta_path())
      if (is.null(state) && self$double_checkpoint) {
        state <- private$restore(paste0(private$weights_path(), ".bkp"), paste0(private$meta_path(), ".bkp"))
      }
      if (!is.null(state)) set_pending_resume(self$model, state, from_backup = TRUE)
      invisible(NULL)
    },
    on_epoch_begin = function(epoch, logs = NULL) {
      private$epoch <- as.integer(epoch)
      invisible(NULL)
    },
    on_epoch_end = function(epoch, logs = NULL) {
      if (identical(self$save_freq, "epoch")) private$backup(epoch, 0L)
      invisible(NULL)
    },
    on_train_end = function(logs = NULL) {
      dir <- private$own_dir()
      if (!self$delete_checkpoint || !dir.exists(dir)) return(invisible(NULL))
      if (is.null(model_workers(self$model))) {
        unlink(dir, recursive = TRUE)
        return(invisible(NULL))
      }
      # A multi-worker job: each worker deletes its own copy only (the chief's
      # directory holds the others' while they may still write them), and
      # whoever leaves backup_dir empty removes it.
      own <- list.files(dir, all.files = TRUE, no.. = TRUE, full.names = TRUE)
      unlink(own[!grepl("^worker_[0-9]+$", basename(own))], recursive = TRUE)
      for (d in unique(c(dir, self$backup_dir))) {
        if (dir.exists(d) && length(list.files(d, all.files = TRUE, no.. = TRUE)) == 0) unlink(d, recursive = TRUE)
      }
      invisible(NULL)
    }
  ),
  private = list(
    epoch = 1L, batches_seen = 0L,
    # Every worker of a multi-worker job keeps its own copy: the chief in
    # backup_dir, worker i in backup_dir/worker_<i> (on its own machine when
    # the directory is not shared), so that a restarted job resumes on every
    # worker.
    own_dir = function() {
      info <- if (!is.null(model_workers(self$model))) self$model$strategy$info
      if (is.null(info) || isTRUE(info$is_chief)) return(self$backup_dir)
      file.path(self$backup_dir, sprintf("worker_%d", info$index))
    },
    # A multi-worker job resumes from the newest position that every
    # worker's copy holds. The workers back up at the same step boundaries
    # but each on its own, so a worker killed between the others' backup and
    # its own is one backup behind: every worker also keeps its previous
    # backup (".bkp"), and the job falls back to it. A position is what
    # restore() would resume from: the state recorded in the weights file
    # (its metadata file may be older: a worker killed between writing the
    # two), else the metadata of a Keras-written backup. Read without loading;
    # then each worker loads one file (loading is a collective: the chief's
    # weights are broadcast).
    restore_agreed = function() {
      workers <- self$model$strategy$workers
      info <- self$model$strategy$info
      files <- list(c(private$weights_path(), private$meta_path()),
                    paste0(c(private$weights_path(), private$meta_path()), ".bkp"))
      positions <- vapply(files, function(f) {
        if (!file.exists(f[1])) return(NA_character_)
        s <- tryCatch(weights_file_state(read_bytes(f[1]), f[1]), error = function(e) NULL)
        if (is.null(s) && file.exists(f[2])) {
          m <- tryCatch(parse_json_bytes(read_bytes(f[2]), f[2]), error = function(e) NULL)
          if (!is.null(m$epoch)) s <- position_record(m$epoch, m$batch %||% 0L)
        }
        if (is.null(s$epoch)) return(NA_character_)
        sprintf("%d:%d", as.integer(s$epoch), as.integer(s$step %||% 0L))
      }, character(1))
      mine <- paste(stats::na.omit(positions), collapse = ",")
      all <- with_core(cpp_workers_all_gather(workers, "backup positions", mine))
      sets <- lapply(strsplit(all, ",", fixed = TRUE), function(x) x[nzchar(x)])
      if (all(lengths(sets) == 0)) return(invisible(NULL))  # a fresh job
      common <- Reduce(intersect, sets)
      if (length(common) == 0) {
        abort_kind("worker", c("The workers' backups have no position in common, so the job cannot resume.",
                               i = paste0(info$described, ": ", ifelse(nzchar(all), all, "none"),
                                          " (epoch:step)", collapse = "; "),
                               i = "Delete {.path {self$backup_dir}} on every worker to start afresh."),
                   call = NULL)
      }
      key <- vapply(strsplit(common, ":", fixed = TRUE), function(x) as.numeric(x[1]) * 1e9 + as.numeric(x[2]),
                    numeric(1))
      best <- common[which.max(key)]
      f <- files[[match(best, positions)]]
      state <- private$restore(f[1], f[2])
      if (!is.null(state)) set_pending_resume(self$model, state, from_backup = TRUE)
      invisible(NULL)
    },
    weights_path = function() file.path(private$own_dir(), "latest.weights.h5"),
    meta_path = function() file.path(private$own_dir(), "training_metadata.json"),
    # The training state of a readable backup (after loading it), or NULL.
    restore = function(weights, meta) {
      if (!file.exists(weights)) return(NULL)
      res <- tryCatch(list(state = read_weights_file(self$model, weights)), mirrored_io_error = function(e) {
        if (!self$double_checkpoint) stop(e)
        NULL
      })
      if (is.null(res)) return(NULL)
      state <- res$state
      if (is.null(state) && file.exists(meta)) {
        # A Keras-written backup: {"epoch": E, "batch": B}.
        m <- parse_json_bytes(read_bytes(meta), meta)
        state <- position_record(m$epoch %||% 0L, m$batch %||% 0L)
      }
      state %||% position_record()
    },
    backup = function(done_epochs, step) {
      dir <- private$own_dir()
      if (!dir.exists(dir)) dir.create(dir, recursive = TRUE, showWarnings = FALSE)
      w <- private$weights_path()
      m <- private$meta_path()
      # A multi-worker job always keeps the previous backup (restore_agreed()).
      keep <- self$double_checkpoint || !is.null(model_workers(self$model))
      if (keep && file.exists(w)) {
        write_atomic(paste0(w, ".bkp"), read_bytes(w))
        if (file.exists(m)) write_atomic(paste0(m, ".bkp"), read_bytes(m))
      }
      write_weights_file(self$model, w, training_state_record(self$model, done_epochs, step))
      write_atomic(m, json_bytes(list(epoch = as.integer(done_epochs), batch = as.integer(step))))
      invisible()
    }
  )
)

BackupAndRestoreBatches <- R6::R6Class("BackupAndRestore",
  inherit = BackupAndRestore,
  public = list(
    on_train_batch_end = function(batch, logs = NULL) {
      private$batches_seen <- private$batches_seen + 1L
      if (private$batches_seen >= self$save_freq) {
        private$batches_seen <- 0L
        private$backup(private$epoch - 1L, as.integer(batch))
      }
      invisible(NULL)
    }
  )
)
