// Glue for .npz archives (dataset_mnist()).
#include <Rcpp.h>

#include "io/npz.h"
#include "r_glue.h"

// The members of an .npz archive as a named list of R integer arrays (uint8
// and int64 values; int64 outside R's integer range is refused).
// [[Rcpp::export]]
Rcpp::List cpp_read_npz(std::string path) {
  return mr_glue::guarded([&] {
    const auto members = mr::read_npz(path);
    Rcpp::List out;
    std::vector<std::string> names;
    for (const auto& kv : members) {
      const mr::NpyArray& a = kv.second;
      Rcpp::IntegerVector v(static_cast<R_xlen_t>(a.size()));
      int* o = v.begin();
      const std::vector<int64_t> dims = a.dims.empty() ? std::vector<int64_t>{1} : a.dims;
      mr_glue::row_major_walk(dims, [&](int64_t rm, int64_t cm) {
        if (a.is_int64) {
          const int64_t x = a.i64[static_cast<size_t>(rm)];
          MR_CHECK(x > INT32_MIN && x <= INT32_MAX, io, "'", path, "' member '", kv.first,
                   "' holds ", x, ", outside R's integer range");
          o[cm] = static_cast<int>(x);
        } else {
          o[cm] = a.u8[static_cast<size_t>(rm)];
        }
      });
      if (a.dims.size() >= 2) {
        Rcpp::IntegerVector dim(a.dims.begin(), a.dims.end());
        v.attr("dim") = dim;
      }
      out.push_back(v);
      names.push_back(kv.first);
    }
    out.attr("names") = Rcpp::wrap(names);
    return out;
  });
}
