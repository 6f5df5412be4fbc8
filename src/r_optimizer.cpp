// Glue for the update pipeline (issue 13): optimizer extras, learning rate
// schedules (evaluated by the core: R calls it for display), and the end of
// fit()'s finalize_variable_values.
#include "r_optimizer.h"

#include <string>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

namespace mr_glue {

namespace {
double num(const Rcpp::List& l, const char* key, double fallback) {
  return l.containsElementNamed(key) && !Rf_isNull(l[key]) ? Rcpp::as<double>(l[key]) : fallback;
}
bool flag(const Rcpp::List& l, const char* key, bool fallback) {
  return l.containsElementNamed(key) && !Rf_isNull(l[key]) ? Rcpp::as<bool>(l[key]) : fallback;
}
}  // namespace

mr::LrSchedule lr_schedule_from_r(const Rcpp::List& spec) {
  mr::LrSchedule s;
  s.kind = mr::lr_schedule_kind(Rcpp::as<std::string>(spec["kind"]));
  s.initial_learning_rate = num(spec, "initial_learning_rate", 0.0);
  s.decay_steps = num(spec, "decay_steps", 1.0);
  s.decay_rate = num(spec, "decay_rate", 0.0);
  s.staircase = flag(spec, "staircase", false);
  if (spec.containsElementNamed("boundaries"))
    s.boundaries = Rcpp::as<std::vector<double>>(spec["boundaries"]);
  if (spec.containsElementNamed("values")) s.values = Rcpp::as<std::vector<double>>(spec["values"]);
  s.end_learning_rate = num(spec, "end_learning_rate", 0.0001);
  s.power = num(spec, "power", 1.0);
  s.cycle = flag(spec, "cycle", false);
  s.alpha = num(spec, "alpha", 0.0);
  s.has_warmup = spec.containsElementNamed("warmup_target") && !Rf_isNull(spec["warmup_target"]);
  s.warmup_target = num(spec, "warmup_target", 0.0);
  s.warmup_steps = num(spec, "warmup_steps", 0.0);
  s.t_mul = num(spec, "t_mul", 2.0);
  s.m_mul = num(spec, "m_mul", 1.0);
  mr::validate(s);
  return s;
}

void optimizer_extras_from_r(const Rcpp::List& spec, mr::OptimizerConfig& o) {
  o.rho_adadelta = num(spec, "rho_adadelta", o.rho_adadelta);
  o.initial_accumulator_value = num(spec, "initial_accumulator_value", 0.1);
  o.learning_rate_power = num(spec, "learning_rate_power", -0.5);
  o.l1 = num(spec, "l1_regularization_strength", 0.0);
  o.l2 = num(spec, "l2_regularization_strength", 0.0);
  o.l2_shrinkage = num(spec, "l2_shrinkage_regularization_strength", 0.0);
  o.beta = num(spec, "beta", 0.0);
  o.clipnorm = num(spec, "clipnorm", 0.0);
  o.clipvalue = num(spec, "clipvalue", 0.0);
  o.global_clipnorm = num(spec, "global_clipnorm", 0.0);
  o.use_ema = flag(spec, "use_ema", false);
  o.ema_momentum = num(spec, "ema_momentum", 0.99);
  o.ema_overwrite_frequency = static_cast<int64_t>(num(spec, "ema_overwrite_frequency", 0.0));
  o.gradient_accumulation_steps =
      static_cast<int64_t>(num(spec, "gradient_accumulation_steps", 0.0));
  if (spec.containsElementNamed("schedule") && !Rf_isNull(spec["schedule"]))
    o.schedule = lr_schedule_from_r(Rcpp::as<Rcpp::List>(spec["schedule"]));
}

}  // namespace mr_glue

// The learning rate of `schedule` (a spec list) at each of `steps`.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_lr_schedule_values(Rcpp::List schedule, Rcpp::NumericVector steps) {
  return guarded([&] {
    const mr::LrSchedule s = mr_glue::lr_schedule_from_r(schedule);
    Rcpp::NumericVector out(steps.size());
    for (R_xlen_t i = 0; i < steps.size(); ++i)
      out[i] = mr::lr_schedule_value(s, static_cast<int64_t>(steps[i]));
    return out;
  });
}

// The learning rate the next update uses (a schedule's value at the iteration).
// [[Rcpp::export]]
double cpp_model_current_learning_rate(SEXP ptr) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    MR_CHECK(m->compiled(), value, "the model is not compiled");
    return mr::current_learning_rate(m->config().optimizer, m->iterations());
  });
}

// Keras' finalize_variable_values at the end of fit() (EMA weights).
// [[Rcpp::export]]
void cpp_model_finalize_optimizer(SEXP ptr) {
  guarded([&] { Rcpp::XPtr<mr::Model>(ptr)->finalize_optimizer(); });
}
