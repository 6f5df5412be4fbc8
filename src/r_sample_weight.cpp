// Glue for class_weight: wraps a batch source (arrays or a dataset) so that
// each batch carries the per-sample weights of its targets' classes
// (data/class_weight_source.h).
#include <Rcpp.h>

#include <memory>

#include "data/class_weight_source.h"
#include "r_glue.h"

using mr_glue::guarded;

// `weights[c]`: class c's weight (R has checked the names and values);
// `parts`: components of the inner batches (inputs and targets).
// [[Rcpp::export]]
SEXP cpp_class_weight_source(SEXP source, double parts, std::vector<double> weights,
                             std::string arg) {
  return guarded([&]() -> SEXP {
    Rcpp::XPtr<std::shared_ptr<mr::BatchSource>> inner(source);
    MR_CHECK(inner.get() != nullptr && *inner != nullptr, internal, "empty batch source");
    std::vector<float> w(weights.begin(), weights.end());
    auto out =
        std::make_unique<std::shared_ptr<mr::BatchSource>>(std::make_shared<mr::ClassWeightSource>(
            *inner, static_cast<size_t>(parts), std::move(w), arg));
    return Rcpp::XPtr<std::shared_ptr<mr::BatchSource>>(out.release(), true);
  });
}
