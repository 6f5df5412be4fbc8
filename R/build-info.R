#' What this build of mirrored can use
#'
#' `built_with_cuda()`, `built_with_nccl()`, `built_with_cudnn()` and
#' `built_with_gloo()` tell whether the package was compiled with the CUDA
#' backend, with NCCL, with cuDNN and with Gloo (configure finds them at
#' install time; see the package's `configure` for `CUDA_HOME`,
#' `MIRRORED_CUDA`, `NCCL_HOME`, `CUDNN_HOME`, `MIRRORED_CUDNN`, `GLOO_HOME`
#' and `MIRRORED_GLOO`). With cuDNN, GPU convolutions run through it; without,
#' as im2col and cuBLAS. Gloo carries the all-reduce between the CPU
#' processes of a [multi_worker_mirrored_strategy()]. `cuda_device_count()` is the number of
#' CUDA GPUs this process can see: 0 in a CPU-only build and on machines
#' without a driver or a GPU. `cuda_is_available()` is `TRUE` when the package
#' was built with CUDA and at least one GPU is visible.
#'
#' @return `built_with_cuda()`, `built_with_nccl()`, `built_with_cudnn()`, `built_with_gloo()` and
#'   `cuda_is_available()` return a single logical; `cuda_device_count()` a single integer.
#' @examples
#' built_with_cuda()
#' built_with_nccl()
#' built_with_cudnn()
#' built_with_gloo()
#' cuda_device_count()
#' if (cuda_is_available()) {
#'   message("training can run on ", cuda_device_count(), " GPU(s)")
#' }
#' @name build-info
NULL

#' @rdname build-info
#' @family distribution
#' @seealso [list_devices()], [mirrored_strategy()]
#' @export
built_with_cuda <- function() {
  cpp_built_with_cuda()
}

#' @rdname build-info
#' @export
built_with_nccl <- function() {
  cpp_built_with_nccl()
}

#' @rdname build-info
#' @export
built_with_cudnn <- function() {
  cpp_built_with_cudnn()
}

#' @rdname build-info
#' @export
built_with_gloo <- function() {
  cpp_built_with_gloo()
}

#' @rdname build-info
#' @export
cuda_device_count <- function() {
  with_core(cpp_cuda_device_count())
}

#' @rdname build-info
#' @export
cuda_is_available <- function() {
  built_with_cuda() && cuda_device_count() >= 1L
}
