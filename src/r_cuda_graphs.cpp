// Glue for CUDA graphs of the training step (R/cuda-graphs.R): R reads
// options(mirrored.cuda_graphs) and displays the core's counters; the core
// decides which steps capture and replay (train/step_graphs.h).
#include <Rcpp.h>

#include "r_glue.h"
#include "train/model.h"

using mr_glue::guarded;

// [[Rcpp::export]]
void cpp_model_set_cuda_graphs(SEXP ptr, bool on) {
  guarded([&] { Rcpp::XPtr<mr::Model>(ptr)->set_cuda_graphs(on); });
}

// [[Rcpp::export]]
Rcpp::List cpp_model_cuda_graph_stats(SEXP ptr) {
  return guarded([&] {
    Rcpp::XPtr<mr::Model> m(ptr);
    const mr::StepGraphStats& s = m->cuda_graph_stats();
    return Rcpp::List::create(Rcpp::Named("enabled") = m->cuda_graphs(),
                              Rcpp::Named("replays") = static_cast<double>(s.replays),
                              Rcpp::Named("captures") = static_cast<double>(s.captures),
                              Rcpp::Named("eager_steps") = static_cast<double>(s.eager_steps),
                              Rcpp::Named("capture_failed") = s.failed);
  });
}
