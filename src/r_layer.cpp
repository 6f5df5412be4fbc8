// Glue for layers: R asks the core's layer registry for everything it shows
// about a layer — the normalized Keras config, output shapes, weights (names,
// shapes, trainable) — instead of keeping its own per-class rules.
#include <Rcpp.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "nn/graph.h"
#include "nn/layers/registry.h"
#include "r_glue.h"

using mr_glue::guarded;

namespace {

std::string layer_name(const mr::Json& cfg) {
  return cfg.is_object() && cfg.contains("name") && cfg["name"].is_string()
             ? cfg["name"].get<std::string>()
             : std::string("layer");
}

std::vector<mr::Shape> to_shapes(const Rcpp::List& shapes) {
  std::vector<mr::Shape> out;
  for (R_xlen_t i = 0; i < shapes.size(); ++i) {
    // NA: a variable-length axis (-1 in the core, nn/graph.h).
    std::vector<int64_t> dims;
    for (double v : Rcpp::as<std::vector<double>>(shapes[i]))
      dims.push_back(std::isnan(v) ? -1 : static_cast<int64_t>(v));
    out.emplace_back(std::move(dims));
  }
  return out;
}

}  // namespace

// The layer of Keras class `class_name` built from `config` (an R list in
// Keras' names) and `seed`: its normalized config and, when input shapes are
// given (a list of per-sample shapes), its output shape and weights.
// [[Rcpp::export]]
Rcpp::List cpp_layer_spec(std::string class_name, SEXP config, double seed, SEXP input_shapes) {
  return guarded([&] {
    const mr::Json cfg = mr_glue::json_from_r(config);
    const auto layer = mr::make_layer(class_name, cfg, static_cast<uint64_t>(seed));
    Rcpp::List out =
        Rcpp::List::create(Rcpp::Named("config") = mr_glue::json_to_r(mr::layer_config(*layer)));
    if (Rf_isNull(input_shapes)) return out;
    const std::vector<mr::Shape> in = to_shapes(Rcpp::List(input_shapes));
    std::vector<mr::WeightSpec> weights;
    const mr::Shape shape = mr::symbolic_output_shape(*layer, in, layer_name(cfg), &weights);
    Rcpp::NumericVector dims(shape.dims().begin(), shape.dims().end());
    for (R_xlen_t i = 0; i < dims.size(); ++i)
      if (dims[i] < 0) dims[i] = NA_REAL;  // follows a variable length
    out["output_shape"] = dims;
    Rcpp::CharacterVector names(weights.size());
    Rcpp::List shapes(weights.size());
    Rcpp::LogicalVector trainable(weights.size());
    Rcpp::NumericVector sizes(weights.size());
    for (size_t k = 0; k < weights.size(); ++k) {
      const auto i = static_cast<R_xlen_t>(k);
      names[i] = weights[k].name;
      shapes[i] =
          Rcpp::NumericVector(weights[k].shape.dims().begin(), weights[k].shape.dims().end());
      trainable[i] = weights[k].trainable;
      sizes[i] = static_cast<double>(weights[k].shape.numel());
    }
    out["weights"] =
        Rcpp::List::create(Rcpp::Named("name") = names, Rcpp::Named("shape") = shapes,
                           Rcpp::Named("trainable") = trainable, Rcpp::Named("size") = sizes);
    return out;
  });
}

// The Keras class names the core's registry knows.
// [[Rcpp::export]]
Rcpp::CharacterVector cpp_layer_classes() {
  return guarded([&] {
    const auto names = mr::layer_class_names();
    return Rcpp::CharacterVector(names.begin(), names.end());
  });
}
