# keras3's pad_sequences(): lists of sequences to one matrix, in R (a
# preprocessing step before the data reaches the core).

#' Pad sequences to the same length
#'
#' keras3's `pad_sequences()`: a list of sequences (numeric vectors, e.g.
#' token ids) becomes a matrix with one row per sequence and `maxlen`
#' columns. Shorter sequences are padded with `value`, before them
#' (`padding = "pre"`) or after (`"post"`); longer ones lose their first
#' (`truncating = "pre"`) or last (`"post"`) entries.
#'
#' @param sequences A list of numeric vectors.
#' @param maxlen The length of every row; `NULL`: the longest sequence's.
#' @param dtype `"int32"`/`"int64"` (an integer matrix) or `"float32"`/
#'   `"float64"` (a double matrix).
#' @param padding,truncating `"pre"` or `"post"`.
#' @param value The padding value.
#' @return A matrix of `length(sequences)` rows and `maxlen` columns.
#' @examples
#' pad_sequences(list(1:3, 4:5, 6L))
#' pad_sequences(list(1:3, 4:5, 6L), maxlen = 2, padding = "post", truncating = "post")
#' @export
pad_sequences <- function(sequences, maxlen = NULL, dtype = "int32", padding = "pre",
                          truncating = "pre", value = 0) {
  call <- sys.call()
  if (!is.list(sequences) || !all(vapply(sequences, function(s) (is.numeric(s) || is.logical(s)) && is.null(dim(s)), logical(1)))) {
    abort_value("{.arg sequences} must be a list of numeric vectors, not {describe(sequences)}.", call = call)
  }
  lens <- lengths(sequences)
  maxlen <- if (is.null(maxlen)) (if (length(lens)) max(lens) else 0L) else check_int(maxlen, "maxlen", min = 0, call = call)
  if (!(is.character(dtype) && length(dtype) == 1 && dtype %in% c("int32", "int64", "float32", "float64"))) {
    abort_value("{.arg dtype} must be one of {.val {c('int32', 'int64', 'float32', 'float64')}}, not {describe(dtype)}.",
                call = call)
  }
  for (arg in c("padding", "truncating")) {
    v <- get(arg)
    if (!(is.character(v) && length(v) == 1 && v %in% c("pre", "post"))) {
      abort_value("{.arg {arg}} must be {.val pre} or {.val post}, not {describe(v)}.", call = call)
    }
  }
  value <- check_num(value, "value", call = call)
  integer_out <- dtype %in% c("int32", "int64")
  out <- matrix(if (integer_out) as.integer(value) else as.double(value), length(sequences), maxlen)
  for (i in seq_along(sequences)) {
    s <- sequences[[i]]
    if (anyNA(s)) abort_value("{.arg sequences[[{i}]]} has NA values.", call = call)
    if (length(s) > maxlen) s <- if (truncating == "pre") utils::tail(s, maxlen) else utils::head(s, maxlen)
    if (!length(s)) next
    cols <- if (padding == "pre") seq.int(maxlen - length(s) + 1L, maxlen) else seq_along(s)
    out[i, cols] <- if (integer_out) as.integer(s) else as.double(s)
  }
  out
}
