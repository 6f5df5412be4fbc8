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
Rcpp::List cpp_model_input_pipeline(SEXP ptr) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    return Rcpp::List::create(Rcpp::Named("mode") = m->device_input_mode(),
                              Rcpp::Named("device_input") = m->device_input_active(),
                              Rcpp::Named("staged") = static_cast<double>(m->staged_inputs()),
                              Rcpp::Named("taken") = static_cast<double>(m->taken_inputs()));
  });
}
