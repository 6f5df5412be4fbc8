#include "r_glue.h"

#include <algorithm>
#include <cmath>

namespace mr_glue {

std::vector<int64_t> r_dims(SEXP x) {
  SEXP dim = Rf_getAttrib(x, R_DimSymbol);
  std::vector<int64_t> d;
  if (Rf_isNull(dim)) {
    d.push_back(static_cast<int64_t>(Rf_xlength(x)));
  } else {
    for (R_xlen_t i = 0; i < Rf_xlength(dim); ++i) d.push_back(INTEGER(dim)[i]);
  }
  return d;
}

std::vector<float> to_row_major(SEXP x, const std::string& what) {
  const std::vector<int64_t> dims = r_dims(x);
  std::vector<float> out(static_cast<size_t>(Rf_xlength(x)));
  const int type = TYPEOF(x);
  if (type == REALSXP) {
    const double* v = REAL(x);
    row_major_walk(dims, [&](int64_t rm, int64_t cm) {
      const double d = v[cm];
      const auto f = static_cast<float>(d);
      // A finite double beyond float32's range becomes Inf: an error too.
      if (!std::isfinite(f))
        mr::fail(mr::ErrorKind::value, "`", what, "` must not contain NA, NaN or Inf (found ", d,
                 " at row ", cm % std::max<int64_t>(dims[0], 1) + 1,
                 std::isfinite(d) ? ", beyond the range of float32" : "", ")");
      out[static_cast<size_t>(rm)] = f;
    });
  } else if (type == INTSXP || type == LGLSXP) {
    const int* v = type == INTSXP ? INTEGER(x) : LOGICAL(x);
    row_major_walk(dims, [&](int64_t rm, int64_t cm) {
      if (v[cm] == NA_INTEGER)
        mr::fail(mr::ErrorKind::value, "`", what, "` must not contain NA (found at position ",
                 cm + 1, ")");
      out[static_cast<size_t>(rm)] = static_cast<float>(v[cm]);
    });
  } else {
    mr::fail(mr::ErrorKind::value, "`", what, "` must be a numeric, integer or logical array, not ",
             Rf_type2char(static_cast<SEXPTYPE>(type)));
  }
  return out;
}

Rcpp::NumericVector from_row_major(const float* data, const std::vector<int64_t>& shape) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  Rcpp::NumericVector out(static_cast<R_xlen_t>(total));
  double* o = out.begin();
  row_major_walk(shape, [&](int64_t rm, int64_t cm) { o[cm] = data[rm]; });
  if (shape.size() >= 2) {
    Rcpp::IntegerVector dim(shape.size());
    for (size_t k = 0; k < shape.size(); ++k) dim[k] = static_cast<int>(shape[k]);
    out.attr("dim") = dim;
  } else if (shape.size() == 1) {
    out.attr("dim") = Rcpp::IntegerVector::create(static_cast<int>(shape[0]));
  }
  return out;
}

}  // namespace mr_glue
