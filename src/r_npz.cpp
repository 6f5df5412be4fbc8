// Glue for .npz archives (dataset_mnist(), write_npz()).
#include <Rcpp.h>

#include <cstring>

#include "io/file_util.h"
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
      const std::vector<int64_t> dims = a.dims.empty() ? std::vector<int64_t>{1} : a.dims;
      SEXP v;
      if (mr::is_float(a.dtype)) {
        Rcpp::NumericVector d(static_cast<R_xlen_t>(a.size()));
        double* o = d.begin();
        mr_glue::row_major_walk(
            dims, [&](int64_t rm, int64_t cm) { o[cm] = a.f32[static_cast<size_t>(rm)]; });
        v = d;
      } else {
        Rcpp::IntegerVector iv(static_cast<R_xlen_t>(a.size()));
        int* o = iv.begin();
        mr_glue::row_major_walk(dims, [&](int64_t rm, int64_t cm) {
          if (a.dtype == mr::NpyDtype::i64) {
            const int64_t x = a.i64[static_cast<size_t>(rm)];
            MR_CHECK(x > INT32_MIN && x <= INT32_MAX, io, "'", path, "' member '", kv.first,
                     "' holds ", x, ", outside R's integer range");
            o[cm] = static_cast<int>(x);
          } else {
            o[cm] = a.u8[static_cast<size_t>(rm)];
          }
        });
        v = iv;
      }
      Rcpp::RObject obj(v);
      if (a.dims.size() >= 2) {
        Rcpp::IntegerVector dim(a.dims.begin(), a.dims.end());
        obj.attr("dim") = dim;
      }
      out.push_back(obj);
      names.push_back(kv.first);
    }
    out.attr("names") = Rcpp::wrap(names);
    return out;
  });
}

// Writes R arrays (checked by write_npz()) as an .npz archive, atomically:
// raw vectors as unsigned bytes, integers as int64, doubles as float64, each
// in C order with the array's dim (a vector: one dimension).
// [[Rcpp::export]]
void cpp_write_npz(std::string path, Rcpp::List arrays) {
  mr_glue::guarded([&] {
    const Rcpp::CharacterVector names = arrays.names();
    std::vector<mr::NpyMember> members;
    for (R_xlen_t i = 0; i < arrays.size(); ++i) {
      SEXP x = arrays[i];
      mr::NpyMember m;
      m.name = Rcpp::as<std::string>(names[i]);
      SEXP dim = Rf_getAttrib(x, R_DimSymbol);
      if (dim == R_NilValue) {
        m.dims = {static_cast<int64_t>(Rf_xlength(x))};
      } else {
        for (int d : Rcpp::IntegerVector(dim)) m.dims.push_back(d);
      }
      const size_t n = static_cast<size_t>(Rf_xlength(x));
      const int type = TYPEOF(x);
      m.dtype = type == RAWSXP   ? mr::NpyDtype::u8
                : type == INTSXP ? mr::NpyDtype::i64
                                 : mr::NpyDtype::f64;
      MR_CHECK(type == RAWSXP || type == INTSXP || type == REALSXP, internal,
               "write_npz(): unchecked type");
      m.data.resize(n * (type == RAWSXP ? 1 : 8));
      uint8_t* dst = m.data.data();
      mr_glue::row_major_walk(m.dims.empty() ? std::vector<int64_t>{1} : m.dims,
                              [&](int64_t rm, int64_t cm) {
                                if (type == RAWSXP) {
                                  dst[rm] = RAW(x)[cm];
                                } else if (type == INTSXP) {
                                  const int64_t v = INTEGER(x)[cm];
                                  std::memcpy(dst + 8 * rm, &v, 8);
                                } else {
                                  std::memcpy(dst + 8 * rm, &REAL(x)[cm], 8);
                                }
                              });
      members.push_back(std::move(m));
    }
    mr::write_file_atomic(path, mr::npz_bytes(members, "'" + path + "'"));
    return 0;
  });
}
