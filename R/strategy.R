# Distribution strategies: the devices a model's replicas live on.
#
# A strategy is a list of devices; every model created in its scope gets one
# replica per device, driven by its own host thread in the C++ core. Each
# global batch is cut into contiguous per-replica slices, gradients are
# all-reduced (summed) and every replica applies the same update.

.strategies <- new.env(parent = emptyenv())
.strategies$stack <- list()
.strategies$count <- 0L
.strategies$made <- FALSE
.strategies$logical_gpus <- 1L

MirroredStrategy <- R6::R6Class("mirrored_strategy",
  public = list(
    id = NULL,
    devices = NULL,
    # The core's placement of the devices: name, display, kind, ordinal.
    placement = NULL,
    cross_device_ops = NULL,
    communication_options = NULL,
    logical_per_gpu = 1L,
    reason = NULL,
    announced = FALSE,
    initialize = function(placement, cross_device_ops, reason, communication_options = NULL) {
      .strategies$count <- .strategies$count + 1L
      self$id <- .strategies$count
      self$devices <- placement$name
      self$placement <- placement
      self$cross_device_ops <- cross_device_ops
      self$communication_options <- communication_options %||% communication_options()
      self$logical_per_gpu <- .strategies$logical_gpus
      self$reason <- reason
    },
    scope = function() structure(list(strategy = self), class = "mirrored_strategy_scope"),
    print = function(...) {
      cat("<MirroredStrategy> ", self$num_replicas_in_sync, " replica",
          if (self$num_replicas_in_sync != 1) "s", "\n", sep = "")
      cat("  devices: ", paste(self$placement$display, collapse = ", "), "\n", sep = "")
      plan <- with_core(cpp_communicator_plan(self$devices, self$cross_device_ops, self$logical_per_gpu))
      cat("  all-reduce: ", plan[["name"]], if (nzchar(plan[["note"]])) paste0(" (", plan[["note"]], ")"),
          "\n", sep = "")
      if (any(self$placement$kind == "gpu")) cat(gpu_topology(self$placement, self$logical_per_gpu), sep = "\n")
      if (any(self$placement$kind == "cpu")) cat(cpu_threads_line(length(self$devices)), "\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    num_replicas_in_sync = function() length(self$devices)
  )
)

#' Synchronous data-parallel training on several devices
#'
#' Creates a strategy whose models hold one replica per device. Inside
#' `with(strategy$scope(), { ... })`, models (and their `compile()`) belong
#' to the strategy: `fit()` splits each global batch into contiguous slices,
#' one per replica (the first `batch %% n` replicas take one row more, so a
#' short last batch may leave some replicas empty), sums the gradients of
#' all replicas and applies the same update on each, so that `n` replicas
#' compute the update of one device on the global batch. The loss of a step
#' is the sum of the per-sample losses divided by the *global* batch size
#' (Keras 3 averages the replicas' local means instead, which differs from
#' single-device training when the split is uneven).
#'
#' CPU devices are logical: `"/cpu:0"`, `"/cpu:1"`, ... exist for any
#' index, so several replicas run (and are tested) without GPUs; they share
#' the machine's cores. Device names may be written `"/cpu:0"`, `"cpu:0"`,
#' `"CPU:0"` or `"/device:CPU:0"` (likewise for GPUs).
#'
#' @param devices Character vector of devices, or a list of device names
#'   (`list("/cpu:0", "/cpu:1")`, as written for Python). `NULL`: all GPUs when there
#'   are any, else one CPU.
#' @param cross_device_ops How gradients are all-reduced: `NULL` (choose),
#'   `"nccl"`, `"hierarchical_copy"`, `"reduce_to_one_device"`, or one of the
#'   objects of `tf$distribute`. On CPU devices `"reduce_to_one_device"`
#'   sums in host buffers and the other choices use the all-reduce over
#'   threads; `"nccl"` needs GPU devices.
#' @param communication_options `NULL` (the defaults) or
#'   [communication_options()]: the size of the gradient buckets all-reduced
#'   during the backward pass (`bytes_per_pack`), the collectives' deadline
#'   and the preferred all-reduce.
#' @return A strategy with `$num_replicas_in_sync`, `$devices` and `$scope()`.
#' @family distribution
#' @seealso [get_strategy()], [list_devices()]
#' @examples
#' strategy <- mirrored_strategy(c("/cpu:0", "/cpu:1"))
#' strategy$num_replicas_in_sync
#' with(strategy$scope(), {
#'   model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 2)
#'   model |> compile(optimizer = "adam", loss = "mse")
#' })
#' model |> fit(matrix(runif(40), 10), matrix(runif(20), 10), verbose = 0)
#' @export
mirrored_strategy <- function(devices = NULL, cross_device_ops = NULL, communication_options = NULL) {
  comm <- resolve_communication_options(communication_options)
  logical <- .strategies$logical_gpus
  local <- local_placement(devices, logical)
  placement <- local$placement
  reason <- local$reason
  ops <- resolve_cross_device_ops(cross_device_ops, placement$name, logical)
  implied <- implementation_ops(comm, ops)
  if (!identical(implied, ops)) ops <- resolve_cross_device_ops(implied, placement$name, logical)
  .strategies$made <- TRUE
  strategy <- MirroredStrategy$new(placement, ops, reason, comm)
  cli::cli_inform(c(i = "Using MirroredStrategy with devices ({paste(placement$display, collapse = ', ')}): {reason}."),
                  class = "mirrored_strategy_message")
  strategy
}

# This process's devices: the core's placement of `devices` (NULL: every GPU,
# else one CPU) and why they were chosen.
local_placement <- function(devices, logical, call = sys.call(-1)) {
  if (is.null(devices)) {
    placement <- with_core(cpp_default_devices(logical))
    gpus <- sum(placement$kind == "gpu")
    reason <- if (gpus > 0) sprintf("all %d GPU%s", gpus, if (gpus > 1) "s" else "") else
      if (built_with_cuda()) "no GPU is available, so one CPU replica" else
        "this build has no CUDA, so one CPU replica"
  } else {
    # tf$distribute$MirroredStrategy(devices = list("/cpu:0", "/cpu:1")), as
    # R users write Python's list: a list of single strings is the same.
    if (is.list(devices) && !is.object(devices) && length(devices) > 0 &&
        all(vapply(devices, function(d) is.character(d) && length(d) == 1, logical(1)))) {
      devices <- unlist(devices, use.names = FALSE)
    }
    if (!is.character(devices) || length(devices) == 0 || anyNA(devices)) {
      abort_value("{.arg devices} must be a non-empty character vector (or list) of device names, not {describe(devices)}.",
                  call = call)
    }
    placement <- with_core(cpp_resolve_devices(devices, logical), call = call)
    reason <- "as given"
  }
  list(placement = placement, reason = reason)
}

# print(strategy)'s line for CPU replicas: the threads each gets and why,
# the kernels they run (the core's plan, as the models will be made).
cpu_threads_line <- function(replicas) {
  plan <- with_core(cpp_cpu_thread_plan(model_threads(), replicas))
  sprintf("  CPU threads: %d per replica (%s), %s kernels; fewer take work while other processes use the cores (callback_device_monitor() shows it)",
          plan$threads, plan$why, plan$kernels)
}

physical_gpu_count <- function() if (built_with_cuda()) cuda_device_count() else 0L

# The requested cross-device ops as the core's name for them ("" = choose).
# R checks the type; the core checks the value against the devices.
resolve_cross_device_ops <- function(x, devices, logical_per_gpu, call = sys.call(-1)) {
  if (inherits(x, "mirrored_cross_device_ops")) x <- x$name
  if (is.null(x)) return("")
  if (!is.character(x) || length(x) != 1 || is.na(x)) {
    abort_value("{.arg cross_device_ops} must be NULL, a string or a {.code tf$distribute} object, not {describe(x)}.",
                call = call)
  }
  with_core(cpp_communicator_plan(devices, x, logical_per_gpu), call = call)
  x
}

# One line per GPU of a strategy (model, memory) and one for the links
# between the physical GPUs it uses.
gpu_topology <- function(placement, logical_per_gpu) {
  gpu <- placement$kind == "gpu"
  ordinals <- unique(placement$ordinal[gpu])
  info <- cuda_devices_info()
  lines <- vapply(ordinals, function(o) {
    mem <- with_core(cpp_cuda_memory(o))
    sprintf("  GPU %d: %s, %.1f GB (%.1f GB free), compute capability %s", o, info$name[o + 1L],
            mem[["total"]] / 1e9, mem[["free"]] / 1e9, info$compute_capability[o + 1L])
  }, character(1))
  if (length(ordinals) > 1) {
    pairs <- utils::combn(ordinals, 2)
    links <- apply(pairs, 2, function(p) sprintf("%d-%d %s", p[1], p[2], cpp_cuda_link(p[1], p[2])))
    lines <- c(lines, paste0("  links: ", paste(links, collapse = ", ")))
  } else if (sum(gpu) > length(ordinals)) {
    lines <- c(lines, sprintf("  links: %d logical GPUs per physical GPU (device copies)", logical_per_gpu))
  }
  # The core's line on what runs the convolutions (cuDNN, or why not).
  engine <- with_core(cpp_cuda_conv_engine(ordinals[1]))
  if (nzchar(engine)) lines <- c(lines, paste0("  ", engine))
  lines
}

cuda_devices_info <- function() with_core(cpp_cuda_devices())

#' @export
with.mirrored_strategy_scope <- function(data, expr, ...) {
  .strategies$stack <- c(.strategies$stack, list(data$strategy))
  on.exit(.strategies$stack <- utils::head(.strategies$stack, -1), add = TRUE)
  expr
}

#' @export
print.mirrored_strategy_scope <- function(x, ...) {
  cat("<scope of MirroredStrategy ", x$strategy$id, ">\n", sep = "")
  invisible(x)
}

#' The strategy in scope
#'
#' Inside `with(strategy$scope(), ...)`, that strategy; elsewhere the
#' default strategy (one replica, on the first GPU if there is one, else the
#' CPU).
#'
#' @return A strategy.
#' @family distribution
#' @seealso [mirrored_strategy()]
#' @examples
#' get_strategy()$num_replicas_in_sync
#' @export
get_strategy <- function() {
  n <- length(.strategies$stack)
  if (n) return(.strategies$stack[[n]])
  default_strategy()
}

default_strategy <- function() {
  if (is.null(.strategies$default)) {
    placement <- lapply(with_core(cpp_default_devices(.strategies$logical_gpus)), `[`, 1L)
    .strategies$default <- MirroredStrategy$new(placement, "", "default strategy")
  }
  .strategies$default
}

in_explicit_scope <- function() length(.strategies$stack) > 0

# Errors when a model is used under the scope of another strategy (as TF does).
check_model_strategy <- function(model, call = sys.call(-1)) {
  if (!in_explicit_scope()) return(invisible())
  current <- get_strategy()
  if (!identical(current$id, model$strategy$id)) {
    abort_value(c("Model {.val {model$name}} belongs to another strategy than the one in scope.",
                  i = "It was created with {model$strategy$num_replicas_in_sync} replica{?s}; use it outside this scope or in its own strategy's scope."),
                call = call)
  }
}

#' List the devices mirrored can use
#'
#' CPU devices are logical (any `"/cpu:k"` may be used); GPUs are listed
#' when the package was built with CUDA and a driver sees them, split into
#' logical GPUs by [set_logical_devices()].
#'
#' @param device_type `NULL` for all, or `"CPU"` / `"GPU"`.
#' @return A data frame with columns `name`, `device_type`, `physical_device`
#'   (the CUDA device of a GPU, `NA` for the CPU), `description` (the GPU's
#'   model), `memory_total` and `memory_free` (bytes; `NA` for the CPU).
#' @family distribution
#' @seealso [mirrored_strategy()]
#' @examples
#' list_devices()
#' @export
list_devices <- function(device_type = NULL) {
  if (!is.null(device_type)) check_choice(toupper(device_type), "device_type", c("CPU", "GPU"))
  placement <- with_core(cpp_visible_devices(.strategies$logical_gpus))
  gpu <- placement$kind == "gpu"
  ordinal <- placement$ordinal
  info <- if (any(gpu)) cuda_devices_info() else list(name = character())
  memory_total <- memory_free <- rep(NA_real_, length(gpu))
  for (o in unique(ordinal[gpu])) {
    mem <- with_core(cpp_cuda_memory(o))
    memory_total[gpu & ordinal == o] <- mem[["total"]]
    memory_free[gpu & ordinal == o] <- mem[["free"]]
  }
  df <- data.frame(name = placement$display,
                   device_type = ifelse(gpu, "GPU", "CPU"),
                   physical_device = ordinal,
                   description = ifelse(gpu, info$name[ordinal + 1L], NA_character_),
                   memory_total = memory_total,
                   memory_free = memory_free,
                   stringsAsFactors = FALSE)
  if (!is.null(device_type)) df <- df[df$device_type == toupper(device_type), , drop = FALSE]
  rownames(df) <- NULL
  df
}

#' Split each physical GPU into logical GPUs
#'
#' Like TensorFlow's logical device configuration: each physical GPU then
#' appears as `n` GPUs, so that several replicas can share one GPU (they then
#' use the all-reduce that does not need NCCL). Must be called before any
#' strategy is made.
#'
#' @param device_type `"GPU"`.
#' @param n Number of logical GPUs per physical GPU.
#' @return The previous value of `n`, invisibly.
#' @family distribution
#' @seealso [mirrored_strategy()]
#' @examplesIf cuda_is_available()
#' set_logical_devices("GPU", 2)
#' @export
set_logical_devices <- function(device_type, n) {
  check_choice(toupper(device_type %||% ""), "device_type", "GPU")
  n <- check_int(n, "n", min = 1, max = 64)
  if (isTRUE(.strategies$made)) {
    abort_value("Logical devices must be set before any strategy is made (as in TensorFlow).")
  }
  if (physical_gpu_count() == 0) {
    abort_kind("device", "There is no physical GPU to split ({if (built_with_cuda()) 'none is available' else 'this build has no CUDA'}).")
  }
  old <- .strategies$logical_gpus
  .strategies$logical_gpus <- n
  invisible(old)
}

new_cross_device_ops <- function(name, ...) {
  structure(list(name = name, args = list(...)), class = "mirrored_cross_device_ops")
}

#' @export
print.mirrored_cross_device_ops <- function(x, ...) {
  cat("<cross_device_ops: ", x$name, ">\n", sep = "")
  invisible(x)
}

# `tf` and its sub-lists answer `$` of a name mirrored lacks (tf$strings,
# tf$image, ...) with a not-yet error naming it, not R's "attempt to apply
# non-function" on the NULL a list returns.
tf_module <- function(x, path) {
  for (nm in names(x)) if (is.list(x[[nm]]) && !is.object(x[[nm]])) x[[nm]] <- tf_module(x[[nm]], paste0(path, "$", nm))
  structure(x, class = "mirrored_tf_module", path = path)
}

#' @export
`$.mirrored_tf_module` <- function(x, name) {
  v <- .subset2(x, name)
  if (is.null(v)) {
    what <- paste0(attr(x, "path"), "$", name)
    abort_not_yet(c("{.code {what}} is TensorFlow's; mirrored runs without TensorFlow and has only {.code {paste0(attr(x, 'path'), '$', names(x))}}.",
                    i = "Use mirrored's R functions (ops: {.fn op_add} ...; data: {.fn tensor_slices_dataset} and the {.code dataset_*} transforms)."),
                  call = sys.call())
  }
  v
}

#' @export
print.mirrored_tf_module <- function(x, ...) {
  cat("<", attr(x, "path"), ": ", paste(names(x), collapse = ", "), ">\n", sep = "")
  invisible(x)
}


#' TensorFlow-compatible entry points
#'
#' `tf$distribute$MirroredStrategy(devices, cross_device_ops)` is
#' [mirrored_strategy()], so the vignette's line runs unchanged;
#' `tf$distribute$NcclAllReduce()`, `tf$distribute$HierarchicalCopyAllReduce()`
#' and `tf$distribute$ReductionToOneDevice()` name the all-reduce to use;
#' `tf$distribute$experimental$CommunicationOptions()` is
#' [communication_options()] (with `CommunicationImplementation$AUTO`,
#' `$RING` and `$NCCL`);
#' `tf$data$AUTOTUNE` is the `buffer_size` that lets [dataset_prefetch()]
#' choose.
#'
#' @format A list with elements `distribute` and `data`.
#' @return `tf$distribute$MirroredStrategy()` returns a strategy (see
#'   [mirrored_strategy()]); the other functions return objects naming an
#'   all-reduce for its `cross_device_ops`.
#' @family distribution
#' @seealso [mirrored_strategy()]
#' @examples
#' strategy <- tf$distribute$MirroredStrategy(c("/cpu:0", "/cpu:1"))
#' cat(sprintf("Number of devices: %d\n", strategy$num_replicas_in_sync))
#' @export
tf <- list(distribute = list(
  MirroredStrategy = function(devices = NULL, cross_device_ops = NULL) mirrored_strategy(devices, cross_device_ops),
  NcclAllReduce = function(num_packs = 1L) new_cross_device_ops("nccl", num_packs = num_packs),
  HierarchicalCopyAllReduce = function(num_packs = 1L) new_cross_device_ops("hierarchical_copy", num_packs = num_packs),
  ReductionToOneDevice = function(reduce_to_device = NULL, accumulation_fn = NULL) {
    new_cross_device_ops("reduce_to_one_device")
  },
  MultiWorkerMirroredStrategy = function(cluster_resolver = NULL, communication_options = NULL) {
    call <- sys.call()
    comm <- resolve_communication_options(communication_options, call = call)
    impl <- comm$implementation  # "auto", "ring" (Gloo) or "nccl"
    new_multi_worker_strategy(NULL, cluster_resolver, impl, NULL, comm, call = call)
  },
  cluster_resolver = list(
    TFConfigClusterResolver = function() {
      structure(list(json = Sys.getenv("TF_CONFIG")), class = "mirrored_cluster_resolver")
    },
    SimpleClusterResolver = function(cluster_spec, task_type = "worker", task_id = 0L) {
      json <- with_core(cpp_json_serialize(list(cluster = lapply(cluster_spec, as.list),
                                                task = list(type = task_type, index = as.integer(task_id)))))
      structure(list(json = json), class = "mirrored_cluster_resolver")
    }
  ),
  get_strategy = function() get_strategy(),
  experimental = list(
    CommunicationOptions = function(bytes_per_pack = 0, timeout_seconds = NULL, implementation = "auto") {
      communication_options(bytes_per_pack, timeout_seconds, implementation)
    },
    CommunicationImplementation = list(AUTO = "AUTO", RING = "RING", NCCL = "NCCL")
  )
), data = list(AUTOTUNE = -1L))
tf <- tf_module(tf, "tf")
