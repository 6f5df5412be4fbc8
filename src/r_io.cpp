// Glue for file readers.
#include <Rcpp.h>

#include "io/idx.h"
#include "r_glue.h"

// An IDX file as an R integer array of the same dimensions (element
// [i, r, c] of an MNIST image file is pixel (r, c) of image i).
// [[Rcpp::export]]
SEXP cpp_read_idx(std::string path) {
  return mr_glue::guarded([&]() -> SEXP {
    const mr::IdxArray a = mr::read_idx(path);
    int64_t total = 1;
    for (int64_t d : a.dims) total *= d;
    Rcpp::IntegerVector out(static_cast<R_xlen_t>(total));
    // Row-major file order to R's column-major order.
    mr_glue::row_major_walk(a.dims, [&](int64_t rm, int64_t cm) {
      out[static_cast<R_xlen_t>(cm)] = a.data[static_cast<size_t>(rm)];
    });
    const size_t r = a.dims.size();
    if (r >= 2) {
      Rcpp::IntegerVector dim(r);
      for (size_t k = 0; k < r; ++k) dim[static_cast<R_xlen_t>(k)] = static_cast<int>(a.dims[k]);
      out.attr("dim") = dim;
    }
    return out;
  });
}
