# A fault across network namespaces: two test hosts, each a network namespace
# (`ip netns`) with one end of a veth pair, run one worker each; once training
# runs, worker 1's link is cut. Worker 0 sees no closed connection (the link
# is down, nothing answers): it must stop with a classed error naming worker 1
# within the collectives' deadline, and nothing may hang. The namespaces, the
# veth pair and the processes are always removed, whatever the test's outcome.

# Runs `ip args`; the status and what it printed.
ip_cmd <- function(...) {
  out <- suppressWarnings(system2("ip", c(...), stdout = TRUE, stderr = TRUE))
  list(ok = is.null(attr(out, "status")) || attr(out, "status") == 0,
       out = paste(out, collapse = " "))
}

# Skips (with the reason) unless this machine lets the test make namespaces.
skip_unless_netns <- function() {
  skip_if_not(mirrored:::built_with_gloo(), "this build has no Gloo")
  skip_if_not_installed("processx")
  skip_if_not(.Platform$OS.type == "unix" && Sys.info()[["sysname"]] == "Linux",
              "network namespaces are Linux's")
  skip_if(!nzchar(Sys.which("ip")), "no `ip` command (iproute2)")
  uid <- suppressWarnings(system2("id", "-u", stdout = TRUE, stderr = FALSE))
  skip_if(!identical(uid, "0"), "making network namespaces needs root")
  probe <- sprintf("mrprobe%d", Sys.getpid())
  made <- ip_cmd("netns", "add", probe)
  if (made$ok) ip_cmd("netns", "del", probe)
  skip_if(!made$ok, paste("`ip netns add` is not allowed here (a container without",
                          "CAP_SYS_ADMIN?):", made$out))
}

# Two namespaces joined by a veth pair, 10.213.<x>.1 and .2; every name
# carries this process's id so that parallel runs never collide.
host_names <- function() {
  id <- Sys.getpid()
  x <- id %% 250L + 1L
  list(ns = sprintf("mr%da", id), ns_b = sprintf("mr%db", id),
       veth = sprintf("mr%dva", id), veth_b = sprintf("mr%dvb", id),
       addr = sprintf("10.213.%d.%d", x, 1:2))
}

# Removes whatever make_hosts() made (deleting a namespace deletes the veth
# end inside it; the pair is still in the root namespace if a step failed).
remove_hosts <- function(h) {
  ip_cmd("netns", "del", h$ns)
  ip_cmd("netns", "del", h$ns_b)
  ip_cmd("link", "del", h$veth)
  invisible()
}

make_hosts <- function(h) {
  steps <- list(
    c("netns", "add", h$ns), c("netns", "add", h$ns_b),
    c("link", "add", h$veth, "type", "veth", "peer", "name", h$veth_b),
    c("link", "set", h$veth, "netns", h$ns), c("link", "set", h$veth_b, "netns", h$ns_b),
    c("-n", h$ns, "addr", "add", paste0(h$addr[1], "/24"), "dev", h$veth),
    c("-n", h$ns_b, "addr", "add", paste0(h$addr[2], "/24"), "dev", h$veth_b),
    c("-n", h$ns, "link", "set", "lo", "up"), c("-n", h$ns_b, "link", "set", "lo", "up"),
    c("-n", h$ns, "link", "set", h$veth, "up"), c("-n", h$ns_b, "link", "set", h$veth_b, "up"))
  for (s in steps) {
    r <- do.call(ip_cmd, as.list(s))
    if (!r$ok) stop("ip ", paste(s, collapse = " "), " failed: ", r$out)
  }
  h
}

test_that("cutting one host's link stops the other worker with a classed error naming it", {
  skip_unless_netns()
  h <- host_names()
  on.exit(remove_hosts(h), add = TRUE)  # registered before anything exists
  make_hosts(h)
  # Both hosts reach each other before the job starts.
  ping <- ip_cmd("netns", "exec", h$ns, "ping", "-c", "1", "-W", "2", h$addr[2])
  expect(ping$ok || !nzchar(Sys.which("ping")), paste("the hosts do not reach each other:", ping$out))

  dir <- tempfile("netns")
  dir.create(dir)
  deadline <- 6  # above the 5 s after which a silent worker is named
  job <- start_workers(long_body, list(timeout = deadline, dir = dir, epochs = 100000, mark_epoch = 1), 2,
                       hosts = h$addr,
                       prefix = list(c("ip", "netns", "exec", h$ns), c("ip", "netns", "exec", h$ns_b)))
  # Runs before remove_hosts (after = FALSE): no process outlives the test.
  on.exit(for (p in job$procs) if (p$is_alive()) p$kill(), add = TRUE, after = FALSE)
  running <- wait_for_file(file.path(dir, "epoch1_0"), 90) &&
    wait_for_file(file.path(dir, "epoch1_1"), 10)
  if (!running) {
    # (expect() evaluates its message even when it passes: only build the
    # report, which stops the workers, when the job did not start.)
    fail(paste("the job did not start:\n", worker_report(finish_workers(job, 1))))
    return()
  }

  cut <- ip_cmd("-n", h$ns_b, "link", "set", h$veth_b, "down")
  expect(cut$ok, cut$out)
  cut_at <- Sys.time()
  survivor <- job
  survivor$procs <- job$procs[1]
  res <- finish_workers(survivor, deadline + 30)
  r <- res[[1]]
  r$log <- c(r$log, paste("exit status:", job$procs[[1]]$get_exit_status()))
  res[[1]] <- r
  expect(!isTRUE(r$ok), worker_report(res))
  expect(any(c("mirrored_worker_error", "mirrored_timeout_error") %in% r$class),
         worker_report(res))
  expect_match(paste(r$message, collapse = " "),
               sprintf("worker 1\\s+\\(%s:[0-9]+\\)", gsub(".", "\\.", h$addr[2], fixed = TRUE)))
  took <- as.numeric(difftime(r$time, cut_at, units = "secs"))
  expect_lt(took, deadline + 7)

  # Worker 1, cut off from the chief, stops by itself too (no hang).
  p1 <- job$procs[[2]]
  until <- Sys.time() + deadline + 30
  while (p1$is_alive() && Sys.time() < until) p1$wait(1000)
  alive <- p1$is_alive()
  out1 <- file.path(job$dir, "out1.rds")
  cut_off <- if (file.exists(out1)) readRDS(out1) else list(ok = FALSE, class = "no_result")
  expect(!alive && !isTRUE(cut_off$ok) && any(grepl("^mirrored_.*_error$", cut_off$class)),
         paste(c("worker 1:", if (alive) "still running", cut_off$class, cut_off$message),
               collapse = " "))
})

test_that("the namespaces and links of the fault test are gone afterwards", {
  skip_unless_netns()
  left <- ip_cmd("netns", "list")
  expect_false(grepl(sprintf("mr%d[ab]", Sys.getpid()), left$out), info = left$out)
  links <- ip_cmd("link", "show")
  expect_false(grepl(sprintf("mr%dv", Sys.getpid()), links$out), info = links$out)
})
