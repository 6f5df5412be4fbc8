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

#' The MNIST digits
#'
#' As keras3's `dataset_mnist()`: 60,000 training and 10,000 test images of
#' handwritten digits. The data is read from Keras' `mnist.npz` or from the
#' four IDX files (`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
#' `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`, optionally `.gz`),
#' looked for in this order:
#'
#' 1. `getOption("mirrored.datasets_dir")`, else the `MIRRORED_DATASETS_DIR`
#'    environment variable, when set;
#' 2. Keras' cache, `$KERAS_HOME/datasets` (default `~/.keras/datasets`), so
#'    an existing Keras download is reused;
#' 3. `tools::R_user_dir("mirrored", "cache")`.
#'
#' When none has it, Keras' `mnist.npz` is downloaded into the first of
#' these directories that is set (1, else 3) and its SHA-256 is checked; a
#' failed download (offline) or a wrong digest is a `mirrored_io_error` (of
#' class `mirrored_download_error` too). For examples that need no network,
#' see [dataset_mnist_sample()].
#'
#' @param path File name of the archive (relative to the directories above)
#'   or a path to it.
#' @param convert Accepted for compatibility with keras3 (the result is
#'   always R arrays).
#' @return `list(train = list(x, y), test = list(x, y))`: `x` an integer
#'   array `n x 28 x 28` of grey levels 0..255, `y` an integer vector of
#'   labels 0..9.
#' @family datasets
#' @examples
#' \dontrun{
#' c(c(x_train, y_train), c(x_test, y_test)) %<-% dataset_mnist()
#' dim(x_train)
#' }
#' @export
dataset_mnist <- function(path = "mnist.npz", convert = TRUE) {
  check_string(path, "path")
  dirs <- mnist_dirs()
  candidates <- if (file.exists(path)) path else file.path(unlist(dirs), path)
  for (f in candidates) {
    if (file.exists(f)) return(read_mnist_npz(f))
  }
  for (d in unlist(dirs)) {
    idx <- find_idx_files(d)
    if (!is.null(idx)) return(read_mnist_idx(idx))
  }
  target_dir <- dirs$option %||% dirs$user
  dest <- file.path(target_dir, basename(path))
  download_checked(getOption("mirrored.mnist_url", mnist_url), dest, mnist_sha256)
  read_mnist_npz(dest)
}

mnist_url <- "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
mnist_sha256 <- "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"

# The directories of dataset_mnist()'s search order (NULL entries when unset).
mnist_dirs <- function() {
  opt <- getOption("mirrored.datasets_dir")
  if (is.null(opt) && nzchar(Sys.getenv("MIRRORED_DATASETS_DIR"))) opt <- Sys.getenv("MIRRORED_DATASETS_DIR")
  keras_home <- Sys.getenv("KERAS_HOME")
  keras <- if (nzchar(keras_home)) file.path(keras_home, "datasets") else file.path(path.expand("~"), ".keras", "datasets")
  list(option = if (!is.null(opt)) path.expand(opt), keras = keras,
       user = tools::R_user_dir("mirrored", "cache"))
}

find_idx_files <- function(dir) {
  stems <- c(x_train = "train-images-idx3-ubyte", y_train = "train-labels-idx1-ubyte",
             x_test = "t10k-images-idx3-ubyte", y_test = "t10k-labels-idx1-ubyte")
  files <- vapply(stems, function(s) {
    f <- file.path(dir, c(s, paste0(s, ".gz"), sub("-(idx[13])-", ".\\1-", s)))
    f <- f[file.exists(f)]
    if (length(f)) f[1] else NA_character_
  }, character(1))
  if (anyNA(files)) NULL else as.list(files)
}

read_mnist_idx <- function(files) {
  list(train = list(x = read_idx(files$x_train), y = as.vector(read_idx(files$y_train))),
       test = list(x = read_idx(files$x_test), y = as.vector(read_idx(files$y_test))))
}

read_mnist_npz <- function(file) {
  m <- with_core(cpp_read_npz(normalizePath(file)))
  need <- c("x_train", "y_train", "x_test", "y_test")
  if (!all(need %in% names(m))) {
    abort_kind("io", "{.file {file}} lacks the arrays {.val {setdiff(need, names(m))}} of an MNIST archive.")
  }
  for (k in c("x_train", "x_test")) {
    if (length(dim(m[[k]])) != 3 || any(dim(m[[k]])[2:3] != 28)) {
      abort_kind("io", "{.file {file}}: {.field {k}} has shape ({paste(dim(m[[k]]), collapse = ', ')}), not (n, 28, 28).")
    }
  }
  list(train = list(x = m$x_train, y = as.vector(m$y_train)),
       test = list(x = m$x_test, y = as.vector(m$y_test)))
}

# Downloads `url` to `dest` (via a temporary file in the same directory)
# and checks its SHA-256; errors are mirrored_io_error / mirrored_download_error.
download_checked <- function(url, dest, sha256, call = sys.call(-1)) {
  cls <- c("mirrored_download_error", "mirrored_io_error", "mirrored_error")
  dir.create(dirname(dest), recursive = TRUE, showWarnings = FALSE)
  tmp <- tempfile("download-", tmpdir = dirname(dest))
  on.exit(unlink(tmp), add = TRUE)
  ok <- tryCatch(suppressWarnings(utils::download.file(url, tmp, mode = "wb", quiet = TRUE)) == 0,
                 error = function(e) FALSE)
  if (!ok || !file.exists(tmp)) {
    cli::cli_abort(c("Could not download {.url {url}} (offline?).",
                     i = "Put {.file {basename(dest)}} (or the four MNIST IDX files) in {.file {dirname(dest)}}, or set {.code options(mirrored.datasets_dir = )}; {.fn dataset_mnist_sample} needs no network."),
                   class = cls, call = call)
  }
  got <- digest::digest(file = tmp, algo = "sha256")
  if (!identical(got, sha256)) {
    cli::cli_abort("The download of {.url {url}} has SHA-256 {got}, not the expected {sha256}; it was discarded.",
                   class = cls, call = call)
  }
  if (!file.rename(tmp, dest)) abort_kind("io", "Could not move the download to {.file {dest}}.", call = call)
  invisible(dest)
}
