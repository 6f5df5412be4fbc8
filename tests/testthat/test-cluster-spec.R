# The cluster of a multi-worker job as the core resolves it from the
# `cluster` argument's JSON or an environment (here hand-made, never the
# session's own).

resolve <- function(env = character(), cluster = "") {
  mirrored:::with_core(mirrored:::cpp_resolve_cluster(cluster, env))
}

test_that("an environment without a cluster gives NULL", {
  expect_null(resolve(c(HOME = "/root", TF_CONFIG = "{}")))
  expect_null(resolve(c(SLURM_PROCID = "0", SLURM_NTASKS = "1")))
})

test_that("TF_CONFIG with a chief puts the chief first", {
  cfg <- paste0('{"cluster": {"chief": ["localhost:2000"], "worker": ["localhost:2001", "localhost:2002"]},',
                ' "task": {"type": "worker", "index": 1}}')
  spec <- resolve(c(TF_CONFIG = cfg, SLURM_PROCID = "0", SLURM_NTASKS = "4"))
  expect_identical(spec$workers, c("localhost:2000", "localhost:2001", "localhost:2002"))
  expect_identical(spec$index, 2L)
  expect_identical(spec$task_type, "worker")
  expect_identical(spec$task_id, 1L)
  expect_identical(spec$local_rank, 2L)
  expect_identical(spec$source, "TF_CONFIG")
  expect_identical(spec$chief, "localhost:2000")
  expect_identical(spec$bind_host, "localhost")
  expect_identical(spec$described,
                   c("chief (localhost:2000)", "worker 0 (localhost:2001)", "worker 1 (localhost:2002)"))
})

test_that("the argument wins over the environment, and Slurm gives ranks", {
  arg <- '{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]}, "task": {"type": "worker", "index": 0}}'
  env <- c(SLURM_PROCID = "2", SLURM_NTASKS = "3", SLURM_LOCALID = "0",
           SLURM_STEP_NODELIST = "gpu[07-09]", SLURM_JOB_ID = "1042")
  spec <- resolve(env, cluster = arg)
  expect_identical(spec$source, "cluster argument")
  expect_identical(spec$workers, c("10.0.0.1:2222", "10.0.0.2:2222"))
  expect_identical(spec$index, 0L)

  slurm <- resolve(env)
  expect_identical(slurm$source, "Slurm")
  expect_identical(slurm$workers, c("gpu07", "", ""))
  expect_identical(slurm$index, 2L)
  expect_identical(slurm$chief, "gpu07:29542")
  expect_identical(slurm$bind_host, "")
  expect_identical(slurm$described, c("chief (gpu07:29542)", "worker 1", "worker 2"))
})

test_that("a task index outside the cluster is a classed error naming it", {
  cfg <- '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}}'
  expect_error(resolve(c(TF_CONFIG = cfg)), "task index 2 is outside the cluster's 2 workers",
               class = "mirrored_value_error")
  expect_error(resolve(c(TF_CONFIG = "{not json")), "TF_CONFIG is not valid JSON",
               class = "mirrored_value_error")
  expect_error(resolve(c(OMPI_COMM_WORLD_RANK = "1", OMPI_COMM_WORLD_SIZE = "2")),
               "MASTER_ADDR is not set", class = "mirrored_value_error")
})
