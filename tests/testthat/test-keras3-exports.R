# Every export of keras3 (keras3-exports.tsv, written from rstudio/keras3's
# NAMESPACE and R sources by tools/keras3-exports.R) exists in mirrored:
# implemented, or a not-yet function with keras3's arguments whose error is
# classed and says what to use instead (R/not-yet.R).

keras3_exports <- function() {
  utils::read.delim(test_path("keras3-exports.tsv"), comment.char = "#", quote = "",
                    stringsAsFactors = FALSE, colClasses = "character", na.strings = character())
}

not_yet_names <- function() {
  vapply(mirrored:::not_yet_rows(), `[[`, "", "name")
}

test_that("every keras3 export exists in mirrored", {
  k3 <- keras3_exports()
  expect_equal(nrow(k3), 792)
  mine <- getNamespaceExports("mirrored")
  missing <- setdiff(k3$name, mine)
  expect(length(missing) == 0,
         paste("keras3 exports missing from mirrored:", paste(missing, collapse = ", ")))
  # The table lists only what mirrored lacks: an implemented function leaves it.
  ny <- not_yet_names()
  expect_false(anyDuplicated(ny) > 0)
  expect_setequal(intersect(ny, k3$name), ny)
})

test_that("not-yet functions take keras3's arguments", {
  k3 <- keras3_exports()
  ns <- asNamespace("mirrored")
  for (r in mirrored:::not_yet_rows()) {
    f <- get(r$name, envir = ns)
    k <- k3[k3$name == r$name, ]
    if (identical(r$args, "<object>")) {
      expect_s3_class(f, "mirrored_not_yet_object")
      next
    }
    expect_true(is.function(f), info = r$name)
    if (k$kind == "function")
      expect_identical(names(formals(f)), names(formals(eval(parse(
        text = paste0("function(", k$arguments, ") NULL"))[[1]]))), info = r$name)
  }
})

test_that("every not-yet function raises a classed error naming itself and what to do", {
  # What each family's advice says (R/not-yet.R), and the overrides' "Use".
  says <- c(surface = "API surface", recurrent = "Recurrent networks", text = "Text data",
            images = "Image files", monitoring = "TensorBoard", datasets = "downloads nothing",
            python = "without Python", later = "plan")
  instead <- names(mirrored:::not_yet_instead)
  for (r in mirrored:::not_yet_rows()) {
    f <- get(r$name, envir = asNamespace("mirrored"))
    err <- tryCatch(if (is.function(f)) f() else f$anything, error = function(e) e)
    expect_s3_class(err, "mirrored_not_yet_error")
    expect_s3_class(err, "mirrored_value_error")
    msg <- conditionMessage(err)
    expect_match(msg, r$name, fixed = TRUE, info = r$name)
    expect_match(msg, "not implemented in mirrored yet", fixed = TRUE, info = r$name)
    advice <- if (r$name %in% instead) "Use|exist|downloads nothing" else says[[r$family]]
    expect_true(grepl(advice, msg), info = msg)
  }
})

test_that("a keras3 script meets the first missing function, with keras3's arguments", {
  # In a pipe, the first missing layer raises (R alone would name the last).
  err <- tryCatch(
    keras_input(shape = c(10, 4)) |> layer_lstm(units = 8, return_sequences = TRUE) |>
      layer_dense(1),
    error = function(e) e)
  expect_s3_class(err, "mirrored_not_yet_error")
  expect_match(conditionMessage(err), "layer_lstm()", fixed = TRUE)
  expect_match(conditionMessage(err), "Recurrent networks", fixed = TRUE)
  expect_identical(deparse(conditionCall(err)[[1]]), "layer_lstm")
  # An argument keras3's signature does not take is R's unused-argument error, as in keras3.
  expect_error(layer_lstm(units = 8, no_such_argument = 1, ), class = "mirrored_not_yet_error")
  expect_error(timeseries_dataset_from_array(1:3, NULL, 2, no_such_argument = 1), "unused argument")
  # Advice names mirrored's alternative where there is one.
  expect_match(tryCatch(dataset_fashion_mnist(), error = conditionMessage), "dataset_mnist_sample()",
               fixed = TRUE)
})

test_that("keras3's module object and constants raise instead of R plumbing", {
  for (expr in list(quote(keras$layers$Dense(3)), quote(keras()), quote(keras[["ops"]]),
                    quote(newaxis[1]))) {
    err <- tryCatch(eval(expr), error = function(e) e)
    expect_s3_class(err, "mirrored_not_yet_error")
    expect_false(grepl("not subsettable|non-function", conditionMessage(err)))
  }
  expect_output(print(keras), "not implemented in mirrored yet")
})

test_that("the assignment pipe is magrittr's, as keras3's", {
  x <- c(4, 9)
  x %<>% sqrt
  expect_equal(x, c(2, 3))
})
