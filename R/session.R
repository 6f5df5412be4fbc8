#' Reset the state kept between models
#'
#' keras3's `clear_session()`: clears what Keras keeps in its global state.
#' Layer and model names start over (the next Dense layer is `"dense"`
#' again), and the dtype policy set by [config_set_dtype_policy()] goes back
#' to `"float32"` (Keras 3 keeps it in the same state). With `free_memory`,
#' R's garbage collector runs, which releases the native memory (device
#' buffers, thread teams) of models no longer referenced. Models that still
#' exist keep working.
#'
#' @param free_memory Whether to run the garbage collector.
#' @returns `NULL`, invisibly.
#' @family utilities
#' @examples
#' layer_dense(units = 2)$name
#' clear_session()
#' layer_dense(units = 2)$name
#' @export
clear_session <- function(free_memory = TRUE) {
  check_bool(free_memory, "free_memory")
  rm(list = ls(.names, all.names = TRUE), envir = .names)
  .dtype_policy_state$name <- "float32"
  if (free_memory) gc(verbose = FALSE)
  invisible(NULL)
}
