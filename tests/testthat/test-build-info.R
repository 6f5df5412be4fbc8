test_that("the build info names cuDNN as it names CUDA and NCCL", {
  expect_true(is.logical(built_with_cudnn()) && length(built_with_cudnn()) == 1L)
  # cuDNN needs the CUDA backend.
  if (!built_with_cuda()) expect_false(built_with_cudnn())
  info <- mirrored:::cpp_build_info()
  expect_identical(info$cudnn, built_with_cudnn())
  if (built_with_cudnn()) {
    expect_match(info$cudnn_version, "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  } else {
    expect_identical(info$cudnn_version, "")
  }
})
