# Threads of this R process, and a wait for their number to come back.
#
# A joined thread's /proc/self/task entry can outlive pthread_join() by a few
# moments: the kernel wakes the joiner when the thread clears its id (early
# in its exit), and removes the entry later. So a count taken right after
# the objects owning threads were released may still see them (seen on an
# AMD EPYC Zen 3: 6 threads, expected 5); expect_thread_count() waits up to
# `within` seconds for the count, and a thread that was really left behind
# still fails it.
thread_count <- function() length(list.files("/proc/self/task"))

expect_thread_count <- function(n, within = 2) {
  deadline <- proc.time()[["elapsed"]] + within
  repeat {
    got <- thread_count()
    if (got == n || proc.time()[["elapsed"]] > deadline) break
    Sys.sleep(0.01)
  }
  expect_equal(got, n)
}
