// Test hook of mixed precision (issue 14, i14-mpapi): an overflow injected
// into one replica's gradients, to show from R (tests, bench/mixed_precision)
// that the loss scale's all-reduced flag skips the same step on every replica.
#include <Rcpp.h>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

// Adds +Inf to replica `rank`'s gradients right after the all-reduce of
// training step `step` (1-based; once). See Model::inject_nonfinite_gradient.
// [[Rcpp::export]]
void cpp_model_inject_nonfinite_gradient(SEXP ptr, int rank, double step) {
  guarded([&] {
    Rcpp::XPtr<mr::Model>(ptr)->inject_nonfinite_gradient(rank, static_cast<int64_t>(step));
  });
}
