# Input on the device: the core keeps two batches uploaded ahead of the
# running step on a GPU's copy stream (src/mr/train/device_input.h), and
# gathers batches of in-memory arrays that fit on the device from a resident
# copy (src/mr/train/resident_input.h). R reads the options and shows which
# path ran; the core decides.

# A TRUE / FALSE / NULL (automatic) option as the core's mode: 1, 0 or -1.
tri_state_option <- function(name) {
  v <- getOption(name)
  if (is.null(v)) return(-1L)
  if (!is.logical(v) || length(v) != 1 || is.na(v)) {
    abort_value(paste0("{.code options(", name, ")} must be TRUE, FALSE or NULL (automatic), ",
                       "not {describe(v)}."))
  }
  if (v) 1L else 0L
}

# options(mirrored.resident_bytes): bytes per device for the resident arrays
# (0 turns resident data off). NULL: NA, the core's default (1 GiB,
# Model::kDefaultResidentBudget), so that the default is written once.
resident_bytes_option <- function() {
  v <- getOption("mirrored.resident_bytes")
  if (is.null(v)) return(NA_real_)
  if (!is.numeric(v) || length(v) != 1 || is.na(v) || v < 0 || !is.finite(v)) {
    abort_value(paste("{.code options(mirrored.resident_bytes)} must be a number of bytes >= 0,",
                      "not {describe(v)}."))
  }
  # The core counts bytes in 64 bits: a larger budget means "no limit" and is
  # clamped to 2^62 bytes (far beyond any device) before the conversion.
  min(floor(v), 2^62)
}

# Called by fit() and evaluate() before their first step:
# options(mirrored.device_input) (NULL: on for GPU replicas, off for CPU
# ones, which have no copy stream), options(mirrored.resident_input) (NULL:
# on, within the budget) and options(mirrored.resident_bytes).
apply_device_input_option <- function(model) {
  device <- tri_state_option("mirrored.device_input")
  resident <- tri_state_option("mirrored.resident_input")
  budget <- resident_bytes_option()
  with_core({
    cpp_model_set_device_input(model$ptr(), device)
    cpp_model_set_resident_input(model$ptr(), resident, budget)
  })
}

# Registered by fit() and evaluate() to run when they end: the arrays made
# resident for the call are dropped, so that a model does not keep them.
release_resident_input <- function(model) {
  with_core(cpp_model_release_resident_input(model$ptr()))
}

# Which input path the model's last fit() or evaluate() pass took (for tests
# and diagnostics): `path` is "resident" (arrays resident on the device,
# batches gathered there), "copy lane" (batches staged ahead in device slots)
# or "host" (each step uploads its batch); `staged`, `taken` and `gathered`
# count slot uploads, slot reads and resident gathers so far, summed over
# replicas; `resident_bytes` is what is resident per device now and
# `resident_budget` the budget the core applies.
input_pipeline <- function(model) {
  if (!inherits(model, "mirrored_model")) {
    abort_value("{.arg model} of {.fn input_pipeline} must be a model, not {describe(model)}.")
  }
  s <- with_core(cpp_model_input_pipeline(model$ptr()))
  mode <- function(m) switch(as.character(m), "-1" = "automatic", "0" = "off", "1" = "on")
  list(path = s$path, device_input = mode(s$mode), resident_input = mode(s$resident_mode),
       staged = s$staged, taken = s$taken, gathered = s$gathered,
       resident_bytes = s$resident_bytes, resident_budget = s$resident_budget)
}
