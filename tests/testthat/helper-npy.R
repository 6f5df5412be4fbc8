# The bytes of a .npy file holding `x` ("|u1" bytes or "<i8" int64), C order.
npy_bytes <- function(x, descr = "|u1") {
  shape <- paste0("(", paste(dim(x) %||% length(x), collapse = ", "), if (length(dim(x)) <= 1) ",", ")")
  h <- sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
  h <- paste0(h, strrep(" ", 63 - (10 + nchar(h)) %% 64), "\n")
  d <- dim(x) %||% length(x)
  v <- if (length(d) > 1) as.vector(aperm(x, rev(seq_along(d)))) else as.vector(x)
  body <- if (descr == "|u1") as.raw(v) else writeBin(as.integer(rep(v, each = 2) * c(1, 0)), raw(), size = 4, endian = "little")
  c(as.raw(c(0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0)), writeBin(nchar(h), raw(), size = 2, endian = "little"),
    charToRaw(h), body)
}
