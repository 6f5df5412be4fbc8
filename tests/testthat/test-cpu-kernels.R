# The CPU kernel paths (src/mr/backends/cpu/cpu_isa.h): MIRRORED_CPU_ISA picks
# one for the replicas made after it is set. Every path this machine can run
# gives the same numbers however the work is split: by the replica's team of
# threads, or by the batches a dataset cuts (on an AMD EPYC Zen 3, a dataset's
# batches of 5 once predicted other last bits than an array's batch of 32).

with_cpu_isa <- function(isa, code) {
  old <- Sys.getenv("MIRRORED_CPU_ISA", NA)
  Sys.setenv(MIRRORED_CPU_ISA = isa)
  on.exit(if (is.na(old)) Sys.unsetenv("MIRRORED_CPU_ISA") else Sys.setenv(MIRRORED_CPU_ISA = old))
  force(code)
}

test_that("the build info names the kernel path and every path this machine runs", {
  info <- mirrored:::cpp_build_info()
  expect_true(info$cpu_isa %in% info$cpu_isas)
  expect_true("portable" %in% info$cpu_isas)
  expect_identical(info$cpu_isa, info$cpu_isas[1])  # the best, unless MIRRORED_CPU_ISA says otherwise
  expect_identical(with_cpu_isa("portable", mirrored:::cpp_build_info()$cpu_isa), "portable")
  expect_match(with_cpu_isa("portable", mirrored:::cpp_build_info()$cpu_gemm), "portable")
})

test_that("every kernel path predicts the same rows whatever the batches and the threads", {
  set.seed(3)
  x <- matrix(runif(37 * 50, -2, 2), 37)
  old <- options(mirrored.cpu_threads = NULL)
  on.exit(options(old))
  for (isa in mirrored:::cpp_build_info()$cpu_isas) {
    with_cpu_isa(isa, {
      ref <- NULL
      for (threads in 1:2) {
        options(mirrored.cpu_threads = threads)
        set_random_seed(1)
        model <- keras_model_sequential(input_shape = 50) |>
          layer_dense(units = 300, activation = "relu") |>
          layer_dense(units = 10)
        by_array <- predict(model, x, batch_size = 32, verbose = 0)
        by_dataset <- predict(model, tensor_slices_dataset(x) |> dataset_batch(5), verbose = 0)
        one_by_one <- predict(model, x, batch_size = 1, verbose = 0)
        expect_identical(by_dataset, by_array, label = paste(isa, threads, "threads, batches of 5"))
        expect_identical(one_by_one, by_array, label = paste(isa, threads, "threads, batches of 1"))
        if (is.null(ref)) ref <- by_array
        expect_identical(by_array, ref, label = paste(isa, threads, "threads against 1"))
      }
    })
  }
})

test_that("a kernel path this machine cannot run is a clear error", {
  expect_error(with_cpu_isa("avx9000", {
    model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 1)
    predict(model, matrix(1, 1, 3), verbose = 0)
  }), class = "mirrored_value_error", regexp = "MIRRORED_CPU_ISA.*avx9000")
  expect_error(with_cpu_isa("avx9000", mirrored:::with_core(mirrored:::cpp_build_info())),
               class = "mirrored_value_error", regexp = "MIRRORED_CPU_ISA")
})

test_that("print(strategy) says how many threads a CPU replica uses, why, and its kernels", {
  s <- suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1")))
  out <- capture.output(print(s))
  line <- grep("CPU threads", out, value = TRUE)
  expect_length(line, 1)
  expect_match(line, "[0-9]+ per replica \\([0-9]+ cores? usable / 2 replicas on this host\\)")
  expect_match(line, mirrored:::cpp_cpu_thread_plan(0L, 1L)$kernels, fixed = TRUE)
  old <- options(mirrored.cpu_threads = 3)
  on.exit(options(old))
  expect_match(grep("CPU threads", capture.output(print(s)), value = TRUE),
               "3 per replica \\(options\\(mirrored.cpu_threads\\)\\)")
})
