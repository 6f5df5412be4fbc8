#' mirrored: Keras-style neural networks trained natively on CPUs and GPUs
#'
#' `mirrored` gives R the API of keras3 and tfdatasets on a compiled C++
#' backend that owns one model replica per device.
#'
#' @keywords internal
#' @useDynLib mirrored, .registration = TRUE
#' @importFrom Rcpp sourceCpp
#' @importFrom R6 R6Class
#' @importFrom generics compile fit
#' @importFrom zeallot %<-%
"_PACKAGE"
