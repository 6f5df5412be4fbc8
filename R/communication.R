# Communication options of a strategy (TensorFlow's
# tf.distribute.experimental.CommunicationOptions): the size of the gradient
# buckets that are all-reduced during the backward pass, the collectives'
# deadline and the preferred all-reduce. The core plans the buckets
# (src/mr/train/grad_buckets.h); R checks the arguments and passes them on.

#' Options for the strategy's all-reduce
#'
#' TensorFlow's `tf$distribute$experimental$CommunicationOptions()`, given to
#' [mirrored_strategy()] as `communication_options`. Gradients are
#' all-reduced in buckets, in reverse layer order, each launched during the
#' backward pass as soon as backward has finished its gradients (as PyTorch's
#' DistributedDataParallel does), so that reducing the last layers overlaps
#' the backward pass of the first ones. The buckets give the same weights as
#' one all-reduce after the backward pass (bit for bit on CPU replicas).
#'
#' @param bytes_per_pack A non-negative whole number: the gradient buckets'
#'   size in bytes (a bucket closes once it holds at least this many; a
#'   variable is never split). `0` (the default) chooses: a first bucket of
#'   1 MiB then buckets of 25 MiB (PyTorch DDP's sizes). A size larger than
#'   the model's gradients gives one bucket.
#' @param timeout_seconds `NULL` or a non-negative number: how long a replica
#'   waits for its peers in a collective before the step fails (`NULL`:
#'   `getOption("mirrored.collective_timeout", 300)`; `0`: no deadline, as in
#'   TensorFlow, for debugging).
#' @param implementation The preferred all-reduce: `"auto"` (the strategy's
#'   `cross_device_ops`, else the core's choice), `"ring"` (not NCCL: the
#'   all-reduce over threads on CPU devices, peer copies between GPUs, as
#'   `cross_device_ops = "hierarchical_copy"`) or `"nccl"` (GPU devices
#'   only). Case-insensitive, so `tf$distribute$experimental$CommunicationImplementation$NCCL`
#'   works too.
#' @return An object of class `mirrored_communication_options`.
#' @family distribution
#' @seealso [mirrored_strategy()]
#' @examples
#' options <- communication_options(bytes_per_pack = 64 * 1024)
#' options
#' strategy <- mirrored_strategy(c("/cpu:0", "/cpu:1"), communication_options = options)
#' with(strategy$scope(), {
#'   model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#'   model |> compile(optimizer = "adam", loss = "mse")
#' })
#' model |> fit(matrix(runif(40), 10), matrix(runif(20), 10), verbose = 0)
#' @export
communication_options <- function(bytes_per_pack = 0, timeout_seconds = NULL,
                                  implementation = "auto") {
  call <- sys.call()
  if (!(is.numeric(bytes_per_pack) && length(bytes_per_pack) == 1 && !is.na(bytes_per_pack) &&
        is.finite(bytes_per_pack) && bytes_per_pack >= 0 && bytes_per_pack == round(bytes_per_pack))) {
    abort_value("{.arg bytes_per_pack} must be a non-negative whole number of bytes (0: automatic), not {describe(bytes_per_pack)}.",
                call = call)
  }
  timeout_seconds <- check_num(timeout_seconds, "timeout_seconds", min = 0, null_ok = TRUE, call = call)
  impl <- tolower(check_string(implementation, "implementation", call = call))
  check_choice(impl, "implementation", c("auto", "ring", "nccl"), call = call)
  structure(list(bytes_per_pack = as.numeric(bytes_per_pack), timeout_seconds = timeout_seconds,
                 implementation = impl),
            class = "mirrored_communication_options")
}

#' @export
print.mirrored_communication_options <- function(x, ...) {
  cat("<CommunicationOptions> bytes_per_pack: ",
      if (x$bytes_per_pack == 0) "0 (automatic: 1 MiB, then 25 MiB)" else format(x$bytes_per_pack, scientific = FALSE),
      ", timeout_seconds: ", if (is.null(x$timeout_seconds)) "NULL" else format(x$timeout_seconds),
      ", implementation: ", x$implementation, "\n", sep = "")
  invisible(x)
}

# The strategy's options: NULL (the defaults) or communication_options().
resolve_communication_options <- function(x, call = sys.call(-1)) {
  if (is.null(x)) return(communication_options())
  if (!inherits(x, "mirrored_communication_options")) {
    abort_value("{.arg communication_options} must be NULL or made by {.fn communication_options}, not {describe(x)}.",
                call = call)
  }
  x
}

# cross_device_ops implied by the options' implementation ("" = none), and
# a conflict with an explicit cross_device_ops is an error.
implementation_ops <- function(options, cross_device_ops, call = sys.call(-1)) {
  impl <- options$implementation
  if (impl == "auto") return(cross_device_ops)
  want <- if (impl == "nccl") "nccl" else "hierarchical_copy"
  if (nzchar(cross_device_ops) && !identical(cross_device_ops, want) &&
      !(impl == "ring" && cross_device_ops != "nccl")) {
    abort_value(c("{.arg communication_options} asks for the {.val {impl}} implementation but {.arg cross_device_ops} is {.val {cross_device_ops}}.",
                  i = "Give one of them, or make them agree."), call = call)
  }
  if (nzchar(cross_device_ops)) cross_device_ops else want
}

# Seconds a replica of `strategy`'s models waits in a collective: the
# strategy's timeout_seconds (0: no deadline), else the option.
strategy_collective_timeout <- function(strategy) {
  t <- strategy$communication_options$timeout_seconds
  if (is.null(t)) return(collective_timeout())
  if (t == 0) 1e9 else t  # about 31 years: no deadline in practice
}

# The gradient buckets of a compiled model (internal, for tests and
# diagnostics): the plan in launch order (floats, the node whose backward
# finishes the bucket, the variables' names) and each replica's launch order
# in its last applying step (0-based bucket ids).
gradient_buckets <- function(model) with_core(cpp_model_grad_buckets(model$ptr()))
