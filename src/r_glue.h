// Shared by the glue files: the one translation point from core errors to R
// conditions, conversions between R's column-major arrays and the core's
// row-major float buffers, and between R values and JSON.
#pragma once

#include <Rcpp.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "core/shape.h"
#include "dist/cluster_spec.h"  // Environment

namespace mr_glue {

// Runs `body`; an mr::Error becomes an R error whose message starts with
// "[mirrored:<kind>] ". R/errors.R turns that prefix into the condition class
// mirrored_<kind>_error (a subclass of mirrored_error).
template <typename F>
auto guarded(F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const mr::Error& e) {
    throw Rcpp::exception(
        (std::string("[mirrored:") + mr::kind_name(e.kind()) + "] " + e.what()).c_str(), false);
  }
}

// Visits the elements of a column-major array in row-major order: calls
// fn(row_major_index, column_major_index) for each.
template <typename Fn>
void row_major_walk(const std::vector<int64_t>& dims, Fn fn) {
  const size_t r = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  std::vector<int64_t> stride(r, 1);  // column-major strides
  for (size_t k = 1; k < r; ++k) stride[k] = stride[k - 1] * dims[k - 1];
  std::vector<int64_t> idx(r, 0);
  int64_t cm = 0;
  for (int64_t rm = 0; rm < total; ++rm) {
    fn(rm, cm);
    // Odometer over C order: the last index moves fastest.
    for (size_t k = r; k-- > 0;) {
      if (++idx[k] < dims[k]) {
        cm += stride[k];
        break;
      }
      cm -= stride[k] * (dims[k] - 1);
      idx[k] = 0;
    }
  }
}

// dims of an R array (a vector without dim counts as 1-D).
std::vector<int64_t> r_dims(SEXP x);

// An R numeric/integer/logical array with n = dims[0] samples to row-major
// float32 (n x prod(dims[-1])). NA or non-finite values throw mr::Error (value)
// naming `what`.
// finite_only: NA, NaN and Inf are errors (data); false lets NaN and Inf
// through (weights: Keras' set_weights() takes them, and a model whose weights
// are NaN then logs a NaN loss). NA of an integer or logical array is always
// an error.
std::vector<float> to_row_major(SEXP x, const std::string& what, bool finite_only = true);

// Row-major floats of `shape` (leading dim included) to an R double array.
Rcpp::NumericVector from_row_major(const float* data, const std::vector<int64_t>& shape);

// JSON <-> R (r_json.cpp). To R: object -> named list, array -> unnamed list,
// string -> character(1), integer literal -> integer (double beyond int32),
// float -> double, true/false -> logical(1), null -> NULL; no simplification,
// so a round trip keeps arrays of length 1 as arrays. From R: NULL -> null, a
// list with names -> object (a repeated name: the last one wins), without ->
// array; an atomic vector of length 1 -> a scalar unless it has class "AsIs"
// (I()), else an array; NA -> null. Other R types throw mr::Error (value).
SEXP json_to_r(const mr::Json& v);
mr::Json json_from_r(SEXP x);

// R's Sys.getenv() (a named character vector) as the core's environment
// (r_cluster.cpp); NA values and names are left out, an unnamed vector is an
// mr::Error (value).
mr::Environment environment_from_r(const Rcpp::CharacterVector& env);

}  // namespace mr_glue
