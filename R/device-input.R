# Input staged ahead on the device: the core keeps two batches uploaded ahead
# of the running step, on a GPU's copy stream (src/mr/train/device_input.h).
# R reads the option and shows what ran.

# options(mirrored.device_input): NULL (default: on for GPU replicas, off for
# CPU ones, which have no copy stream), TRUE or FALSE. As the core's mode:
# -1, 1 or 0.
device_input_option <- function() {
  v <- getOption("mirrored.device_input")
  if (is.null(v)) return(-1L)
  if (!is.logical(v) || length(v) != 1 || is.na(v)) {
    abort_value(paste("{.code options(mirrored.device_input)} must be TRUE, FALSE or NULL",
                      "(automatic), not {describe(v)}."))
  }
  if (v) 1L else 0L
}

# Called by fit() and evaluate() before their first step.
apply_device_input_option <- function(model) {
  with_core(cpp_model_set_device_input(model$ptr(), device_input_option()))
}

# Which input path the model's fit()/evaluate() take (for tests and
# diagnostics): `path` is "copy lane" (batches staged ahead in device slots)
# or "host" (each step uploads its batch); `staged` and `taken` count the
# slot uploads and slot reads so far, summed over replicas.
input_pipeline <- function(model) {
  if (!inherits(model, "mirrored_model")) {
    abort_value("{.arg model} of {.fn input_pipeline} must be a model, not {describe(model)}.")
  }
  s <- with_core(cpp_model_input_pipeline(model$ptr()))
  list(path = if (s$device_input) "copy lane" else "host",
       option = switch(as.character(s$mode), "-1" = "automatic", "0" = "off", "1" = "on"),
       staged = s$staged, taken = s$taken)
}
