// Glue: JSON values (mr::Json, nlohmann's ordered_json) <-> R values, for
// config.json / metadata.json and every other glue file that passes JSON.
#include <Rcpp.h>

#include <cstdint>
#include <string>

#include "core/json.h"
#include "r_glue.h"

namespace mr_glue {

namespace {

mr::Json scalar_of(SEXP x, R_xlen_t i) {
  switch (TYPEOF(x)) {
    case LGLSXP:
      return LOGICAL(x)[i] == NA_LOGICAL ? mr::Json() : mr::Json(LOGICAL(x)[i] != 0);
    case INTSXP:
      return INTEGER(x)[i] == NA_INTEGER ? mr::Json() : mr::Json(int64_t{INTEGER(x)[i]});
    case REALSXP:
      return ISNA(REAL(x)[i]) ? mr::Json() : mr::Json(REAL(x)[i]);
    case STRSXP:
      return STRING_ELT(x, i) == NA_STRING
                 ? mr::Json()
                 : mr::Json(std::string(Rf_translateCharUTF8(STRING_ELT(x, i))));
    default:
      mr::fail(mr::ErrorKind::value, "cannot write an R value of type ", Rf_type2char(TYPEOF(x)),
               " as JSON");
  }
}

mr::Json from_r(SEXP x, int depth) {
  MR_CHECK(depth < 256, value, "R value nested too deeply to write as JSON");
  if (Rf_isNull(x)) return mr::Json();
  const R_xlen_t n = Rf_xlength(x);
  if (TYPEOF(x) == VECSXP) {
    SEXP names = Rf_getAttrib(x, R_NamesSymbol);
    if (!Rf_isNull(names)) {
      mr::Json obj = mr::Json::object();
      for (R_xlen_t i = 0; i < n; ++i) {
        const std::string key = Rf_translateCharUTF8(STRING_ELT(names, i));
        MR_CHECK(!key.empty(), value,
                 "a list written as a JSON object needs a name for every element");
        obj[key] = from_r(VECTOR_ELT(x, i), depth + 1);  // a repeated name: the last one wins
      }
      return obj;
    }
    mr::Json arr = mr::Json::array();
    for (R_xlen_t i = 0; i < n; ++i) arr.push_back(from_r(VECTOR_ELT(x, i), depth + 1));
    return arr;
  }
  if (n == 1 && !Rf_inherits(x, "AsIs")) return scalar_of(x, 0);
  mr::Json arr = mr::Json::array();
  for (R_xlen_t i = 0; i < n; ++i) arr.push_back(scalar_of(x, i));
  return arr;
}

}  // namespace

SEXP json_to_r(const mr::Json& v) {
  switch (v.type()) {
    case mr::Json::value_t::null:
      return R_NilValue;
    case mr::Json::value_t::boolean:
      return Rcpp::wrap(v.get<bool>());
    case mr::Json::value_t::number_integer: {
      const int64_t i = v.get<int64_t>();
      // -2^31 is R's NA_integer_: it, and what lies beyond int32, stays a double.
      if (i >= -2147483647LL && i <= 2147483647LL) return Rcpp::wrap(static_cast<int>(i));
      return Rcpp::wrap(static_cast<double>(i));
    }
    case mr::Json::value_t::number_unsigned: {
      const uint64_t u = v.get<uint64_t>();
      if (u <= 2147483647ULL) return Rcpp::wrap(static_cast<int>(u));
      return Rcpp::wrap(static_cast<double>(u));
    }
    case mr::Json::value_t::number_float:
      return Rcpp::wrap(v.get<double>());
    case mr::Json::value_t::string:
      return Rcpp::wrap(Rcpp::String(v.get_ref<const std::string&>(), CE_UTF8));
    case mr::Json::value_t::array: {
      Rcpp::List out(v.size());
      R_xlen_t i = 0;
      for (const mr::Json& x : v) out[i++] = json_to_r(x);
      return out;
    }
    case mr::Json::value_t::object: {
      Rcpp::List out(v.size());
      Rcpp::CharacterVector names(v.size());
      R_xlen_t i = 0;
      for (const auto& m : v.items()) {
        out[i] = json_to_r(m.value());
        names[i] = Rcpp::String(m.key(), CE_UTF8);
        ++i;
      }
      out.attr("names") = names;
      return out;
    }
    case mr::Json::value_t::binary:
    case mr::Json::value_t::discarded:
      break;
  }
  mr::fail(mr::ErrorKind::internal, "cannot convert a JSON value of type ", v.type_name(), " to R");
}

mr::Json json_from_r(SEXP x) { return from_r(x, 0); }

}  // namespace mr_glue
