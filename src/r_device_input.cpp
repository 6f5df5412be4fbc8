// Glue for input staged ahead on the device (R/device-input.R): R reads
// options(mirrored.device_input) and shows what the core chose; the core
// decides and stages (train/device_input.h).
#include <Rcpp.h>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

// [[Rcpp::export]]
void cpp_model_set_device_input(SEXP ptr, int mode) {
  guarded([&] { Rcpp::XPtr<mr::Model>(ptr)->set_device_input(mode); });
}

// [[Rcpp::export]]
void cpp_model_set_resident_input(SEXP ptr, int mode, double budget) {
  // NA: the core's default. R clamps to 2^62 (R/device-input.R); the
  // conversion of a double beyond int64's range is undefined, so clamp here
  // as well (a negative budget stays invalid).
  const double cap = 4611686018427387904.0;  // 2^62
  int64_t bytes = -1;
  if (ISNAN(budget))
    bytes = mr::Model::kDefaultResidentBudget;
  else if (budget > cap)
    bytes = int64_t{1} << 62;
  else if (budget >= 0)
    bytes = static_cast<int64_t>(budget);
  guarded([&] { Rcpp::XPtr<mr::Model>(ptr)->set_resident_input(mode, bytes); });
}

// [[Rcpp::export]]
void cpp_model_release_resident_input(SEXP ptr) {
  guarded([&] { Rcpp::XPtr<mr::Model>(ptr)->release_resident_input(); });
}

// [[Rcpp::export]]
Rcpp::List cpp_model_input_pipeline(SEXP ptr) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    const char* path = "host";
    if (m->last_input_path() == mr::Model::InputPath::copy_lane) path = "copy lane";
    if (m->last_input_path() == mr::Model::InputPath::resident) path = "resident";
    return Rcpp::List::create(
        Rcpp::Named("path") = path, Rcpp::Named("mode") = m->device_input_mode(),
        Rcpp::Named("staged") = static_cast<double>(m->staged_inputs()),
        Rcpp::Named("taken") = static_cast<double>(m->taken_inputs()),
        Rcpp::Named("resident_mode") = m->resident_mode(),
        Rcpp::Named("resident_bytes") = static_cast<double>(m->resident_bytes()),
        Rcpp::Named("resident_budget") = static_cast<double>(m->resident_budget()),
        Rcpp::Named("gathered") = static_cast<double>(m->gathered_inputs()));
  });
}
