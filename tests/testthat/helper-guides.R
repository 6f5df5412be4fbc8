# Helpers for the test-guide-*.R files, which run keras3's guides and
# examples (their R chunks as written) with mirrored in place of keras3.
# There is no network: data the guides download is replaced by generated
# data of the same shapes and types, or by the MNIST digits mirrored ships.

# Write an integer array (n x ...) or vector as a gzip IDX file (the MNIST
# format: big-endian magic and dims, then the bytes in row-major order).
guide_write_idx <- function(x, path) {
  d <- if (is.null(dim(x))) length(x) else dim(x)
  con <- gzfile(path, "wb")
  on.exit(close(con))
  magic <- if (length(d) == 1L) 2049L else 2051L
  writeBin(as.integer(magic), con, size = 4, endian = "big")
  writeBin(as.integer(d), con, size = 4, endian = "big")
  bytes <- if (length(d) == 1L) x else aperm(x, rev(seq_along(d)))
  writeBin(as.raw(as.vector(bytes)), con)
}

# A directory with MNIST IDX files holding the first n_train shipped
# training digits and the first n_test test digits, so that the guides'
# own `dataset_mnist()` calls find them (via options(mirrored.datasets_dir)).
guide_mnist_dir <- function(n_train = 2000, n_test = 1000) {
  dir <- file.path(tempdir(), sprintf("guide-mnist-%d-%d", n_train, n_test))
  if (file.exists(file.path(dir, "t10k-labels-idx1-ubyte.gz"))) return(dir)
  dir.create(dir, showWarnings = FALSE, recursive = TRUE)
  m <- guide_read_mnist_sample()
  tr <- seq_len(n_train)
  te <- seq_len(n_test)
  guide_write_idx(m$train$x[tr, , , drop = FALSE], file.path(dir, "train-images-idx3-ubyte.gz"))
  guide_write_idx(m$train$y[tr], file.path(dir, "train-labels-idx1-ubyte.gz"))
  guide_write_idx(m$test$x[te, , , drop = FALSE], file.path(dir, "t10k-images-idx3-ubyte.gz"))
  guide_write_idx(m$test$y[te], file.path(dir, "t10k-labels-idx1-ubyte.gz"))
  dir
}

local_guide_mnist <- function(n_train = 2000, n_test = 1000, .local_envir = parent.frame()) {
  withr::local_options(mirrored.datasets_dir = guide_mnist_dir(n_train, n_test),
                       .local_envir = .local_envir)
}

# A gzip IDX file as an integer array (base R, so that the data does not
# depend on the installed package's files).
guide_read_idx <- function(path) {
  con <- gzfile(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "integer", 1, size = 4, endian = "big")
  nd <- magic %% 256L
  d <- readBin(con, "integer", nd, size = 4, endian = "big")
  x <- as.integer(readBin(con, "raw", prod(d)))
  if (nd == 1L) return(x)
  aperm(array(x, rev(d)), rev(seq_len(nd)))
}

# The 10,000 shipped training digits and the MNIST test set, from
# /work/shared/data/mnist when present, else from the installed package.
guide_read_mnist_sample <- function() {
  dir <- "/work/shared/data/mnist"
  if (!file.exists(file.path(dir, "sample10k-labels-idx1-ubyte.gz")))
    dir <- system.file("extdata", "mnist", package = "mirrored")
  part <- function(prefix) list(
    x = guide_read_idx(file.path(dir, paste0(prefix, "-images-idx3-ubyte.gz"))),
    y = guide_read_idx(file.path(dir, paste0(prefix, "-labels-idx1-ubyte.gz"))))
  list(train = part("sample10k"), test = part("t10k"))
}

# The dimensions of a keras_shape as an integer vector, NA for None.
guide_dims <- function(s) vapply(unclass(s), function(d) if (is.null(d)) NA_integer_ else as.integer(d), 1L)
