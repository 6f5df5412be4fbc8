# Dtype policies (Keras 3's keras.config.set_dtype_policy / dtype_policy and
# the layers' `dtype =`): which dtype a layer computes in and which its
# weights are kept in. "float32" computes and stores in f32; "mixed_bfloat16"
# and "mixed_float16" compute matrix products and convolutions in bf16 / f16
# with f32 master weights, f32 accumulation and f32 reductions (DESIGN §8).
# R checks the name and remembers the global policy; the core decides how a
# policy runs on the replica's device (and says so once when it cannot run it
# as asked, see compile_core()).

# The global policy, as Keras' global_state: the policy layers (and models)
# created from now on take when they are not given a `dtype`.
.dtype_policy_state <- new.env(parent = emptyenv())

# The policies mirrored computes in, with Keras' (compute, variable) dtypes.
dtype_policies <- list(
  float32 = c(compute = "float32", variable = "float32"),
  mixed_bfloat16 = c(compute = "bfloat16", variable = "float32"),
  mixed_float16 = c(compute = "float16", variable = "float32")
)

# Names Keras accepts that mirrored does not run (yet): plain low-precision
# and f64 policies (weights in that dtype) and the quantized ones.
dtype_policies_not_yet <- c("float16", "bfloat16", "float64", "half", "double")
dtype_policies_quantized <- c("int8", "float8", "int4", "gptq", "awq")

new_dtype_policy <- function(name) {
  d <- dtype_policies[[name]]
  structure(list(name = name, compute_dtype = unname(d["compute"]),
                 variable_dtype = unname(d["variable"])),
            class = "mirrored_dtype_policy")
}

#' @export
print.mirrored_dtype_policy <- function(x, ...) {
  cat("<DTypePolicy \"", x$name, "\" compute_dtype=", x$compute_dtype, " variable_dtype=",
      x$variable_dtype, ">\n", sep = "")
  invisible(x)
}

#' @export
format.mirrored_dtype_policy <- function(x, ...) paste0("<DTypePolicy \"", x$name, "\">")

# The policy name of `x` (a name or a policy object), checked: `fn` and `arg`
# name the user's function and argument in the error.
check_dtype_policy <- function(x, fn, arg, call = sys.call(-1)) {
  if (inherits(x, "mirrored_dtype_policy")) x <- x$name
  # A saved layer config holds Keras' serialized policy.
  if (is.list(x) && identical(x$class_name, "DTypePolicy") && is.list(x$config)) x <- x$config$name
  if (!(is.character(x) && length(x) == 1 && !is.na(x))) {
    abort_value("{.fn {fn}}: {.arg {arg}} must be the name of a dtype policy ({.val {names(dtype_policies)}}) or a policy from {.fn config_dtype_policy}, not {describe(x)}.",
                call = call)
  }
  if (x %in% names(dtype_policies)) return(x)
  if (x %in% dtype_policies_not_yet || startsWith(x, paste0(dtype_policies_quantized, "_")) |>
      any()) {
    abort_not_yet(c("{.fn {fn}}: {.arg {arg}} = {.val {x}} is not supported yet.",
                    i = "mirrored runs {.val {names(dtype_policies)}}: f32 weights, with bf16 or f16 compute for the mixed ones."),
                  call = call)
  }
  abort_value("{.fn {fn}}: {.arg {arg}} must be one of {.val {names(dtype_policies)}}, not {.val {x}}.",
              call = call)
}

#' Set or get the default dtype policy
#'
#' `config_set_dtype_policy()` sets the policy that layers (and models)
#' created afterwards use when they are not given a `dtype`, as Keras 3's
#' `keras.config.set_dtype_policy()`; `config_dtype_policy()` returns it.
#' Layers created before the call keep their policy.
#'
#' Under `"mixed_bfloat16"` and `"mixed_float16"` matrix products and
#' convolutions take bfloat16 / float16 inputs with float32 accumulation,
#' while the weights, the optimizer's state, the all-reduced gradients and
#' every reduction (losses, metrics, batch-norm statistics) stay float32.
#' `"mixed_float16"` models wrap their optimizer in
#' [optimizer_loss_scale()] when compiled (`compile(auto_scale_loss = TRUE)`,
#' the default). Where the device has no fast path for a policy (a CPU
#' without AVX512-BF16 or AMX, float16 on a CPU), the model computes in
#' float32 and `compile()` says so once.
#'
#' @param policy A policy name: `"float32"` (the default), `"mixed_bfloat16"`
#'   or `"mixed_float16"`, or a policy returned by `config_dtype_policy()`.
#' @return `config_set_dtype_policy()`: `NULL`, invisibly.
#'   `config_dtype_policy()`: the policy, a list of `name`, `compute_dtype` and
#'   `variable_dtype` (class `mirrored_dtype_policy`).
#' @family config
#' @seealso [compile.mirrored_model()] (`auto_scale_loss`),
#'   [optimizer_loss_scale()]
#' @examples
#' old <- config_dtype_policy()
#' config_set_dtype_policy("mixed_bfloat16")
#' config_dtype_policy()
#' model <- keras_model_sequential(input_shape = 8) |>
#'   layer_dense(units = 16, activation = "relu") |>
#'   layer_dense(units = 2, dtype = "float32")  # a float32 output layer
#' config_set_dtype_policy(old)
#' @export
config_set_dtype_policy <- function(policy) {
  .dtype_policy_state$name <- check_dtype_policy(policy, "config_set_dtype_policy", "policy")
  invisible(NULL)
}

#' @rdname config_set_dtype_policy
#' @export
config_dtype_policy <- function() new_dtype_policy(global_dtype_policy_name())

global_dtype_policy_name <- function() .dtype_policy_state$name %||% "float32"

# Keras 3's serialization of a policy (a layer's or a model's "dtype").
dtype_policy_keras_config <- function(name) {
  list(module = "keras", class_name = "DTypePolicy", config = list(name = name),
       registered_name = NULL)
}

# The policy name a layer config holds ("float32" when it holds none).
layer_config_policy <- function(config) {
  d <- config$dtype
  if (is.null(d)) return("float32")
  if (is.character(d)) return(d)
  d$config$name %||% "float32"
}

# The `dtype` a new layer's config gets: the one given (checked), else the
# global policy when it is not float32 (the core writes float32 itself).
layer_dtype_config <- function(dtype, fn, call = sys.call(-1)) {
  name <- if (is.null(dtype)) global_dtype_policy_name() else check_dtype_policy(dtype, fn, "dtype", call = call)
  if (is.null(dtype) && name == "float32") return(NULL)
  dtype_policy_keras_config(name)
}

# The name of the function a call calls (for messages), or "layer".
call_name <- function(call) {
  f <- if (is.call(call)) call[[1]]
  if (is.name(f)) as.character(f) else "layer"
}

# A saved Sequential model's policy (its config's "dtype"), or `default`.
model_policy_from_keras <- function(cfg, default, what) {
  d <- cfg$dtype
  if (is.null(d)) return(default)
  name <- if (is.character(d)) d else if (is.list(d) && is.list(d$config)) d$config$name
  if (!(is.character(name) && length(name) == 1 && name %in% names(dtype_policies))) {
    abort_config(what, "the model's dtype policy {.val {format(name %||% d)}} is not one mirrored runs ({.val {names(dtype_policies)}}).")
  }
  name
}

# compile()'s note from the core on how this device runs the model's mixed
# policies (e.g. a CPU without bf16 instructions computing in float32), shown
# once per compile as a message: never silent slowness.
show_precision_note <- function(model) {
  if (!isTRUE(model$precision_note_due)) return(invisible(""))
  model$precision_note_due <- FALSE
  note <- with_core(cpp_model_precision_note(model$ptr()))
  if (nzchar(note)) cli::cli_inform(c(i = "{note}"), class = "mirrored_precision_note")
  invisible(note)
}

# Test hook (internal): replica `rank` (0-based) sees a non-finite gradient
# after the all-reduce of training step `step` (1-based), once.
inject_nonfinite_gradient <- function(model, rank, step) {
  with_core(cpp_model_inject_nonfinite_gradient(model$ptr(), as.integer(rank), as.numeric(step)))
}
