// Glue for activation_*() on R arrays: the core's CPU activation op computes
// them eagerly (in float32, as a model would), so the arrays a user tries
// and the layers a model trains share one implementation.
#include <Rcpp.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "nn/layers/keras_config.h"
#include "r_glue.h"

using mr_glue::guarded;

// `x`: rows x cols values in row-major order (R puts the last axis first
// before calling); `name` a Keras activation name; alpha NA means the
// activation's default, max_value NA none.
// [[Rcpp::export]]
Rcpp::NumericVector cpp_activation(std::string name, Rcpp::NumericVector x, double rows,
                                   double cols, double alpha, double max_value, double threshold) {
  return guarded([&] {
    const mr::Activation act = mr::activation_from_name(name);
    const auto n = static_cast<size_t>(x.size());
    MR_CHECK(static_cast<double>(n) == rows * cols, internal, "cpp_activation: ", n, " values for ",
             rows, " x ", cols);
    mr::ActivationParams p;
    if (!std::isnan(alpha)) p.alpha = static_cast<float>(alpha);
    if (!std::isnan(max_value)) p.max_value = static_cast<float>(max_value);
    p.threshold = static_cast<float>(threshold);
    std::vector<float> in(x.begin(), x.end()), out(n);
    if (n > 0) {
      mr::CpuBackend be(0, 1);
      be.activation_forward(act, static_cast<int64_t>(rows), static_cast<int64_t>(cols), in.data(),
                            out.data(), p);
    }
    return Rcpp::NumericVector(out.begin(), out.end());
  });
}
