// Glue for keras3's random_* functions on R arrays (R/random.R): the core's
// counter-based draws (nn/random_draws.h). Seeds arrive as doubles holding
// whole numbers below 2^53 (R has no 64-bit integers).
#include <Rcpp.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/random_draws.h"
#include "r_glue.h"

using mr_glue::guarded;

namespace {

mr::RandomKind random_kind(const std::string& name) {
  if (name == "normal") return mr::RandomKind::normal;
  if (name == "uniform") return mr::RandomKind::uniform;
  if (name == "integer") return mr::RandomKind::integer;
  if (name == "truncated_normal") return mr::RandomKind::truncated_normal;
  if (name == "gamma") return mr::RandomKind::gamma;
  if (name == "beta") return mr::RandomKind::beta;
  if (name == "binomial") return mr::RandomKind::binomial;
  throw mr::Error(mr::ErrorKind::internal, "unknown random kind '" + name + "'");
}

uint64_t whole(double v, const char* what) {
  MR_CHECK(v >= 0 && v < 9007199254740992.0 && v == std::floor(v), internal, what, " ", v,
           " is not a whole number in 0..2^53");
  return static_cast<uint64_t>(v);
}

}  // namespace

// n draws of `kind` with parameters a, b (each of length 1 or n), from
// (seed, counter); float32 rounds every value to float.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_random_draws(std::string kind, double n, Rcpp::NumericVector a,
                                     Rcpp::NumericVector b, double seed, double counter,
                                     bool float32) {
  return guarded([&] {
    const auto count = static_cast<int64_t>(whole(n, "count"));
    MR_CHECK((a.size() == 1 || a.size() == count) && (b.size() == 1 || b.size() == count), internal,
             "cpp_random_draws: parameters of lengths ", a.size(), " and ", b.size(), " for ",
             count, " values");
    std::vector<double> out(static_cast<size_t>(count));
    mr::random_draws(random_kind(kind), count, a.begin(), a.size() == 1 ? 0 : 1, b.begin(),
                     b.size() == 1 ? 0 : 1, whole(seed, "seed"), whole(counter, "counter"),
                     out.data());
    if (float32)
      for (double& v : out) v = static_cast<double>(static_cast<float>(v));
    return Rcpp::NumericVector(out.begin(), out.end());
  });
}

// A random permutation of 1..n (1-based for R).
// [[Rcpp::export]]
Rcpp::IntegerVector cpp_random_permutation(double n, double seed, double counter) {
  return guarded([&] {
    const auto count = static_cast<int64_t>(whole(n, "count"));
    std::vector<int64_t> p(static_cast<size_t>(count));
    mr::random_permutation(count, whole(seed, "seed"), whole(counter, "counter"), p.data());
    Rcpp::IntegerVector out(static_cast<R_xlen_t>(count));
    for (int64_t i = 0; i < count; ++i) out[i] = static_cast<int>(p[static_cast<size_t>(i)] + 1);
    return out;
  });
}

// `logits`: rows x classes, row-major; returns rows x samples class indices
// (0-based), row-major.
// [[Rcpp::export]]
Rcpp::IntegerVector cpp_random_categorical(Rcpp::NumericVector logits, double rows, double classes,
                                           double samples, double seed, double counter) {
  return guarded([&] {
    const auto r = static_cast<int64_t>(whole(rows, "rows")),
               c = static_cast<int64_t>(whole(classes, "classes")),
               s = static_cast<int64_t>(whole(samples, "samples"));
    MR_CHECK(static_cast<int64_t>(logits.size()) == r * c, internal,
             "cpp_random_categorical: ", logits.size(), " logits for ", r, " x ", c);
    std::vector<int64_t> out(static_cast<size_t>(r * s));
    mr::random_categorical(logits.begin(), r, c, s, whole(seed, "seed"), whole(counter, "counter"),
                           out.data());
    return Rcpp::IntegerVector(out.begin(), out.end());
  });
}
