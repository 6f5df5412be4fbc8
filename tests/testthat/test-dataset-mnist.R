# dataset_mnist(): search order, file formats, download errors.

local_dirs <- function(env = parent.frame()) {
  root <- tempfile("mnist")
  dirs <- file.path(root, c("opt", "keras", "user"))
  for (d in dirs) dir.create(d, recursive = TRUE)
  dir.create(file.path(dirs[2], "datasets"))
  old_opt <- options(mirrored.datasets_dir = dirs[1], mirrored.mnist_url = paste0("file://", root, "/nothing.npz"))
  old_env <- Sys.getenv(c("KERAS_HOME", "R_USER_CACHE_DIR"), unset = NA)
  Sys.setenv(KERAS_HOME = dirs[2], R_USER_CACHE_DIR = dirs[3])
  withr_defer <- function() {
    options(old_opt)
    for (k in names(old_env)) if (is.na(old_env[[k]])) Sys.unsetenv(k) else do.call(Sys.setenv, as.list(old_env[k]))
    unlink(root, recursive = TRUE)
  }
  do.call(on.exit, list(substitute(withr_defer()), add = TRUE), envir = env)
  list(opt = dirs[1], keras = file.path(dirs[2], "datasets"), user = file.path(dirs[3], "R", "mirrored"))
}

copy_sample_as_idx <- function(dir) {
  src <- system.file("extdata", "mnist", package = "mirrored")
  dir.create(dir, recursive = TRUE, showWarnings = FALSE)
  file.copy(file.path(src, "sample10k-images-idx3-ubyte.gz"), file.path(dir, "train-images-idx3-ubyte.gz"))
  file.copy(file.path(src, "sample10k-labels-idx1-ubyte.gz"), file.path(dir, "train-labels-idx1-ubyte.gz"))
  file.copy(file.path(src, "t10k-images-idx3-ubyte.gz"), file.path(dir, "t10k-images-idx3-ubyte.gz"))
  file.copy(file.path(src, "t10k-labels-idx1-ubyte.gz"), file.path(dir, "t10k-labels-idx1-ubyte.gz"))
}

test_that("dataset_mnist reads IDX files from Keras' cache and errors clearly offline", {
  d <- local_dirs()
  expect_error(dataset_mnist(), "Could not download", class = "mirrored_download_error")
  expect_error(dataset_mnist(), class = "mirrored_io_error")
  copy_sample_as_idx(d$keras)
  m <- dataset_mnist()
  s <- dataset_mnist_sample()
  expect_identical(m, s)
  expect_identical(dim(m$train$x), c(10000L, 28L, 28L))
  expect_type(m$train$y, "integer")
})

test_that("dataset_mnist reads mnist.npz and refuses broken archives", {
  skip_if(!nzchar(Sys.which("zip")))
  d <- local_dirs()
  s <- dataset_mnist_sample()
  tmp <- tempfile("npz")
  dir.create(tmp)
  parts <- list(x_train = s$train$x[1:50, , ], y_train = s$train$y[1:50], x_test = s$test$x[1:20, , ],
                y_test = s$test$y[1:20])
  for (k in names(parts)) writeBin(npy_bytes(parts[[k]], if (startsWith(k, "y")) "<i8" else "|u1"), file.path(tmp, paste0(k, ".npy")))
  old <- setwd(tmp)
  utils::zip(file.path(d$opt, "mnist.npz"), paste0(names(parts), ".npy"), flags = "-q")
  setwd(old)
  m <- dataset_mnist()
  expect_identical(m$train$x, parts$x_train)
  expect_identical(m$train$y, parts$y_train)
  expect_identical(m$test$y, parts$y_test)
  writeBin(charToRaw("PK\003\004 broken"), file.path(d$opt, "mnist.npz"))
  expect_error(dataset_mnist(), class = "mirrored_io_error")
})

test_that("downloads are checked against their SHA-256", {
  root <- tempfile("download")
  dir.create(root)
  on.exit(unlink(root, recursive = TRUE), add = TRUE)
  src <- file.path(root, "abc.txt")
  writeBin(charToRaw("abc"), src)
  abc <- "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
  dest <- file.path(root, "out", "abc.txt")
  expect_identical(mirrored:::download_checked(paste0("file://", src), dest, abc), dest)
  expect_identical(readBin(dest, "raw", 10), charToRaw("abc"))
  wrong <- file.path(root, "out", "wrong.txt")
  expect_error(mirrored:::download_checked(paste0("file://", src), wrong, sub("^b", "0", abc)),
               "SHA-256", class = "mirrored_download_error")
  expect_false(file.exists(wrong))
})
