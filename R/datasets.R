#' MNIST digits shipped with mirrored
#'
#' Real MNIST digits that need no network: 10,000 training digits (taken
#' from MNIST's training set, none of them in the test set) and the
#' canonical 10,000-digit test set, in keras3's structure.
#'
#' @return `list(train = list(x, y), test = list(x, y))`: `x` an integer
#'   array `n x 28 x 28` of grey levels 0..255, `y` an integer vector of
#'   labels 0..9.
#' @family datasets
#' @seealso [keras_model()]
#' @examples
#' mnist <- dataset_mnist_sample()
#' dim(mnist$train$x)
#' table(mnist$test$y)
#' @export
dataset_mnist_sample <- function() {
  dir <- system.file("extdata", "mnist", package = "mirrored")
  if (!nzchar(dir)) abort_kind("io", "The bundled MNIST files are missing from the installed package.")
  part <- function(prefix) {
    x <- read_idx(file.path(dir, paste0(prefix, "-images-idx3-ubyte.gz")))
    y <- as.vector(read_idx(file.path(dir, paste0(prefix, "-labels-idx1-ubyte.gz"))))
    list(x = x, y = y)
  }
  list(train = part("sample10k"), test = part("t10k"))
}

# An IDX file (plain or gzip) as an integer array.
read_idx <- function(path) {
  check_string(path, "path")
  if (!file.exists(path)) abort_kind("io", "File {.file {path}} does not exist.")
  with_core(cpp_read_idx(normalizePath(path)))
}
