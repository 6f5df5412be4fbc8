// Glue for mixed precision (issue 14, i14-mpcore): the loss scale's compile
// settings and state (Keras 3's LossScaleOptimizer), and compile()'s note on
// how the CPU computes mixed policies. Layers' dtype policies travel in their
// Keras configs ("dtype"; nn/dtype_policy.h): no glue of their own.
#include "r_mixed_precision.h"

#include <Rcpp.h>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

namespace mr_glue {

void loss_scale_from_r(const Rcpp::List& spec, mr::LossScaleConfig& c) {
  if (!spec.containsElementNamed("loss_scale")) return;
  const SEXP ls = spec["loss_scale"];
  if (Rf_isNull(ls)) return;
  const Rcpp::List l(ls);
  c.dynamic = true;
  c.initial_scale = Rcpp::as<double>(l["initial_scale"]);
  c.dynamic_growth_steps = static_cast<int64_t>(Rcpp::as<double>(l["dynamic_growth_steps"]));
}

}  // namespace mr_glue

// list(scale, step_counter, skipped, last_skipped): the loss scale after the
// last finished step (Keras' dynamic_scale and step_counter), the steps
// skipped for non-finite gradients since compile(), and whether the last
// training step was one of them.
// [[Rcpp::export]]
Rcpp::List cpp_model_loss_scale_state(SEXP ptr) {
  return guarded([&] {
    const mr::LossScaleState& s = Rcpp::XPtr<mr::Model>(ptr)->loss_scale_state();
    return Rcpp::List::create(Rcpp::Named("scale") = static_cast<double>(s.scale),
                              Rcpp::Named("step_counter") = static_cast<double>(s.step_counter),
                              Rcpp::Named("skipped") = static_cast<double>(s.skipped),
                              Rcpp::Named("last_skipped") = s.last_skipped);
  });
}

// Sets the loss scale's state (loading a saved LossScaleOptimizer).
// [[Rcpp::export]]
void cpp_model_set_loss_scale_state(SEXP ptr, double scale, double step_counter) {
  guarded([&] {
    Rcpp::XPtr<mr::Model>(ptr)->set_loss_scale_state(static_cast<float>(scale),
                                                     static_cast<int64_t>(step_counter));
  });
}

// compile()'s one-time note on mixed precision ("" when there is none).
// [[Rcpp::export]]
std::string cpp_model_precision_note(SEXP ptr) {
  return guarded([&] { return Rcpp::XPtr<mr::Model>(ptr)->precision_note(); });
}
