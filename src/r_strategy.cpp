// Glue for strategies (R/strategy.R): the core parses and places devices and
// checks cross_device_ops; R validates argument types and displays the answers.
#include <Rcpp.h>

#include <string>
#include <vector>

#include "build_config.h"
#include "dist/device.h"
#include "r_glue.h"
#if MR_WITH_CUDA
#include "backends/cuda/cuda_conv_engine.h"
#endif

using mr_glue::guarded;

namespace {

// list(name = "cpu:0", display = "/device:CPU:0", kind = "cpu", ordinal = NA)
// with one element per device; ordinal: the CUDA device of a GPU.
Rcpp::List placement(const std::vector<mr::DeviceSpec>& devices) {
  const R_xlen_t n = static_cast<R_xlen_t>(devices.size());
  Rcpp::CharacterVector name(n), display(n), kind(n);
  Rcpp::IntegerVector ordinal(n);
  for (R_xlen_t i = 0; i < n; ++i) {
    const mr::DeviceSpec& d = devices[static_cast<size_t>(i)];
    name[i] = d.name();
    display[i] = d.display_name();
    kind[i] = d.kind == mr::DeviceKind::cpu ? "cpu" : "gpu";
    ordinal[i] = d.kind == mr::DeviceKind::cpu ? NA_INTEGER : d.cuda_ordinal();
  }
  return Rcpp::List::create(Rcpp::Named("name") = name, Rcpp::Named("display") = display,
                            Rcpp::Named("kind") = kind, Rcpp::Named("ordinal") = ordinal);
}

}  // namespace

// The devices named by the user, normalized, checked and placed.
// [[Rcpp::export]]
Rcpp::List cpp_resolve_devices(std::vector<std::string> names, int logical_per_gpu) {
  return guarded([&] { return placement(mr::resolve_devices(names, logical_per_gpu)); });
}

// The devices of a strategy made without a device list.
// [[Rcpp::export]]
Rcpp::List cpp_default_devices(int logical_per_gpu) {
  return guarded([&] { return placement(mr::default_devices(logical_per_gpu)); });
}

// Every device this process can use (list_devices()).
// [[Rcpp::export]]
Rcpp::List cpp_visible_devices(int logical_per_gpu) {
  return guarded([&] { return placement(mr::visible_devices(logical_per_gpu)); });
}

// What runs the convolutions on CUDA device `ordinal` (print(strategy)): the
// core's line ("convolutions: cuDNN 9.19.0", or why cuDNN is unavailable);
// "" in a build without CUDA.
// [[Rcpp::export]]
std::string cpp_cuda_conv_engine(int ordinal) {
#if MR_WITH_CUDA
  return guarded([&] { return mr::cuda_conv_engine(ordinal); });
#else
  (void)ordinal;
  return "";
#endif
}
