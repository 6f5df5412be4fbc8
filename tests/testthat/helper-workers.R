# Multi-worker jobs on loopback for the tests: every worker is a fresh
# Rscript process (processx) that loads the installed package, runs `body`
# with the values in `params` and saves what it returns (or the condition it
# raised) to an RDS file.

skip_if_no_workers <- function() {
  skip_if_not(mirrored:::built_with_gloo(), "this build has no Gloo")
  skip_if_not_installed("processx")
}

# A TCP port nobody listens on now (the chief's store binds it next).
free_port <- function() {
  for (i in 1:50) {
    port <- sample(20000:60000, 1)
    s <- tryCatch(serverSocket(port), error = function(e) NULL)
    if (!is.null(s)) {
      close(s)
      return(port)
    }
  }
  stop("no free port")
}

# TF_CONFIG of worker `index` among `n` workers, on loopback unless `hosts`
# gives each worker's address.
tf_config <- function(ports, index, hosts = "127.0.0.1") {
  workers <- paste0('"', hosts, ':', ports, '"', collapse = ", ")
  sprintf('{"cluster": {"worker": [%s]}, "task": {"type": "worker", "index": %d}}', workers, index)
}

# The environment of worker `index`: TF_CONFIG (launch = "tf_config") or
# Slurm's variables as srun sets them (launch = "slurm").
worker_env <- function(launch, ports, index, hosts = "127.0.0.1") {
  n <- length(ports)
  # The workers load the package this process tested: its library paths.
  base <- c(R_LIBS = paste(.libPaths(), collapse = .Platform$path.sep), OMP_NUM_THREADS = "1", TF_CONFIG = "",
            SLURM_PROCID = "", SLURM_NTASKS = "")
  switch(launch,
    tf_config = c(base[names(base) != "TF_CONFIG"], TF_CONFIG = tf_config(ports, index, hosts)),
    slurm = c(base[!names(base) %in% c("SLURM_PROCID", "SLURM_NTASKS")],
              SLURM_PROCID = as.character(index), SLURM_NTASKS = as.character(n),
              SLURM_LOCALID = as.character(index), SLURM_STEP_NODELIST = "localhost",
              SLURM_JOB_ID = "", MASTER_ADDR = "127.0.0.1", MASTER_PORT = as.character(ports[1])),
    stop("unknown launch ", launch))
}

# Starts one Rscript per worker running `body(params, index)`; returns the
# processes and where each writes its result.
# `indices`: each process's task index (default 0..n-1; a test may give one
# twice). `hosts`: each worker's address in TF_CONFIG (default loopback);
# `prefix`: per process, a command that runs Rscript (e.g.
# c("ip", "netns", "exec", "ns0"): the worker runs in that network namespace).
start_workers <- function(body, params, n, launch = "tf_config", dir = tempfile("job"),
                          indices = seq_len(n) - 1L, hosts = "127.0.0.1", prefix = NULL) {
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  ports <- vapply(seq_len(n), function(i) free_port(), numeric(1))
  script <- file.path(dir, "worker.R")
  environment(body) <- globalenv()  # do not serialise the test's environment
  saveRDS(list(body = body, params = params), file.path(dir, "job.rds"))
  writeLines(c(
    "args <- commandArgs(TRUE)",
    "job <- readRDS(args[1]); index <- as.integer(args[2]); out <- args[3]",
    "suppressPackageStartupMessages(library(mirrored))",
    "res <- tryCatch(list(ok = TRUE, value = job$body(job$params, index)),",
    "  error = function(e) list(ok = FALSE, class = class(e), message = conditionMessage(e),",
    "                           time = Sys.time()))",
    "saveRDS(res, out)"
  ), script)
  procs <- lapply(seq_along(indices), function(k) {
    i <- indices[k]
    env <- worker_env(launch, ports, i, hosts)
    cmd <- c(prefix[[k]], "Rscript")
    processx::process$new(cmd[1], c(cmd[-1], script, file.path(dir, "job.rds"), i, file.path(dir, sprintf("out%d.rds", k - 1L))),
                          env = c("current", env), stdout = file.path(dir, sprintf("log%d.txt", k - 1L)),
                          stderr = "2>&1", cleanup = TRUE)
  })
  names(procs) <- NULL
  list(procs = procs, dir = dir, ports = ports)
}

# Waits for every worker (at most `timeout` seconds; the rest are killed)
# and reads their results.
finish_workers <- function(job, timeout = 120) {
  deadline <- Sys.time() + timeout
  for (p in job$procs) {
    # wait() may return early (a signal, e.g. SIGCHLD of a command the test
    # ran through system2()): wait again until the process ends or time is up.
    repeat {
      left <- as.numeric(difftime(deadline, Sys.time(), units = "secs"))
      if (!p$is_alive() || left <= 0) break
      p$wait(min(left, 1) * 1000)
    }
    if (p$is_alive()) p$kill()
  }
  lapply(seq_along(job$procs) - 1L, function(i) {
    f <- file.path(job$dir, sprintf("out%d.rds", i))
    log <- file.path(job$dir, sprintf("log%d.txt", i))
    if (!file.exists(f)) {
      return(list(ok = FALSE, class = "no_result", message = "no result",
                  log = if (file.exists(log)) readLines(log, warn = FALSE)))
    }
    r <- readRDS(f)
    r$log <- if (file.exists(log)) readLines(log, warn = FALSE)
    r
  })
}

run_workers <- function(body, params, n, launch = "tf_config", timeout = 120) {
  finish_workers(start_workers(body, params, n, launch), timeout)
}

# Every worker returned (else a failure with their logs).
expect_all_ok <- function(results) {
  expect(all(vapply(results, function(r) isTRUE(r$ok), logical(1))), worker_report(results))
}

# Worker `k` of `results` stopped with a mirrored_worker_error whose message
# (white space collapsed) matches `pattern`, within `seconds` of `since`.
expect_worker_error <- function(results, k, pattern, since, seconds) {
  r <- results[[k]]
  message <- paste(r$message, collapse = " ")
  expect(!isTRUE(r$ok), worker_report(results))
  expect_true("mirrored_worker_error" %in% r$class, info = message)
  expect_match(gsub("\\s+", " ", message), pattern)
  expect_lt(as.numeric(difftime(r$time, since, units = "secs")), seconds)
}

# A failing worker's log, for expectation messages.
worker_report <- function(results) {
  paste(vapply(seq_along(results), function(i) {
    r <- results[[i]]
    paste0("worker ", i - 1, ": ", if (isTRUE(r$ok)) "ok" else paste(r$message, collapse = " "),
           "\n  ", paste(utils::tail(r$log, 15), collapse = "\n  "))
  }, character(1)), collapse = "\n")
}

rel_diff <- function(a, b) {
  a <- unlist(a)
  b <- unlist(b)
  max(abs(a - b)) / max(max(abs(b)), 1e-12)
}

# A long training run that writes `marker` (per worker) once its first
# epoch ended, so a test can strike mid-training.
long_body <- function(p, index) {
  strategy <- multi_worker_mirrored_strategy(devices = "/cpu:0", timeout = p$timeout)
  set.seed(3)
  x <- matrix(rnorm(256 * 8), 256)
  y <- matrix(rnorm(256 * 2), 256)
  set_random_seed(9)
  with(strategy$scope(), {
    model <- keras_model_sequential(input_shape = 8) |> layer_dense(16, activation = "relu") |> layer_dense(2)
    model |> compile(optimizer = optimizer_sgd(0.01), loss = "mse")
  })
  marker <- file.path(p$dir, sprintf("epoch%d_%d", p$mark_epoch, index))
  ended <- 0L
  cbs <- list(callback_lambda(on_epoch_end = function(epoch, logs) {
    ended <<- ended + 1L
    if (ended == p$mark_epoch) file.create(marker)
  }))
  if (!is.null(p$backup)) cbs <- c(list(callback_backup_and_restore(p$backup)), cbs)
  train <- function() model |> fit(x, y, batch_size = 8, epochs = p$epochs, verbose = 0, shuffle = TRUE, callbacks = cbs)
  # p$linger: an interrupted worker stays alive that many seconds.
  r <- if (is.null(p$linger)) train() else tryCatch(train(), interrupt = function(e) e)
  if (inherits(r, "interrupt")) {
    Sys.sleep(p$linger)
    return("interrupted")
  }
  get_weights(model)
}

wait_for_file <- function(path, seconds = 60) {
  deadline <- Sys.time() + seconds
  while (!file.exists(path) && Sys.time() < deadline) Sys.sleep(0.05)
  file.exists(path)
}
