# Multi-worker strategies: one model trained by several R processes, on one
# machine or many. Each worker drives its own devices as a mirrored strategy
# does; the core (src/mr/dist/worker_group.h) resolves the cluster, runs the
# rendezvous on the chief's store and joins every replica of every worker in
# one all-reduce (Gloo between CPU processes, NCCL between GPUs).

MultiWorkerStrategy <- R6::R6Class("multi_worker_mirrored_strategy",
  inherit = MirroredStrategy,
  public = list(
    # External pointer to the job (NULL: no cluster, this worker alone).
    workers = NULL,
    # The core's description of the job (cpp_workers_info()).
    info = NULL,
    cluster_resolver = NULL,
    # A name for the next synchronisation point of kind `what` ("checkpoint
    # 3"): every worker runs the same script, so the n-th point of a kind is
    # the same event on every worker (paths may differ between workers).
    next_sync = function(what) {
      n <- (private$syncs[[what]] %||% 0L) + 1L
      private$syncs[[what]] <- n
      paste(what, n)
    },
    initialize = function(placement, cross_device_ops, reason, communication_options, workers) {
      super$initialize(placement, cross_device_ops, reason, communication_options)
      self$workers <- workers
      if (!is.null(workers)) {
        self$info <- with_core(cpp_workers_info(workers))
        remember_job(workers)
      }
      self$cluster_resolver <- cluster_resolver_of(self$info)
    },
    print = function(...) {
      n <- self$num_replicas_in_sync
      info <- self$info
      if (is.null(info)) {
        cat("<MultiWorkerMirroredStrategy> ", n, " replica", if (n != 1) "s", " on 1 worker (no cluster: ",
            "this process alone)\n", sep = "")
      } else {
        cat("<MultiWorkerMirroredStrategy> ", n, " replica", if (n != 1) "s", " on ", info$size,
            " worker", if (info$size != 1) "s", " (cluster from ", info$source, ")\n", sep = "")
        here <- info$index + 1L
        for (i in seq_len(info$size)) {
          cat(if (i == here) "* " else "  ", info$described[i], ": ", info$replicas[i], " replica",
              if (info$replicas[i] != 1) "s", " on ", info$hosts[i], "\n", sep = "")
        }
        cat("  this worker's devices: ", paste(self$placement$display, collapse = ", "), "\n", sep = "")
      }
      plan <- with_core(cpp_communicator_plan(self$devices, self$cross_device_ops, self$logical_per_gpu))[["name"]]
      if (!is.null(info)) plan <- with_core(cpp_workers_communicator_name(self$workers, plan, length(self$devices)))
      cat("  all-reduce: ", plan, "\n", sep = "")
      invisible(self)
    }
  ),
  active = list(
    num_replicas_in_sync = function() {
      if (is.null(self$info)) length(self$devices) else self$info$global_replicas
    }
  ),
  private = list(syncs = list())
)

#' Synchronous data-parallel training over several processes and machines
#'
#' Creates a strategy whose models are trained by every worker of a job at
#' once: each worker is an R process running the same script on its own
#' devices (its GPUs, or logical CPU replicas), and every replica of every
#' worker joins one synchronous all-reduce of the gradients, so that the job
#' computes the update of one device on the global batch. Between CPU
#' processes the all-reduce runs on Gloo over TCP; between GPUs, on NCCL.
#'
#' The cluster comes from, in this order: `cluster`; the environment variable
#' `TF_CONFIG` (Keras' JSON: `cluster$worker`, an optional `cluster$chief`,
#' `task$type` and `task$index`); Slurm's `srun` (`SLURM_PROCID`,
#' `SLURM_NTASKS`, `SLURM_LOCALID`, the chief's host from
#' `SLURM_STEP_NODELIST`); an MPI launcher's rank variables (`mpirun` is only
#' the launcher; the chief's host comes from `MASTER_ADDR`, or loopback when
#' every rank is local); torchrun-style `MASTER_ADDR`, `MASTER_PORT`, `RANK`,
#' `WORLD_SIZE`; Keras 3's `KERAS_DISTRIBUTION_JOB_ADDRESSES`,
#' `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`.
#' Without any of them the strategy is a worker alone (like
#' [mirrored_strategy()]). Worker 0 (TF_CONFIG's chief, or its worker 0) is
#' the chief: it serves the rendezvous and writes the checkpoints.
#'
#' The call returns once every worker has joined; a worker that starts alone
#' waits for the others up to `timeout` seconds and then names the workers
#' it is still waiting for (Ctrl-C stops the wait).
#'
#' With arrays or a dataset that is not sharded, every worker reads the same
#' data and its replicas take their rows of each global batch (`batch_size`
#' is the global batch); the rows a replica takes, and its dropout keys,
#' depend only on the row's position in the global batch, so results do not
#' depend on how replicas are spread over workers. A dataset stored in at
#' least as many files as there are workers ([npz_dataset()] of several
#' files) is sharded by file, as `tf.data` does: each worker reads its own
#' files and batches its replicas' share of the global batch. Progress lines during an
#' epoch show the rows of the worker's own replicas; the epoch's logs (the
#' history, callbacks, `evaluate()`) are summed over every worker.
#' `predict()` computes every row on each worker's own replicas.
#'
#' Every worker continues from the chief's random stream once the strategy is
#' made, so the seeds drawn afterwards (initial weights, dropout, shuffles)
#' agree on every worker even without [set_random_seed()]; the initial weights
#' are the chief's in any case (they are broadcast).
#'
#' Checkpoints: [callback_model_checkpoint()] writes its files on the chief
#' only (the other workers wait for the chief's save, however long it takes);
#' [callback_backup_and_restore()] keeps a copy per worker (worker `i`'s in
#' `backup_dir/worker_<i>`), and a restarted job resumes on every worker.
#'
#' @param devices This worker's devices, as for [mirrored_strategy()]:
#'   `NULL` (every GPU, else one CPU) or device names such as
#'   `c("/cpu:0", "/cpu:1")`.
#' @param cluster `NULL` (read the environment), TF_CONFIG's JSON as a
#'   string, or the same as an R list
#'   (`list(cluster = list(worker = c("host1:2222", "host2:2222")), task = list(type = "worker", index = 0))`).
#' @param communication How the workers all-reduce: `"auto"` (NCCL between
#'   GPUs, Gloo between CPUs), `"nccl"` or `"gloo"`.
#' @param timeout Seconds a worker waits for the others, at the start and in
#'   every collective (`NULL`: `getOption("mirrored.collective_timeout", 300)`).
#'   A worker that died is reported within seconds; one that hangs, within
#'   this deadline.
#' @return A strategy with `$num_replicas_in_sync` (every replica of every
#'   worker), `$scope()` and `$cluster_resolver` (`$task_type`, `$task_id`,
#'   `$num_workers`, `$is_chief`).
#' @family distribution
#' @seealso [mirrored_strategy()], `vignette("multi-worker")`
#' @examples
#' # Without a cluster in the environment: one worker, like mirrored_strategy().
#' strategy <- multi_worker_mirrored_strategy(devices = c("/cpu:0", "/cpu:1"))
#' strategy$num_replicas_in_sync
#' strategy$cluster_resolver$task_type
#' @export
multi_worker_mirrored_strategy <- function(devices = NULL, cluster = NULL,
                                           communication = c("auto", "nccl", "gloo"),
                                           timeout = NULL) {
  call <- sys.call()
  if (missing(communication)) communication <- "auto"
  communication <- check_choice(tolower(check_string(communication, "communication", call = call)),
                                "communication", c("auto", "nccl", "gloo"), call = call)
  timeout <- check_num(timeout, "timeout", min = 0, min_open = TRUE, null_ok = TRUE, call = call)
  new_multi_worker_strategy(devices, cluster, c(auto = "auto", nccl = "nccl", gloo = "ring")[[communication]],
                            timeout, communication_options(), call = call)
}

# The strategy of multi_worker_mirrored_strategy() and
# tf$distribute$MultiWorkerMirroredStrategy(): `implementation` in the
# core's words ("auto", "nccl", "ring").
new_multi_worker_strategy <- function(devices, cluster, implementation, timeout, comm, call) {
  logical <- .strategies$logical_gpus
  local <- local_placement(devices, logical, call = call)
  placement <- local$placement
  json <- cluster_json(cluster, call = call)
  deadline <- timeout %||% comm$timeout_seconds %||% collective_timeout()
  env <- Sys.getenv()
  resolved <- with_core(cpp_resolve_cluster(json, env), call = call)
  if (!is.null(resolved)) {
    me <- resolved$described[resolved$index + 1L]
    cli::cli_inform(c(i = "Joining a job of {length(resolved$workers)} worker{?s} as {me} (cluster from {resolved$source}); waiting up to {deadline} s for the others."),
                    class = "mirrored_strategy_message")
  }
  workers <- with_core(cpp_workers_new(json, env, length(placement$name), any(placement$kind == "gpu"),
                                       deadline, implementation), call = call)
  ops <- if (implementation == "nccl" && is.null(workers)) "nccl" else ""
  if (nzchar(ops)) resolve_cross_device_ops(ops, placement$name, logical, call = call)
  if (!is.null(comm$timeout_seconds) || !is.null(timeout)) comm$timeout_seconds <- deadline
  if (!is.null(workers)) agree_on_seed(workers)
  .strategies$made <- TRUE
  strategy <- MultiWorkerStrategy$new(placement, ops, local$reason, comm, workers)
  info <- strategy$info
  cli::cli_inform(c(i = if (is.null(info)) {
    "Using MultiWorkerMirroredStrategy with one worker (no cluster found) and devices ({paste(placement$display, collapse = ', ')})."
  } else {
    "Using MultiWorkerMirroredStrategy: {info$described[info$index + 1L]} of {info$size} worker{?s}, {strategy$num_replicas_in_sync} replicas in sync."
  }), class = "mirrored_strategy_message")
  strategy
}

# The jobs this session joined. They are left when R exits (never from a GC
# finalizer: the chief's leave() waits for the other workers): a worker then
# says goodbye instead of looking like one that died, and the chief's store
# outlives every worker's last request.
remember_job <- function(workers) {
  if (is.null(.strategies$jobs)) {
    .strategies$jobs <- list()
    reg.finalizer(.strategies, function(e) {
      for (w in e$jobs) try(cpp_workers_close(w), silent = TRUE)
    }, onexit = TRUE)
  }
  .strategies$jobs <- c(.strategies$jobs, list(workers))
  invisible()
}

# Every worker continues from the chief's R random stream: the seeds drawn
# next (layers' initial weights and dropout, shuffles) are the same on every
# worker, whether or not the script called set_random_seed(), so that
# shuffles and dropout agree across workers.
agree_on_seed <- function(workers) {
  mine <- as.character(sample.int(.Machine$integer.max, 1))
  all <- with_core(cpp_workers_all_gather(workers, "seed", mine))
  set.seed(as.integer(all[[1]]))
  invisible()
}

# TF_CONFIG's JSON from the `cluster` argument ("" when NULL).
cluster_json <- function(cluster, call = sys.call(-1)) {
  if (is.null(cluster)) return("")
  if (inherits(cluster, "mirrored_cluster_resolver")) return(cluster$json)
  if (is.character(cluster) && length(cluster) == 1 && !is.na(cluster)) return(cluster)
  if (is.list(cluster) && !is.null(names(cluster))) {
    # Lists of addresses are JSON arrays even with one element.
    if (is.list(cluster$cluster)) {
      cluster$cluster <- lapply(cluster$cluster, function(x) as.list(x))
    }
    return(with_core(cpp_json_serialize(cluster), call = call))
  }
  abort_value("{.arg cluster} must be NULL, TF_CONFIG's JSON as a string or a named list like it, not {describe(cluster)}.",
              call = call)
}

# What keras users read from strategy$cluster_resolver.
cluster_resolver_of <- function(info) {
  if (is.null(info)) {
    return(structure(list(task_type = "worker", task_id = 0L, num_workers = 1L, is_chief = TRUE,
                          rpc_layer = NULL, json = ""),
                     class = "mirrored_cluster_resolver"))
  }
  structure(list(task_type = info$task_type, task_id = as.integer(info$task_id),
                 num_workers = as.integer(info$size), is_chief = isTRUE(info$is_chief),
                 workers = info$address, rpc_layer = NULL, json = ""),
            class = "mirrored_cluster_resolver")
}

#' @export
print.mirrored_cluster_resolver <- function(x, ...) {
  if (is.null(x$task_type)) {
    cat("<ClusterResolver> (read when a strategy is made from it)\n")
    return(invisible(x))
  }
  cat("<ClusterResolver> task: ", x$task_type, " ", x$task_id, " of ", x$num_workers, " worker",
      if (x$num_workers != 1) "s", if (isTRUE(x$is_chief)) " (chief)", "\n", sep = "")
  invisible(x)
}

# The multi-worker job of a model (NULL for a process alone).
model_workers <- function(model) {
  s <- model$strategy
  if (inherits(s, "multi_worker_mirrored_strategy")) s$workers else NULL
}

# Whether this process writes the files the user asked for: the chief of a
# multi-worker job, or any process alone.
is_chief_process <- function(model) {
  w <- model_workers(model)
  is.null(w) || isTRUE(model$strategy$info$is_chief)
}

# i16: runs `code` (the epochs of fit(), the batches of evaluate()); Ctrl-C
# while it runs R code (a callback, the progress bar) makes this worker of
# a multi-worker job quit it, as the core does for Ctrl-C between steps, so
# the others stop at once instead of waiting for it up to the deadline.
quit_job_on_interrupt <- function(model, what, code) {
  workers <- model$strategy$workers
  if (is.null(workers)) return(code)
  withCallingHandlers(code, interrupt = function(e) {
    try(cpp_workers_abandon(workers, paste0("was interrupted (Ctrl-C) during ", what)), silent = TRUE)
  })
}
